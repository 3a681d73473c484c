// The petstore command, run as a real process on Node 24 and in-process through main().
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { main } from '../../src/cli/main.ts'
import type { KeyRecord } from '../../src/accounts/keys.store.ts'
import { SQLITE_MIGRATIONS } from '../../src/storage/sqlite/migrations.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { memoryIo } from '../helpers/io.ts'
import { cleanupStack, pollUntil, startServerProcess } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'

const run = promisify(execFile)
const CLI = new URL('../../src/cli/main.ts', import.meta.url).pathname

/**
 * What the database file holds for key `id`, and whether it is banned now: read as the server
 * reads it, not through the command's output.
 */
async function keyRow (path: string, id: number): Promise<{ record: KeyRecord | null; banned: boolean }> {
  const stores = createSqliteStores(path)
  try {
    return { record: await stores.keys.getKey(id), banned: (await stores.keys.activeBan(id, Date.now())) !== null }
  } finally {
    await stores.close()
  }
}

test('keys create --json prints one object with id and key, and the key is stored only as a hash', async (t) => {
  const dir = tempDir(t, 'petstore-cli-')
  const env = { DATABASE_URL: `sqlite:${join(dir, 'p.db')}` }
  const io = memoryIo(env)
  assert.equal(await main(['keys', 'create', '--role', 'staff', '--plan', 'pro', '--name', 'till', '--json'], io), 0)
  const created = JSON.parse(io.lines[0]!)
  assert.equal(created.id, 1)
  assert.match(created.key, /^psk_/)
  assert.equal(created.role, 'staff')
  assert.deepEqual(created.limits, { perMinute: 300, perDay: 10000 })
  // Nowhere in the database files (main file, WAL).
  for (const file of await readdir(dir)) {
    const bytes = await readFile(join(dir, file))
    assert.ok(!bytes.includes(Buffer.from(created.key)), `${file} holds the key`)
  }
  const list = memoryIo(env)
  assert.equal(await main(['keys', 'list', '--json'], list), 0)
  assert.equal(JSON.parse(list.lines[0]!).prefix, created.key.slice(0, 16))
  assert.ok(!list.lines.join('\n').includes(created.key))
  const revoke = memoryIo(env)
  assert.equal(await main(['keys', 'revoke', '1'], revoke), 0)
  assert.deepEqual(revoke.lines, ['key 1 revoked'])
  // The effect, not the message: the row says revoked (issue 18: the CLI printed this and changed nothing).
  const after = memoryIo(env)
  assert.equal(await main(['keys', 'list', '--json'], after), 0)
  assert.equal(typeof JSON.parse(after.lines[0]!).revokedAt, 'string')
  const revoked = await keyRow(join(dir, 'p.db'), 1)
  assert.ok(revoked.record !== null && revoked.record.revokedAt !== null, 'the row is not revoked')
  const unban = memoryIo(env)
  assert.equal(await main(['keys', 'unban', '1'], unban), 0)
  assert.deepEqual(unban.lines, ['key 1 was not banned'])
  // Unbanning a key without a ban changes nothing: still revoked, still not banned.
  assert.deepEqual(await keyRow(join(dir, 'p.db'), 1), revoked)
})

test('keys create refuses custom quotas off enterprise and requires them on it', async (t) => {
  const dir = tempDir(t, 'petstore-cli-')
  const env = { DATABASE_URL: `sqlite:${join(dir, 'p.db')}` }
  const refused = memoryIo(env)
  assert.equal(await main(['keys', 'create', '--role', 'customer', '--plan', 'free', '--per-minute', '5', '--per-day', '50'], refused), 2)
  assert.deepEqual(refused.errors, ['--per-minute is not accepted with --plan free'])
  // Fault caught: a refused create that stored the key anyway.
  assert.equal((await keyRow(join(dir, 'p.db'), 1)).record, null)
  const ok = memoryIo(env)
  assert.equal(await main(['keys', 'create', '--role', 'customer', '--plan', 'enterprise', '--per-minute', '5', '--per-day', '50', '--json'], ok), 0)
  assert.deepEqual(JSON.parse(ok.lines[0]!).limits, { perMinute: 5, perDay: 50 })
  const stored = (await keyRow(join(dir, 'p.db'), JSON.parse(ok.lines[0]!).id)).record
  assert.deepEqual([stored?.plan, stored?.perMinute, stored?.perDay], ['enterprise', 5, 50])
  const bad = memoryIo(env)
  assert.equal(await main(['keys', 'create', '--role', 'owner', '--plan', 'free'], bad), 2)
  assert.equal(await main(['keys', 'create', '--bogus'], memoryIo(env)), 2)
  assert.equal((await keyRow(join(dir, 'p.db'), stored!.id + 1)).record, null)
})

