// petstore keys create --expires-in/--expires-at, keys rotate, keys usage: in-process through
// main(), on a SQLite file, as an operator would run them beside a server.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { main } from '../../src/cli/main.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { memoryIo } from '../helpers/io.ts'
import { tempDir } from '../helpers/temp.ts'

async function database (t: TestContext): Promise<{ env: Record<string, string>; path: string }> {
  const path = join(tempDir(t, 'petstore-cli-keys-'), 'p.db')
  return { env: { DATABASE_URL: `sqlite:${path}` }, path }
}

async function run (
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; lines: string[]; errors: string[] }> {
  const io = memoryIo(env)
  const code = await main(['keys', ...args], io)
  return { code, lines: io.lines, errors: io.errors }
}

const HOUR = 3_600_000

test('keys create --expires-in 12h sets expiresAt twelve hours ahead; --expires-at takes an ISO instant; bad or both are refused (exit 2)', async (t) => {
  const { env, path } = await database(t)
  const before = Date.now()
  const inTwelve = await run(env, 'create', '--role', 'customer', '--plan', 'free', '--expires-in', '12h', '--json')
  assert.equal(inTwelve.code, 0)
  const expiresAt = Date.parse(JSON.parse(inTwelve.lines[0]!).expiresAt)
  assert.ok(expiresAt >= before + 12 * HOUR && expiresAt <= Date.now() + 12 * HOUR, `expiresAt ${expiresAt}`)
  const madeIn: { id: number; ms: number }[] = []
  for (const [text, ms] of [['90s', 90_000], ['30d', 30 * 24 * HOUR], ['15m', 15 * 60_000]] as const) {
    const made = await run(env, 'create', '--role', 'customer', '--plan', 'free', '--expires-in', text, '--json')
    const delta = Date.parse(JSON.parse(made.lines[0]!).expiresAt) - Date.parse(JSON.parse(made.lines[0]!).createdAt)
    assert.ok(Math.abs(delta - ms) < 1000, `${text}: ${delta}`)
    madeIn.push({ id: JSON.parse(made.lines[0]!).id, ms })
  }
  const at = await run(env, 'create', '--role', 'staff', '--plan', 'pro', '--expires-at', '2099-01-01T00:00:00Z')
  assert.equal(at.code, 0)
  assert.match(at.lines[0]!, /^key 5 \(staff, pro: 300\/min, 10000\/day, expires 2099-01-01T00:00:00\.000Z\)$/)
  const past = await run(env, 'create', '--role', 'staff', '--plan', 'pro', '--expires-at', '2001-01-01T00:00:00Z')
  assert.equal(past.code, 1)
  assert.match(past.errors[0]!, /^petstore keys: expiresAt must be in the future/)
  for (const bad of ['12', '12y', '0s', '1.5h', 'h']) {
    const refused = await run(env, 'create', '--role', 'staff', '--plan', 'pro', '--expires-in', bad)
    assert.equal(refused.code, 2, bad)
    assert.equal(refused.errors[0], `--expires-in must be a duration such as 90s, 15m, 12h or 30d, got "${bad}"`)
  }
  const both = await run(env, 'create', '--role', 'staff', '--plan', 'pro', '--expires-in', '1h', '--expires-at', '2099-01-01T00:00:00Z')
  assert.equal(both.code, 2)
  assert.deepEqual(both.errors, ['give --expires-in or --expires-at, not both'])
  // The rows, not only the printed objects: the expiry the server enforces is the one stored, and
  // a refused create stores nothing.
  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  assert.equal((await stores.keys.getKey(JSON.parse(inTwelve.lines[0]!).id))!.expiresAt, expiresAt)
  for (const { id, ms } of madeIn) {
    const row = (await stores.keys.getKey(id))!
    assert.ok(Math.abs(row.expiresAt! - row.createdAt - ms) < 1000, `key ${id}: ${row.expiresAt! - row.createdAt} ms`)
  }
  assert.equal((await stores.keys.getKey(5))!.expiresAt, Date.parse('2099-01-01T00:00:00Z'))
  assert.equal(await stores.keys.getKey(6), null)
})

