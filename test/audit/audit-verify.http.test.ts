// `petstore audit verify`, run as a process on the database a running app writes, on both
// engines: 0 on an intact chain; 1 naming the entry after a row is changed, removed or inserted
// with SQL. And `petstore keys …` is recorded as the user who ran it.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { main } from '../../src/cli/main.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { buildTestApp } from '../helpers/app.ts'
import { memoryIo } from '../helpers/io.ts'
import { requireService, skippedTestEnd, withPostgres } from '../helpers/services.ts'
import { TEST_DATABASE_URL, TEST_ENGINE, testPostgresReason } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'
import { schemaDatabaseUrl } from '../scale/helpers.ts'

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

interface Database { env: Record<string, string>; stores: Stores; sql (statement: string): Promise<void> }

/** A database of the test's engine that a process can open too, with the app's stores on it. */
async function openDatabase (t: TestContext): Promise<Database> {
  if (TEST_ENGINE === 'postgres') {
    if (!requireService(t, await testPostgresReason())) throw skippedTestEnd('PostgreSQL')
    const { schema, url } = await schemaDatabaseUrl(t)
    const stores = await createPostgresStores(TEST_DATABASE_URL, { poolMax: 4, schema })
    t.after(() => stores.close())
    return {
      env: { DATABASE_URL: url() },
      stores,
      sql: (statement) => withPostgres(url(), async (c) => { await c.query(statement) })
    }
  }
  const path = join(tempDir(t, 'petstore-audit-'), 'petstore.db')
  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  return {
    env: { DATABASE_URL: `sqlite:${path}` },
    stores,
    async sql (statement) {
      const db = new DatabaseSync(path)
      try { db.exec(statement) } finally { db.close() }
    }
  }
}

/** `petstore audit verify` as its own process: its exit code and what it printed. */
function verify (env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const options = { env: { ...process.env, ...env }, timeout: 60_000 }
    execFile(process.execPath, [CLI, 'audit', 'verify'], options, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? 1), out: stdout + stderr })
    })
  })
}

test('petstore audit verify exits 0 on an intact chain, and 1 naming the entry changed, removed or inserted with SQL', async (t) => {
  const db = await openDatabase(t)
  const h = await buildTestApp(t, { stores: db.stores })
  // The three keys of the test app, then three categories: six entries.
  for (const name of ['A', 'B', 'C']) {
    assert.equal((await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name } })).statusCode, 201)
  }
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/admin/audit/head' })).json().count, 6)
  const intact = await verify(db.env)
  assert.equal(intact.code, 0, intact.out)
  assert.match(intact.out, /audit log intact: 6 entries/)

  await db.sql('CREATE TABLE audit_copy AS SELECT * FROM audit_log')
  const restore = async (): Promise<void> => { await db.sql('DELETE FROM audit_log; INSERT INTO audit_log SELECT * FROM audit_copy') }
  const cases: Array<[string, string, RegExp]> = [
    ['a row changed', "UPDATE audit_log SET target_id = '999' WHERE id = 4", /broken at entry 4 \(changed\)/],
    ['a hash changed', "UPDATE audit_log SET hash = '" + '0'.repeat(64) + "' WHERE id = 2", /broken at entry 2 \(changed\)/],
    ['a middle row deleted', 'DELETE FROM audit_log WHERE id = 3', /broken at entry 3 \(removed\)/],
    ['the last row deleted', 'DELETE FROM audit_log WHERE id = 6', /broken at entry 6 \(removed\)/],
    ['a row inserted', 'INSERT INTO audit_log SELECT 7, at, actor_type, actor_key_id, actor_role, actor_user, action, target_type, target_id, request_id, address, changes, hash, actor_via FROM audit_log WHERE id = 6', /broken at entry 7 \(inserted\)/]
  ]
  for (const [what, statement, named] of cases) {
    await db.sql(statement)
    const broken = await verify(db.env)
    assert.equal(broken.code, 1, `${what}: ${broken.out}`)
    assert.match(broken.out, named, what)
    await restore()
  }
  assert.equal((await verify(db.env)).code, 0, 'restored')
  // The API goes on appending after the restored chain.
  assert.equal((await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'D' } })).statusCode, 201)
  assert.match((await verify(db.env)).out, /audit log intact: 7 entries/)
})

test('petstore keys revoke is recorded as the user who ran it (actor cli), with no request id or address', async (t) => {
  const db = await openDatabase(t)
  const h = await buildTestApp(t, { stores: db.stores })
  const target = await h.makeKey('customer')
  const io = memoryIo(db.env)
  assert.equal(await main(['keys', 'revoke', String(target.id)], io), 0, io.errors.join('\n'))
  const [entry] = (await h.call({ method: 'GET', url: `/v1/admin/audit?targetId=${target.id}&action=key.revoke` })).json()
  assert.deepEqual(entry.actor, { type: 'cli', user: userInfo().username })
  assert.equal(entry.requestId, null)
  assert.equal(entry.address, null)
  const cliEntries = (await h.call({ method: 'GET', url: '/v1/admin/audit?actor=cli' })).json() as unknown[]
  assert.equal(cliEntries.length, 1)
})
