// What each `petstore` command does, not what it prints (issue 18 requirement 2): every command is
// run in-process through main() against the database a real server process serves, and checked by
// its effect on the database (the rows, read through the store or SQL) and on that running server
// (its answers over HTTP), on SQLite and on PostgreSQL (a fresh schema). The printed lines are
// checked too, in addition. Time bounds are polled with a deadline, never slept.
//
// Faults each part catches: a command that prints its success and changes nothing (issue 18: `keys
// revoke` from the CLI revoked nothing); a change that reaches the database but not a running
// server (a cache never invalidated, a ban never lifted in the limiter), or not every instance.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { main } from '../../src/cli/main.ts'
import type { KeyRecord } from '../../src/accounts/keys.store.ts'
import { POSTGRES_MIGRATIONS } from '../../src/storage/postgres/migrations.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { SQLITE_MIGRATIONS } from '../../src/storage/sqlite/migrations.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { memoryIo } from '../helpers/io.ts'
import { withPostgres } from '../helpers/services.ts'
import { TEST_DATABASE_URL } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'
import {
  awaitMinuteRoom,
  call,
  cleanupStack,
  pollUntil,
  requireServices,
  schemaDatabaseUrl,
  startServerProcess,
  type ServerProcess
} from '../scale/helpers.ts'

/** docs/product.md 2.4: a change made from the command line reaches every running instance within 5 s. */
const CLI_REACH_MS = 5000

const TABLES = ['api_keys', 'bans', 'categories', 'idempotency_keys', 'key_usage', 'orders', 'pets']

interface Engine {
  name: 'SQLite' | 'PostgreSQL'
  /** The environment the CLI and the servers run with. */
  env: Record<string, string>
  /** The store on the same database, to read what the commands wrote. */
  stores: Stores
  /** A fresh, empty database of this engine, and how to read its schema version and tables. */
  fresh (): Promise<{ env: Record<string, string>; version (): Promise<number>; tables (): Promise<string[]> }>
}

async function sqliteEngine (t: TestContext): Promise<Engine> {
  const dir = tempDir(t, 'petstore-cli-effects-')
  const path = join(dir, 'petstore.db')
  const env = { DATABASE_URL: `sqlite:${path}` }
  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  let n = 0
  return {
    name: 'SQLite',
    env,
    stores,
    async fresh () {
      const file = join(dir, `fresh-${n++}.db`)
      const read = <T>(fn: (db: DatabaseSync) => T): T => {
        const db = new DatabaseSync(file)
        try { return fn(db) } finally { db.close() }
      }
      return {
        env: { DATABASE_URL: `sqlite:${file}` },
        version: async () => read((db) => Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)),
        tables: async () => read((db) => db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all().map((r) => String(r.name)))
      }
    }
  }
}

async function postgresEngine (t: TestContext): Promise<Engine> {
  const { schema, url } = await schemaDatabaseUrl(t)
  const stores = await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 2 })
  t.after(() => stores.close())
  return {
    name: 'PostgreSQL',
    env: { DATABASE_URL: url() },
    stores,
    async fresh () {
      const other = await schemaDatabaseUrl(t)
      const query = <T>(sql: string): Promise<T[]> => withPostgres(
        TEST_DATABASE_URL,
        async (c) => (await c.query(sql, [other.schema])).rows as T[]
      )
      return {
        env: { DATABASE_URL: other.url() },
        version: async () => {
          const exists = await query<{ n: string }>("SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'schema_migrations'")
          if (exists[0]?.n === '0') return 0
          const [row] = await withPostgres(TEST_DATABASE_URL, async (c) => {
            const sql = `SELECT max(version) AS v FROM ${other.schema}.schema_migrations`
            return (await c.query<{ v: number | null }>(sql)).rows
          })
          return row?.v ?? 0
        },
        tables: async () => (await query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name <> 'schema_migrations' ORDER BY table_name")).map((r) => r.table_name)
      }
    }
  }
}

/** `petstore ARGS` in-process; asserts the exit code and returns what it printed. */
async function petstore (
  env: Record<string, string>,
  args: string[],
  exitCode = 0
): Promise<{ lines: string[]; errors: string[] }> {
  const io = memoryIo(env)
  const code = await main(args, io)
  assert.equal(code, exitCode, `petstore ${args.join(' ')} exited ${code}: ${io.errors.join(' | ')}`)
  return io
}

/** `keys create … --json`: the printed object (id, key, …). */
async function createKey (
  env: Record<string, string>,
  ...args: string[]
): Promise<{ id: number; key: string; expiresAt: string | null }> {
  const { lines } = await petstore(env, ['keys', 'create', ...args, '--json'])
  assert.equal(lines.length, 1)
  return JSON.parse(lines[0]!) as { id: number; key: string; expiresAt: string | null }
}