test('keys rotate ID --grace 1h --json prints the new key once with replaces; the old key gets replacedBy and expires in an hour', async (t) => {
  const { env, path } = await database(t)
  const old = JSON.parse((await run(env, 'create', '--role', 'customer', '--plan', 'enterprise', '--per-minute', '5', '--per-day', '50', '--name', 'partner', '--json')).lines[0]!)
  const before = Date.now()
  const rotated = await run(env, 'rotate', String(old.id), '--grace', '1h', '--json')
  assert.equal(rotated.code, 0)
  const created = JSON.parse(rotated.lines[0]!)
  assert.match(created.key, /^psk_/)
  assert.deepEqual({ ...created, key: undefined, id: undefined, prefix: undefined, createdAt: undefined }, {
    key: undefined, id: undefined, prefix: undefined, createdAt: undefined,
    name: 'partner', role: 'customer', plan: 'enterprise', limits: { perMinute: 5, perDay: 50 }, format: 'checksummed',
    revokedAt: null, expiresAt: null, replaces: old.id, replacedBy: null, lastUsedAt: null, scopes: null, ban: null
  })
  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  const oldRecord = (await stores.keys.getKey(old.id))!
  assert.equal(oldRecord.replacedBy, created.id)
  assert.ok(oldRecord.expiresAt! >= before + HOUR && oldRecord.expiresAt! <= Date.now() + HOUR)

  // Without --json: one line about the change, the key, and the reminder.
  const plain = await run(env, 'rotate', String(created.id), '--grace', '0s')
  assert.equal(plain.code, 0)
  assert.match(plain.lines[0]!, new RegExp(`^key ${created.id + 1} replaces key ${created.id}, which stops working at \\d{4}-\\d\\d-\\d\\dT`))
  assert.match(plain.lines[1]!, /^psk_/)
  // The default grace is a day; an already rotated key is refused (exit 1, one line).
  const again = await run(env, 'rotate', String(old.id))
  assert.equal(again.code, 1)
  assert.deepEqual(again.errors, [`petstore keys: key ${old.id} was already rotated: key ${created.id} replaces it; rotate key ${created.id} instead`])
  const tooLong = await run(env, 'rotate', String(created.id + 1), '--grace', '8d')
  assert.equal(tooLong.code, 1)
  assert.deepEqual(tooLong.errors, ['petstore keys: gracePeriodSeconds must be a whole number from 0 to 604800'])
  const noId = await run(env, 'rotate')
  assert.equal(noId.code, 2)
  // The rows after the plain rotation and the three refusals: one successor, made by the plain
  // rotation (its predecessor stops now); the refused ones made and changed nothing.
  const successor = (await stores.keys.getKey(created.id + 1))!
  const rotatedAgain = (await stores.keys.getKey(created.id))!
  assert.deepEqual(
    [successor.replaces, successor.replacedBy, rotatedAgain.replacedBy],
    [created.id, null, created.id + 1]
  )
  assert.ok(rotatedAgain.expiresAt! <= Date.now(), 'grace 0s: the replaced key stops at once')
  assert.deepEqual(await stores.keys.getKey(old.id), oldRecord, 'the refused rotation of the old key left it as it was')
  assert.equal(await stores.keys.getKey(created.id + 2), null, 'no key was made by a refused rotation')
})

test('keys usage ID prints the flushed counts per UTC day (--json: the API\'s object); --days is checked', async (t) => {
  const { env, path } = await database(t)
  const made = JSON.parse((await run(env, 'create', '--role', 'customer', '--plan', 'free', '--json')).lines[0]!)
  const today = new Date().toISOString().slice(0, 10)
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)
  const stores = createSqliteStores(path)
  await stores.keys.recordUsage({
    counts: [
      { keyId: made.id, day: yesterday, allowed: 12, limited: 3, banned: 1 },
      { keyId: made.id, day: today, allowed: 5, limited: 0, banned: 0 }
    ],
    lastUsed: [{ keyId: made.id, at: Date.now() }]
  })
  await stores.close()
  const json = await run(env, 'usage', String(made.id), '--json')
  assert.equal(json.code, 0)
  assert.deepEqual(JSON.parse(json.lines[0]!), {
    keyId: made.id,
    days: [
      { date: yesterday, allowed: 12, limited: 3, banned: 1, mcp: 0, other4xx: 0 },
      { date: today, allowed: 5, limited: 0, banned: 0, mcp: 0, other4xx: 0 }
    ],
    deprecated: []
  })
  const table = await run(env, 'usage', String(made.id), '--days', '1')
  assert.equal(table.code, 0)
  assert.deepEqual(table.lines, [
    'date (UTC)    allowed    limited     banned',
    `${today}          5          0          0`
  ])
  const bad = await run(env, 'usage', String(made.id), '--days', '91')
  assert.equal(bad.code, 1)
  assert.deepEqual(bad.errors, ['petstore keys: days must be a whole number from 1 to 90'])
  const missing = await run(env, 'usage', '999')
  assert.equal(missing.code, 1)
  assert.deepEqual(missing.errors, ['petstore keys: key 999 not found'])
})
