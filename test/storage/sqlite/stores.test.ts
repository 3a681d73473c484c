// The store contract on SQLite, on a file (WAL applies to files only), plus what is SQLite's own:
// the journal mode and PRAGMA user_version migrations.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { migrateSqlite } from '../../../src/storage/sqlite/database.ts'
import { SQLITE_MIGRATIONS } from '../../../src/storage/sqlite/migrations.ts'
import { CLAIM_SQL, PENDING_SQL } from '../../../src/storage/sqlite/webhooks.ts'
import { createSqliteStores } from '../../../src/storage/sqlite/index.ts'
import { runStoreContract } from '../contract.ts'
import { tempDir } from '../../helpers/temp.ts'

function tempFile (t: TestContext): string {
  const dir = tempDir(t, 'petstore-sqlite-')
  return join(dir, 'petstore.db')
}

runStoreContract('sqlite', async (t) => {
  const stores = createSqliteStores(tempFile(t))
  t.after(() => stores.close())
  return stores
})

test('sqlite: a file database runs in WAL mode', async (t) => {
  const path = tempFile(t)
  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  const db = new DatabaseSync(path)
  t.after(() => db.close())
  assert.equal((db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode, 'wal')
})

test('sqlite: migrations are versioned by user_version and re-opening applies none twice, keeping the data', async (t) => {
  const path = tempFile(t)
  const first = createSqliteStores(path)
  const dogs = await first.categories.createCategory({ name: 'Dogs' }, Date.now())
  await first.close()
  const version = () => {
    const db = new DatabaseSync(path)
    try { return (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version } finally { db.close() }
  }
  assert.equal(version(), SQLITE_MIGRATIONS.length)
  const again = createSqliteStores(path)
  t.after(() => again.close())
  assert.equal(version(), SQLITE_MIGRATIONS.length)
  assert.deepEqual(await again.categories.getCategory(dogs.id), dogs)
})

test('sqlite: a database newer than the program is refused', async (t) => {
  const path = tempFile(t)
  const db = new DatabaseSync(path)
  db.exec(`PRAGMA user_version = ${SQLITE_MIGRATIONS.length + 1}`)
  db.close()
  assert.throws(() => createSqliteStores(path), /newer than this program knows/)
})

// The claim's cost, checked without a clock: each endpoint's claim and its pending list read an
// index in the order they return, so they stop at their LIMIT whatever the backlog. A claim that
// ranks every pending delivery, or a list that sorts them (USE TEMP B-TREE), fails here.
test('sqlite: an endpoint\'s claim and its pending list read webhook_deliveries_claim in order, never sorting the backlog', () => {
  const db = new DatabaseSync(':memory:')
  migrateSqlite(db)
  const plan = (sql: string): string => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((row) => row.detail).join('\n')
  const claim = plan(CLAIM_SQL)
  assert.match(claim, /SEARCH webhook_deliveries USING INDEX webhook_deliveries_claim \(webhook_id=\? AND next_attempt_at<\?\)/, claim)
  assert.doesNotMatch(claim, /TEMP B-TREE|SCAN webhook_deliveries/, claim)
  const pending = plan(PENDING_SQL)
  assert.match(pending, /SEARCH d USING INDEX webhook_deliveries_claim \(webhook_id=\?\)/, pending)
  assert.doesNotMatch(pending, /TEMP B-TREE|SCAN d/, pending)
  const indexes = (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'webhook_deliveries' AND sql IS NOT NULL ORDER BY name").all() as Array<{ name: string }>).map((row) => row.name)
  assert.deepEqual(indexes, ['webhook_deliveries_by_event', 'webhook_deliveries_claim', 'webhook_deliveries_once'], 'webhook_deliveries_due is gone: nothing reads it')
  db.close()
})