const BIG = ['--plan', 'enterprise', '--per-minute', '100000', '--per-day', '1000000']

/** One catalogue read with the key; the status and the error code, if any. */
async function read (server: ServerProcess, key: string): Promise<{ status: number; code: string | null }> {
  const answer = await call(server.url, '/v1/pets?limit=1', { key })
  return { status: answer.status, code: typeof answer.body.code === 'string' ? answer.body.code : null }
}

/** Polls the server with the key until `done` holds, within `ms` of `since`; returns when it did. */
async function readUntil (
  server: ServerProcess,
  key: string,
  done: (a: { status: number; code: string | null }) => boolean,
  since: number,
  ms: number,
  what: string
): Promise<number> {
  await pollUntil(
    async () => done(await read(server, key)) ? true : undefined,
    { timeoutMs: Math.max(0, since + ms - Date.now()), intervalMs: 50, message: what }
  )
  return Date.now() - since
}

const record = async (engine: Engine, id: number): Promise<KeyRecord> => {
  const found = await engine.stores.keys.getKey(id)
  assert.ok(found !== null, `key ${id} has a row`)
  return found
}

async function commandEffects (t: TestContext, engine: Engine, servers: ServerProcess[]): Promise<void> {
  const { env } = engine
  const [server] = servers as [ServerProcess]
  const admin = await createKey(env, '--role', 'admin', ...BIG, '--name', 'admin')

  await t.test(`${engine.name}: keys create stores the key (hash only) with its settings, and every running server serves it`, async () => {
    const made = await createKey(env, '--role', 'customer', '--plan', 'enterprise', '--per-minute', '7', '--per-day', '70', '--name', 'till')
    const row = await record(engine, made.id)
    assert.deepEqual({
      role: row.role,
      plan: row.plan,
      perMinute: row.perMinute,
      perDay: row.perDay,
      name: row.name,
      revokedAt: row.revokedAt,
      expiresAt: row.expiresAt
    }, { role: 'customer', plan: 'enterprise', perMinute: 7, perDay: 70, name: 'till', revokedAt: null, expiresAt: null })
    assert.equal(row.prefix, made.key.slice(0, 16))
    for (const s of servers) {
      const answer = await call(s.url, '/v1/pets?limit=1', { key: made.key })
      assert.equal(answer.status, 200)
      assert.equal(answer.headers.get('x-ratelimit-limit'), '7', 'the custom quota applies')
    }
    // Printed without --json: the summary, the key, the reminder.
    const plain = await petstore(env, ['keys', 'create', '--role', 'staff', '--plan', 'pro'])
    assert.match(plain.lines[0]!, /^key \d+ \(staff, pro: 300\/min, 10000\/day\)$/)
    assert.match(plain.lines[1]!, /^psk_/)
  })

  await t.test(`${engine.name}: keys list prints every row of the database`, async () => {
    const { lines } = await petstore(env, ['keys', 'list', '--json'])
    const listed = lines.map((l) => JSON.parse(l) as { id: number; role: string; prefix: string })
    const rows = await engine.stores.keys.listKeys({ afterId: null, limit: 100 })
    assert.deepEqual(listed.map((k) => [k.id, k.role, k.prefix]), rows.map((r) => [r.id, r.role, r.prefix]))
    const plain = await petstore(env, ['keys', 'list'])
    assert.equal(plain.lines.length, rows.length)
    assert.match(plain.lines[0]!, new RegExp(`^\\s+${rows[0]!.id}  ${rows[0]!.prefix}…  admin`))
  })

  await t.test(`${engine.name}: keys revoke marks the row revoked, and every running server refuses the key with 401 within 5 s`, async () => {
    const victim = await createKey(env, '--role', 'customer', ...BIG)
    for (const s of servers) assert.equal((await read(s, victim.key)).status, 200, 'served (and cached) before the revoke')
    const { lines } = await petstore(env, ['keys', 'revoke', String(victim.id)])
    const done = Date.now()
    assert.deepEqual(lines, [`key ${victim.id} revoked`])
    const row = await record(engine, victim.id)
    assert.ok(row.revokedAt !== null && row.revokedAt <= Date.now(), 'the row says revoked')
    for (const s of servers) {
      const ms = await readUntil(s, victim.key, (a) => a.status === 401 && a.code === 'unauthenticated', done, CLI_REACH_MS, `the revoked key was still served by ${s.url}`)
      assert.ok(ms <= CLI_REACH_MS, `refused ${ms} ms after the command`)
    }
  })

  await t.test(`${engine.name}: DELETE /v1/admin/keys/{id} revokes: 401 at once on that server, within 5 s on the others, and the row says revoked`, async () => {
    const victim = await createKey(env, '--role', 'customer', ...BIG)
    for (const s of servers) assert.equal((await read(s, victim.key)).status, 200)
    const answer = await call(server.url, `/v1/admin/keys/${victim.id}`, { method: 'DELETE', key: admin.key })
    const done = Date.now()
    assert.equal(answer.status, 204)
    assert.deepEqual(await read(server, victim.key), { status: 401, code: 'unauthenticated' })
    assert.ok((await record(engine, victim.id)).revokedAt !== null)
    for (const s of servers.slice(1)) {
      await readUntil(s, victim.key, (a) => a.status === 401, done, CLI_REACH_MS, `the key revoked through ${server.url} was still served by ${s.url}`)
    }
  })

  await t.test(`${engine.name}: keys rotate: both keys work and share one quota, and the old one stops at the end of the grace period, not before`, async () => {
    // A quota of 6 a day (and a minute): the quota both keys spend together.
    const old = await createKey(env, '--role', 'customer', '--plan', 'enterprise', '--per-minute', '6', '--per-day', '6')
    assert.equal((await read(server, old.key)).status, 200)
    const { lines } = await petstore(env, ['keys', 'rotate', String(old.id), '--grace', '4s', '--json'])
    const successor = JSON.parse(lines[0]!) as { id: number; key: string; replaces: number }
    assert.equal(successor.replaces, old.id)
    const oldRow = await record(engine, old.id)
    assert.equal(oldRow.replacedBy, successor.id)
    assert.equal((await record(engine, successor.id)).quotaKeyId, oldRow.quotaKeyId)
    const expiresAt = oldRow.expiresAt!
    assert.ok(expiresAt > Date.now() + 2000, 'the grace period has started, not ended')
    // 1 request made before; 5 more, alternating, use up the shared 6; then both are refused.
    const statuses: number[] = []
    for (const key of [successor.key, old.key, successor.key, old.key, successor.key]) {
      statuses.push((await read(server, key)).status)
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200])
    assert.deepEqual(await read(server, successor.key), { status: 429, code: 'rate_limited' })
    assert.deepEqual(await read(server, old.key), { status: 429, code: 'rate_limited' })
    assert.ok(Date.now() < expiresAt, 'all of that happened inside the grace period')
    // At the end of the grace period the old key answers 401 api_key_expired, the new one does not.
    await pollUntil(async () => {
      // Accepted: the server decided after sentAt, so before expiresAt only if sentAt was.
      const sentAt = Date.now()
      const answer = await read(server, old.key)
      if (answer.status !== 401) {
        assert.ok(sentAt < expiresAt, `the old key was still accepted after its grace period (${answer.status})`)
        return undefined
      }
      assert.ok(Date.now() >= expiresAt, 'refused before its grace period ended')
      assert.equal(answer.code, 'api_key_expired')
      return true
    }, { timeoutMs: expiresAt - Date.now() + 2000, intervalMs: 50, message: 'the old key kept working after its grace period' })
    // The new key lives on: still refused for the quota (or the ban that the polling above earned
    // the pair: they share that too), never 401.
    const after = await read(server, successor.key)
    assert.equal(after.status, 429)
    assert.ok(after.code === 'rate_limited' || after.code === 'api_key_banned', String(after.code))
  })

  await t.test(`${engine.name}: keys create --expires-in 3s: the key is served until then and refused with 401 api_key_expired from then on`, async () => {
    const made = await createKey(env, '--role', 'customer', ...BIG, '--expires-in', '3s')
    const expiresAt = (await record(engine, made.id)).expiresAt!
    assert.equal(expiresAt, Date.parse(made.expiresAt!))
    assert.equal((await read(server, made.key)).status, 200)
    await pollUntil(async () => {
      const answer = await read(server, made.key)
      if (answer.status === 200) return undefined
      assert.ok(Date.now() >= expiresAt, `refused before it expired (${answer.status})`)
      assert.deepEqual(answer, { status: 401, code: 'api_key_expired' })
      return true
    }, { timeoutMs: expiresAt - Date.now() + 2000, intervalMs: 50, message: 'the key was still served after it expired' })
  })

  await t.test(`${engine.name}: keys unban lifts the ban in the database, and the running server serves the key again within 5 s`, async () => {
    // The ban needs 20 requests within the first 429's Retry-After (the rest of the minute).
    await awaitMinuteRoom(10)
    const banned = await createKey(env, '--role', 'customer', ...BIG)
    assert.equal((await read(server, banned.key)).status, 200)
    // A real ban, the way a server makes one: 20 requests more after the first 429, inside its
    // Retry-After. Its quota (1 a minute) is then the engine's: set it through the API.
    const patched = await call(server.url, `/v1/admin/keys/${banned.id}`, {
      method: 'PATCH',
      key: admin.key,
      body: { perMinute: 1, perDay: 1000 }
    })
    assert.equal(patched.status, 200, JSON.stringify(patched.body))
    const seen: string[] = []
    for (let i = 0; i < 40 && !seen.includes('api_key_banned'); i++) {
      const answer = await read(server, banned.key)
      seen.push(answer.code ?? String(answer.status))
    }
    assert.ok(seen.includes('api_key_banned'), `no ban after ${seen.join(', ')}`)
    assert.ok((await engine.stores.keys.activeBan(banned.id, Date.now())) !== null, 'the ban is in the database')
    // Lift the quota too, so that "served" means 200 and not 429 rate_limited.
    assert.equal((await call(server.url, `/v1/admin/keys/${banned.id}`, {
      method: 'PATCH',
      key: admin.key,
      body: { perMinute: 100000, perDay: 1000000 }
    })).status, 200)
    assert.deepEqual(await read(server, banned.key), { status: 429, code: 'api_key_banned' })

    const { lines } = await petstore(env, ['keys', 'unban', String(banned.id)])
    const done = Date.now()
    assert.deepEqual(lines, [`key ${banned.id}: ban lifted`])
    assert.equal(await engine.stores.keys.activeBan(banned.id, Date.now()), null, 'no ban in force in the database')
    for (const s of servers) {
      await readUntil(s, banned.key, (a) => a.status === 200, done, CLI_REACH_MS, `the unbanned key was still refused by ${s.url}`)
    }
    assert.deepEqual((await petstore(env, ['keys', 'unban', String(banned.id)])).lines, [`key ${banned.id} was not banned`])
  })

  await t.test(`${engine.name}: keys usage reports what the running server counted`, async () => {
    const made = await createKey(env, '--role', 'customer', ...BIG)
    for (let i = 0; i < 3; i++) assert.equal((await read(server, made.key)).status, 200)
    const today = new Date().toISOString().slice(0, 10)
    // The servers write their counts every 2 seconds.
    const { value } = await pollUntil(async () => {
      const { lines } = await petstore(env, ['keys', 'usage', String(made.id), '--json'])
      const report = JSON.parse(lines[0]!) as { days: Array<{ date: string; allowed: number }> }
      return report.days.some((d) => d.allowed >= 3) ? report : undefined
    }, { timeoutMs: 6000, intervalMs: 200, message: 'the usage was not written' })
    assert.deepEqual(value.days, [{ date: today, allowed: 3, limited: 0, banned: 0, mcp: 0, other4xx: 0 }])
    assert.ok((await record(engine, made.id)).lastUsedAt !== null, 'lastUsedAt is written too')
  })

  await t.test(`${engine.name}: migrate applies every migration to a new database and is idempotent`, async () => {
    const fresh = await engine.fresh()
    assert.equal(await fresh.version(), 0)
    const expected = engine.name === 'SQLite' ? SQLITE_MIGRATIONS.length : POSTGRES_MIGRATIONS.length
    for (let i = 0; i < 2; i++) {
      const { lines } = await petstore(fresh.env, ['migrate'])
      assert.equal(lines.length, 1)
      assert.match(lines[0]!, /: schema is up to date$/)
      assert.equal(await fresh.version(), expected)
    }
    const tables = await fresh.tables()
    for (const table of TABLES) assert.ok(tables.includes(table), `${table} in ${tables.join(', ')}`)
  })
}