test('bad configuration stops the process with one clear line and a non-zero exit, before the database is opened', async (t) => {
  const result = await run(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, PORT: 'eighty', DATABASE_URL: 'mysql://root:hunter2@x/y' }
  }).catch((e: { code: number; stdout: string; stderr: string }) => e)
  assert.equal((result as { code: number }).code, 2)
  const stderr = (result as { stderr: string }).stderr.split('\n').filter((l) => l !== '' && !l.includes('npm warn'))
  assert.equal(stderr.length, 1, stderr.join('\n'))
  assert.match(stderr[0]!, /^petstore serve: invalid configuration: PORT must be/)
  assert.doesNotMatch(stderr[0]!, /hunter2|\bat /)
  // The effect: with a valid database path and a bad port, no database file is made (a serve that
  // opened or migrated it before checking the rest would leave one).
  const dir = tempDir(t, 'petstore-cli-')
  const bad = await run(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, PORT: '70000', DATABASE_URL: `sqlite:${join(dir, 'p.db')}` }
  }).catch((e: { code: number }) => e)
  assert.equal((bad as { code: number }).code, 2)
  assert.deepEqual(await readdir(dir), [])
})

test('serve --sample-data loads the catalogue and prints three keys once; SIGTERM stops it with exit 0', async (t) => {
  const cleanup = cleanupStack(t)
  const dir = tempDir(t, 'petstore-cli-')
  const env = { DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, LOG_LEVEL: 'silent' }
  const first = await startServerProcess(cleanup, env, ['--sample-data'])
  // The keys go to stderr, never to stdout, the log stream (issue 19 item 7).
  const { value: errText } = await pollUntil(
    async () => /^\s+admin\s+psk_\S+$/m.test(first.errors()) ? first.errors() : undefined,
    { timeoutMs: 20_000, intervalMs: 50, message: 'no keys on stderr' }
  )
  assert.doesNotMatch(first.output(), /psk_/)
  const keys = [...errText.matchAll(/^\s+(customer|staff|admin)\s+(psk_\S+)$/gm)].map((m) => [m[1], m[2]])
  assert.deepEqual(keys.map((k) => k[0]), ['customer', 'staff', 'admin'])
  const res = await fetch(`${first.url}/v1/pets?limit=100`, { headers: { 'x-api-key': keys[0]![1]! } })
  assert.equal(res.status, 200)
  assert.ok(((await res.json()) as unknown[]).length >= 10)
  assert.equal(await first.stop(), 0)

  // The rows: the three printed keys are the three stored (as hashes, so by prefix).
  const stored = async () => {
    const stores = createSqliteStores(join(dir, 'p.db'))
    try {
      return {
        keys: await stores.keys.listKeys({ afterId: null, limit: 100 }),
        pets: (await stores.pets.listPets({}, { afterId: null, limit: 1000 })).length
      }
    } finally {
      await stores.close()
    }
  }
  const first1 = await stored()
  assert.deepEqual(first1.keys.map((k) => [k.role, k.prefix]), keys.map(([role, key]) => [role, key!.slice(0, 16)]))

  // Not a new database any more: no keys printed, and none made; the catalogue is not loaded twice.
  const second = await startServerProcess(cleanup, env, ['--sample-data'])
  assert.equal(await second.stop(), 0)
  assert.doesNotMatch(second.output() + second.errors(), /psk_/)
  assert.deepEqual(await stored(), first1)
})

test('migrate applies the schema and is idempotent', async (t) => {
  const dir = tempDir(t, 'petstore-cli-')
  const env = { DATABASE_URL: `sqlite:${join(dir, 'p.db')}` }
  // The schema as the file holds it: its version and every table's definition.
  const schema = () => {
    const db = new DatabaseSync(join(dir, 'p.db'))
    try {
      return {
        version: Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version),
        tables: db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").all()
      }
    } finally {
      db.close()
    }
  }
  const seen = []
  for (let i = 0; i < 2; i++) {
    const io = memoryIo(env)
    assert.equal(await main(['migrate'], io), 0)
    assert.match(io.lines[0]!, /schema is up to date/)
    seen.push(schema())
  }
  // Faults caught: a migrate that prints success and applies nothing, or one that changes the schema again on a rerun.
  assert.equal(seen[0]!.version, SQLITE_MIGRATIONS.length)
  assert.ok(seen[0]!.tables.some((t) => t.name === 'api_keys'), JSON.stringify(seen[0]!.tables.map((t) => t.name)))
  assert.deepEqual(seen[1], seen[0])
})

test('openapi prints the whole document to a pipe (the committed docs/openapi.json, byte for byte)', async () => {
  const { stdout } = await run(process.execPath, [CLI, 'openapi'], { maxBuffer: 16 * 1024 * 1024 })
  assert.equal(stdout, await readFile(new URL('../../docs/openapi.json', import.meta.url), 'utf8'))
})
