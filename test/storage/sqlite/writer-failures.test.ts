// The SQLite writer and transaction() when SQLite itself fails (issue 18 items 1 and 2): every
// write settles (resolves or rejects) in every path, close() returns in every path, and the
// error a caller sees is the one that happened, not the failed clean-up after it. The failures
// are real ones: SQLITE_FULL from PRAGMA max_page_count (SQLite then rolls the whole transaction
// back on its own), a deferred foreign key that fails at COMMIT, a BEGIN refused because a
// transaction is already open, a write lock held by another connection.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { openSqlite, transaction, type Db } from '../../../src/storage/sqlite/database.ts'
import { createWriter, type Writer } from '../../../src/storage/sqlite/writer.ts'
import { tempDir } from '../../helpers/temp.ts'
import { rows, turns, watch } from './writer-helpers.ts'

/** A file database with a table t(x) and a writer whose fsync is immediate. */
function open (t: TestContext, options: { lockBoundMs?: number } = {}): { db: Db; writer: Writer; path: string } {
  const path = join(tempDir(t, 'petstore-writer-'), 'petstore.db')
  const db = openSqlite(path)
  db.exec('CREATE TABLE parent (id INTEGER PRIMARY KEY)')
  db.exec('CREATE TABLE t (x BLOB, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)')
  const writer = createWriter(db, path, { sync: async () => {}, ...options })
  t.after(() => db.close())
  return { db, writer, path }
}

/** Limits the file to a few pages more than it has: a large row then fails with SQLITE_FULL. */
function nearlyFull (db: Db): void {
  const pages = Number((db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count)
  db.exec(`PRAGMA max_page_count = ${pages + 4}`)
}

const insert = (db: Db, x: Uint8Array | string, parent: number | null = null) => (): number =>
  Number(db.prepare('INSERT INTO t (x, parent) VALUES (?, ?)').run(x, parent).lastInsertRowid)

test('writer: a write whose error ends the transaction (SQLITE_FULL) fails, the write before it fails with the same error, the write after it runs in the next commit, and close() returns', async (t) => {
  // Fault caught: `ROLLBACK TO write` threw "no such savepoint" after SQLite had rolled the
  // transaction back itself; the failing write and the rest of its batch never settled.
  const { db, writer, path } = open(t)
  nearlyFull(db)
  const before = watch(writer.run(insert(db, 'before')))
  const full = watch(writer.run(insert(db, new Uint8Array(200_000))))
  const after = watch(writer.run(insert(db, 'after')))
  const closed = watch(writer.close())
  await turns()
  assert.equal(full.outcome, 'error database or disk is full')
  assert.equal(before.outcome, 'error database or disk is full', 'its work was rolled back with the transaction: never acknowledged')
  assert.equal(after.outcome, 'ok 1', 'it had not run: it runs, alone, in the next transaction')
  assert.equal(closed.outcome, 'ok undefined')
  assert.equal(db.isTransaction, false)
  assert.deepEqual(rows(path), ['after'])
})

test('writer: a commit that fails (a deferred foreign key) rejects every write of the batch, keeps none, and the next write commits', async (t) => {
  // Fault caught: a batch whose COMMIT fails must neither be acknowledged nor leave the
  // connection inside a transaction (a guard: this path was already right before issue 18).
  const { db, writer, path } = open(t)
  const a = watch(writer.run(insert(db, 'a')))
  const orphan = watch(writer.run(insert(db, 'orphan', 42)))
  const c = watch(writer.run(insert(db, 'c')))
  await turns()
  assert.deepEqual([a.outcome, orphan.outcome, c.outcome], Array(3).fill('error FOREIGN KEY constraint failed'))
  assert.equal(db.isTransaction, false)
  assert.equal(await writer.run(insert(db, 'next')), 1)
  await writer.close()
  assert.deepEqual(rows(path), ['next'])
})

test('writer: a BEGIN that fails rejects the writes and close() returns; the connection keeps its settings', async (t) => {
  // Fault caught: flush returned early after a failed BEGIN without telling close(), which then
  // waited forever; and busy_timeout stayed at 0.
  const { db, writer, path } = open(t)
  db.exec('BEGIN') // someone else's transaction on this connection: the writer's BEGIN is refused
  const write = watch(writer.run(insert(db, 'refused')))
  const closed = watch(writer.close())
  await turns()
  assert.match(write.outcome ?? 'pending', /^error /)
  assert.equal(closed.outcome, 'ok undefined', 'close() returned')
  assert.equal(db.isTransaction, true, 'the transaction the writer did not open is not its to end')
  db.exec('ROLLBACK')
  assert.equal(db.prepare('PRAGMA busy_timeout').get()?.timeout, 100)
  assert.equal(db.prepare('PRAGMA synchronous').get()?.synchronous, 2)
  assert.deepEqual(rows(path), [])
})

test('writer: a batch refused inside a transaction it did not open, after earlier writes, also leaves busy_timeout at 100', async (t) => {
  // The writer's PRAGMA statements take effect from their second run on (SQLite applies a PRAGMA
  // when it compiles it): only after a first write would a missing restore show. The refusal then
  // comes from PRAGMA synchronous, which SQLite refuses inside a transaction, before the BEGIN.
  const { db, writer } = open(t)
  await writer.run(() => {})
  db.exec('BEGIN')
  const write = watch(writer.run(() => 1))
  await turns()
  assert.match(write.outcome ?? 'pending', /^error /)
  db.exec('ROLLBACK')
  assert.equal(db.prepare('PRAGMA busy_timeout').get()?.timeout, 100)
  await writer.close()
})

test('writer: close() returns when the last queued writes fail with 503 because another connection holds the lock', async (t) => {
  // Fault caught: when every queued write had waited past the bound, flush returned without
  // telling close(), which then waited forever (a stop then waited for its whole grace period).
  const { db, writer, path } = open(t, { lockBoundMs: 30 })
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const write = watch(writer.run(insert(db, 'locked out')))
  const closed = watch(writer.close())
  const deadline = Date.now() + 5000
  while (closed.outcome === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  other.exec('ROLLBACK')
  assert.equal(write.outcome, 'error service_unavailable')
  assert.equal(closed.outcome, 'ok undefined', 'close() returned')
})

test('transaction(): when SQLite ended the transaction itself (SQLITE_FULL), the caller sees that error, not the failed ROLLBACK', (t) => {
  // Fault caught: ROLLBACK ran with no transaction open and its "cannot rollback - no transaction
  // is active" replaced the real error.
  const { db, path } = open(t)
  nearlyFull(db)
  assert.throws(() => transaction(db, insert(db, new Uint8Array(200_000))), /database or disk is full/)
  assert.equal(db.isTransaction, false)
  assert.throws(() => transaction(db, () => { insert(db, 'x')(); throw new Error('the real error') }), /^Error: the real error$/)
  assert.equal(db.isTransaction, false, 'a transaction still open is rolled back')
  assert.equal(transaction(db, insert(db, 'ok')), 1)
  assert.deepEqual(rows(path), ['ok'])
})