test('every CLI command, on SQLite: its effect on the database and on a running server', async (t) => {
  const cleanup = cleanupStack(t)
  const engine = await sqliteEngine(t)
  const server = await startServerProcess(cleanup, { ...engine.env, LOG_LEVEL: 'warn' })
  await commandEffects(t, engine, [server])
})

test('every CLI command, on PostgreSQL with two server instances: its effect on the database and on both servers', async (t) => {
  const cleanup = cleanupStack(t)
  if (!await requireServices(t, ['postgres'])) return
  const engine = await postgresEngine(t)
  const servers = [
    await startServerProcess(cleanup, { ...engine.env, LOG_LEVEL: 'warn' }),
    await startServerProcess(cleanup, { ...engine.env, LOG_LEVEL: 'warn' })
  ]
  await commandEffects(t, engine, servers)
})

test('openapi --out FILE writes the document (docs/openapi.json, byte for byte)', async (t) => {
  const out = join(tempDir(t, 'petstore-cli-openapi-'), 'openapi.json')
  const { lines } = await petstore({}, ['openapi', '--out', out])
  assert.equal(await readFile(out, 'utf8'), await readFile(new URL('../../docs/openapi.json', import.meta.url), 'utf8'))
  assert.deepEqual(lines, [], 'nothing on stdout: the document is in the file')
})
