// How a SQLite connection is opened (openSqlite) and how a lock held elsewhere is recognised
// (isBusy), in src/storage/sqlite/database.ts: the settings the durability and locking rules of
// docs/product.md section 9 rest on, read back from real connections.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { isBusy, openSqlite } from '../../../src/storage/sqlite/database.ts'
import { createWriter } from '../../../src/storage/sqlite/writer.ts'
import { tempDir } from '../../helpers/temp.ts'

const pragma = (db: DatabaseSync, name: string): unknown =>
  Object.values(db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown>)[0]

test('openSqlite creates the missing directories of a file path (DATABASE_URL=sqlite:data/sub/p.db on a fresh volume)', (t) => {
  // Fault caught: the directory not made, so the first start on an empty volume fails to open the file.
  const path = join(tempDir(t), 'data', 'sub', 'p.db')
  const db = openSqlite(path)
  t.after(() => db.close())
  assert.ok(existsSync(path))
})

test('openSqlite: a file is in WAL mode with synchronous FULL, foreign keys enforced and a 5 s busy timeout; :memory: stays in memory', (t) => {
  // Faults caught: any of the four settings dropped (a rollback journal, commits not durable
  // across a power loss, orphan rows, an instant SQLITE_BUSY while another instance migrates).
  const db = openSqlite(join(tempDir(t), 'p.db'))
  t.after(() => db.close())
  assert.deepEqual(
    { journal: pragma(db, 'journal_mode'), synchronous: pragma(db, 'synchronous'), foreignKeys: pragma(db, 'foreign_keys'), busyTimeout: pragma(db, 'busy_timeout') },
    { journal: 'wal', synchronous: 2, foreignKeys: 1, busyTimeout: 5000 }
  )
  const memory = openSqlite(':memory:')
  t.after(() => memory.close())
  assert.deepEqual({ journal: pragma(memory, 'journal_mode'), foreignKeys: pragma(memory, 'foreign_keys') }, { journal: 'memory', foreignKeys: 1 })
})

test('isBusy: a real SQLITE_BUSY (another connection holds the write lock) is busy; a constraint error, a plain Error and null are not', (t) => {
  // Faults caught: every SQLite error read as a lock (a duplicate answered 503 and retried), or a
  // real lock not recognised (a 500 instead of 503 with Retry-After), or a throw on a non-object.
  const path = join(tempDir(t), 'p.db')
  const holder = openSqlite(path)
  t.after(() => holder.close())
  holder.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)')
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('PRAGMA busy_timeout = 0')
  holder.exec('BEGIN IMMEDIATE')
  let busy: unknown = null
  try { other.exec('BEGIN IMMEDIATE') } catch (error) { busy = error }
  holder.exec('ROLLBACK')
  assert.equal((busy as { errcode?: number } | null)?.errcode, 5, String(busy))
  assert.equal(isBusy(busy), true)
  // SQLITE_LOCKED and the extended codes of both (low byte 5 or 6) are locks too.
  for (const errcode of [6, 517, 262]) assert.equal(isBusy({ errcode }), true, String(errcode))

  holder.exec('INSERT INTO t (id) VALUES (1)')
  let duplicate: unknown = null
  try { holder.exec('INSERT INTO t (id) VALUES (1)') } catch (error) { duplicate = error }
  assert.equal(typeof (duplicate as { errcode?: unknown }).errcode, 'number')
  assert.equal(isBusy(duplicate), false)
  assert.equal(isBusy(new Error('database is locked')), false)
  assert.equal(isBusy({ errcode: '5' }), false)
  assert.equal(isBusy(null), false)
  assert.equal(isBusy(undefined), false)
})

test('a writer on :memory: with no sync injected commits (there is no WAL file to fsync)', async (t) => {
  // Fault caught: the writer fsyncing a ":memory:-wal" file that does not exist, so every write fails.
  const db = openSqlite(':memory:')
  t.after(() => db.close())
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)')
  const writer = createWriter(db, ':memory:', { checkpointIntervalMs: 0 })
  assert.equal(await writer.run(() => Number(db.prepare('INSERT INTO t (id) VALUES (1)').run().changes)), 1)
  await writer.close()
  assert.deepEqual(db.prepare('SELECT id FROM t').all().map((r) => r.id), [1])
})
