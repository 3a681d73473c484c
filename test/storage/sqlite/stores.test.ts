// The store contract on SQLite, on a file (WAL applies to files only), plus what is SQLite's own:
// the journal mode and PRAGMA user_version migrations.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { SQLITE_MIGRATIONS } from '../../../src/storage/sqlite/migrations.ts'
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
