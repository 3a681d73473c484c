// The SQLite writer's paths the other writer tests do not take (src/storage/sqlite/writer.ts and
// the synchronous transaction of database.ts): the real fsync of the WAL file, a batch larger
// than one group commit, close() while writes and fsyncs are pending, a bound of 0 ms on the lock,
// a refused BEGIN in transaction(), and the migrations. Real files and real locks throughout.
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { AppError } from '../../../src/errors.ts'
import { migrateSqlite, openSqlite, transaction, type Db } from '../../../src/storage/sqlite/database.ts'
import { SQLITE_MIGRATIONS } from '../../../src/storage/sqlite/migrations.ts'
import { createWriter } from '../../../src/storage/sqlite/writer.ts'
import { tempDir } from '../../helpers/temp.ts'
import { file, insert, rows, turns, watch } from './writer-helpers.ts'

/** An fsync the test completes by hand. */
function gatedSync (): {
  sync: () => Promise<void>
  calls: () => number
  finish: () => void
  fail: (error: Error) => void
} {
  const waiting: { resolve: () => void; reject: (error: Error) => void }[] = []
  let calls = 0
  return {
    sync: () => new Promise<void>((resolve, reject) => { calls++; waiting.push({ resolve, reject }) }),
    calls: () => calls,
    finish: () => { waiting.shift()?.resolve() },
    fail: (error) => { waiting.shift()?.reject(error) }
  }
}

/** How many of this process's file descriptors name that file. */
const descriptors = (file: string): number => readdirSync('/proc/self/fd').filter((fd) => {
  try { return readlinkSync(`/proc/self/fd/${fd}`) === file } catch { return false }
}).length

test('writer: with no sync injected, a write on a file is fsynced through the real WAL file, acknowledged, and in the file; close() lets go of the WAL file, and a write after it opens it again', async (t) => {
  const { db, path } = file(t)
  const writer = createWriter(db, path, { checkpointIntervalMs: 0 })
  const sqliteOwn = descriptors(`${path}-wal`) // SQLite's own descriptor of the WAL
  assert.equal(await writer.run(insert(db, 'a')), 1)
  assert.equal(await writer.run(insert(db, 'b')), 2)
  assert.equal(descriptors(`${path}-wal`), sqliteOwn + 1, 'one descriptor of its own, kept between fsyncs')
  await writer.close()
  assert.equal(descriptors(`${path}-wal`), sqliteOwn, 'released by close()')
  assert.deepEqual(rows(path), ['a', 'b'])
  assert.ok(existsSync(`${path}-wal`))
  assert.equal(await writer.run(insert(db, 'c')), 3)
  assert.equal(descriptors(`${path}-wal`), sqliteOwn + 1, 'fsynced through a descriptor opened anew')
  await writer.close()
  assert.equal(descriptors(`${path}-wal`), sqliteOwn)
})

test('writer: on a database without a WAL file (rollback journal), a write is rejected, never acknowledged without its fsync', async (t) => {
  const path = join(tempDir(t, 'petstore-writer-'), 'petstore.db')
  const db = new DatabaseSync(path) // journal_mode DELETE: no -wal file ever exists
  t.after(() => db.close())
  db.exec('CREATE TABLE t (x TEXT)')
  const writer = createWriter(db, path, { checkpointIntervalMs: 0 })
  await assert.rejects(writer.run(insert(db, 'a')), { code: 'ENOENT' })
  await writer.close()
})

test('writer: 300 writes of one turn commit as two group commits (256 and 44), each with its fsync, and are all answered', async (t) => {
  const { db, path } = file(t)
  let syncs = 0
  const writer = createWriter(db, path, { sync: async () => { syncs++ }, checkpointIntervalMs: 0 })
  const results = await Promise.all(Array.from({ length: 300 }, (_, i) => writer.run(insert(db, `w${i}`))))
  assert.deepEqual(results, Array.from({ length: 300 }, (_, i) => i + 1))
  assert.equal(syncs, 2)
  await writer.close()
  assert.equal(rows(path).length, 300)
})

test('writer: close() waits for the queued writes and for the fsyncs in flight and the one queued behind them', async (t) => {
  const { db, path } = file(t)
  const gate = gatedSync()
  const writer = createWriter(db, path, { sync: gate.sync, checkpointIntervalMs: 0 })
  const a = writer.run(insert(db, 'a'))
  await turns() // a committed, its fsync in flight
  const b = writer.run(insert(db, 'b')) // commits during a's fsync: waits for the next
  let closed = false
  const closing = writer.close().then(() => { closed = true })
  await turns()
  assert.deepEqual([gate.calls(), closed], [1, false])
  gate.finish()
  await a
  await turns()
  assert.deepEqual([gate.calls(), closed], [2, false])
  gate.finish()
  await b
  await closing
  assert.equal(closed, true)
})

test('writer: a write run with durable false is answered at its commit, before the fsync; a durable write of the same batch waits for it', async (t) => {
  const { db, path } = file(t)
  const gate = gatedSync()
  const writer = createWriter(db, path, { sync: gate.sync, checkpointIntervalMs: 0 })
  const kept = watch(writer.run(insert(db, 'durable')))
  const eager = watch(writer.run(insert(db, 'bookkeeping'), { durable: false }))
  await turns()
  // Fault caught: every write waiting for the fsync (the dispatcher's rounds waited twice per
  // delivery), or an eager write that is not committed when answered.
  assert.deepEqual([eager.outcome, kept.outcome, gate.calls()], ['ok 2', null, 1])
  assert.deepEqual(rows(path), ['durable', 'bookkeeping'])
  gate.finish()
  await turns()
  assert.equal(kept.outcome, 'ok 1')
  // Only eager writes: no fsync is started for them.
  await writer.run(insert(db, 'alone'), { durable: false })
  assert.equal(gate.calls(), 1)
  await writer.close()
})

for (const first of ['succeeds', 'fails'] as const) {
  test(`writer: when the first fsync ${first}, a commit made during the second waits for a third`, async (t) => {
    const { db, path } = file(t)
    const gate = gatedSync()
    const writer = createWriter(db, path, { sync: gate.sync, checkpointIntervalMs: 0 })
    const settled: string[] = []
    const track = (name: string, p: Promise<number>): Promise<void> => p.then(
      () => { settled.push(`${name}:ok`) },
      (e: unknown) => { settled.push(`${name}:${(e as Error).message}`) }
    )
    const a = track('a', writer.run(insert(db, 'a')))
    await turns() // a committed, the first fsync in flight
    const b = track('b', writer.run(insert(db, 'b')))
    await turns() // b committed during it: it waits for the second
    if (first === 'succeeds') gate.finish(); else gate.fail(new Error('EIO'))
    await a
    await turns() // the second fsync, for b, in flight
    const c = track('c', writer.run(insert(db, 'c')))
    await turns() // c committed during it
    gate.finish()
    await b
    await turns()
    assert.deepEqual(settled, [first === 'succeeds' ? 'a:ok' : 'a:EIO', 'b:ok'], 'c waits: the second fsync began before its commit')
    assert.equal(gate.calls(), 3, 'the third fsync, for c')
    gate.finish()
    await c
    assert.deepEqual(settled.at(-1), 'c:ok')
    await writer.close()
  })
}

test('writer: close() returns even when the fsyncs it waits for fail', async (t) => {
  const { db, path } = file(t)
  const gate = gatedSync()
  const writer = createWriter(db, path, { sync: gate.sync, checkpointIntervalMs: 0 })
  const a = writer.run(insert(db, 'a')).catch((error: unknown) => (error as Error).message)
  await turns()
  const b = writer.run(insert(db, 'b')).catch((error: unknown) => (error as Error).message)
  await turns()
  const closing = writer.close()
  gate.fail(new Error('EIO: a'))
  await turns()
  gate.fail(new Error('EIO: b'))
  await closing
  assert.deepEqual([await a, await b], ['EIO: a', 'EIO: b'])
})

test('writer: a write that arrives after close() still commits (close waits, it does not refuse)', async (t) => {
  const { db, path } = file(t)
  const writer = createWriter(db, path, { sync: async () => {}, checkpointIntervalMs: 0 })
  await writer.close()
  assert.equal(await writer.run(insert(db, 'late')), 1)
  await writer.close()
  assert.deepEqual(rows(path), ['late'])
})

test('writer: with a lock bound of 0 ms, a write that finds the lock held fails with 503 at its first attempt, and the writer leaves the connection as it found it', async (t) => {
  const { db, path } = file(t)
  const writer = createWriter(db, path, { sync: async () => {}, lockBoundMs: 0, checkpointIntervalMs: 0 })
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  let outcome: unknown = null
  writer.run(insert(db, 'x')).then(() => { outcome = 'ok' }, (error: unknown) => { outcome = error })
  await turns(3) // no timer runs: only the first attempt
  other.exec('ROLLBACK')
  assert.ok(outcome instanceof AppError, String(outcome))
  assert.deepEqual([outcome.status, outcome.code, outcome.headers], [503, 'service_unavailable', { 'retry-after': '1' }])
  assert.equal(db.isTransaction, false)
  assert.equal(db.prepare('PRAGMA busy_timeout').get()?.timeout, 100)
  assert.equal(db.prepare('PRAGMA synchronous').get()?.synchronous, 2)
  await writer.close()
  assert.deepEqual(rows(path), [])
})

test('writer: of the writes queued behind a lock, those older than the bound fail with 503 while the newer ones wait and then commit', async (t) => {
  const { db, path } = file(t)
  const writer = createWriter(db, path, { sync: async () => {}, lockBoundMs: 1000, checkpointIntervalMs: 0 })
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const outcomes: string[] = []
  const track = (name: string, p: Promise<number>): Promise<void> => p.then(
    () => { outcomes.push(`${name}:ok`) },
    (e: unknown) => { outcomes.push(`${name}:${(e as AppError).code}`) }
  )
  const old = track('old', writer.run(insert(db, 'old')))
  const started = Date.now()
  while (Date.now() - started < 300) await new Promise((resolve) => setTimeout(resolve, 10))
  const young = track('young', writer.run(insert(db, 'young')))
  await old
  assert.deepEqual(outcomes, ['old:service_unavailable'])
  other.exec('ROLLBACK')
  await young
  assert.deepEqual(outcomes, ['old:service_unavailable', 'young:ok'])
  await writer.close()
  assert.deepEqual(rows(path), ['young'])
})

test('writer: a write whose function throws fails alone and leaves no trace; the writes around it commit', async (t) => {
  const { db, path } = file(t)
  const writer = createWriter(db, path, { sync: async () => {}, checkpointIntervalMs: 0 })
  const a = writer.run(insert(db, 'a'))
  const bad = writer.run(() => { insert(db, 'half')(); throw new Error('refused') })
  const c = writer.run(insert(db, 'c'))
  assert.equal(await a, 1)
  await assert.rejects(bad, /^Error: refused$/)
  assert.equal(await c, 2)
  await writer.close()
  assert.deepEqual(rows(path), ['a', 'c'])
})

test('transaction(): a BEGIN refused because another connection holds the lock is a 503 with Retry-After; another BEGIN failure is passed on as it is', (t) => {
  const { db, path } = file(t)
  db.exec('PRAGMA busy_timeout = 0')
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  let error: unknown = null
  try { transaction(db, insert(db, 'x')) } catch (e) { error = e }
  other.exec('ROLLBACK')
  assert.ok(error instanceof AppError, String(error))
  assert.deepEqual([error.status, error.code, error.headers, error.message], [503, 'service_unavailable', { 'retry-after': '1' }, 'the database is locked by another process; retry shortly'])
  assert.equal((error.cause as { errcode?: number }).errcode, 5)

  db.exec('BEGIN')
  assert.throws(() => transaction(db, insert(db, 'y')), (e: unknown) => !(e instanceof AppError) && /within a transaction/.test(String(e)))
  db.exec('ROLLBACK')
  assert.deepEqual(rows(path), [])
})

test('migrateSqlite: a new database is migrated to the last version, a second run does nothing, and a newer schema is refused untouched', (t) => {
  const { db } = file(t)
  const last = SQLITE_MIGRATIONS.length
  assert.deepEqual(migrateSqlite(db), { from: 0, to: last })
  assert.equal(db.prepare('PRAGMA user_version').get()?.user_version, last)
  assert.deepEqual(migrateSqlite(db), { from: last, to: last })
  db.exec(`PRAGMA user_version = ${last + 1}`)
  assert.throws(() => migrateSqlite(db), /newer than this program knows/)
  assert.equal(db.prepare('PRAGMA user_version').get()?.user_version, last + 1)
})

test('migrateSqlite: a database part-way is taken from its version on, one migration at a time', (t) => {
  const { db } = file(t)
  const last = SQLITE_MIGRATIONS.length
  const partial = openSqlite(':memory:')
  t.after(() => partial.close())
  partial.exec(SQLITE_MIGRATIONS[0]!)
  partial.exec('PRAGMA user_version = 1')
  assert.deepEqual(migrateSqlite(partial), { from: 1, to: last })
  // Same schema as a database migrated from scratch.
  migrateSqlite(db)
  const schema = (d: Db): unknown[] => d.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all()
  assert.deepEqual(schema(partial), schema(db).filter((row) => (row as { name: string }).name !== 't'))
})

/** SQLite's temporary files this process has open (named etilqs_…, unlinked once opened). */
const temporaryFiles = (): string[] => readdirSync('/proc/self/fd').flatMap((fd) => {
  try { return [readlinkSync(`/proc/self/fd/${fd}`)].filter((target) => target.includes('etilqs_')) } catch { return [] }
})

test('writer: a group commit whose savepoints journal far more than 64 KiB opens no temporary file (the sub-journal stays in memory: temp_store)', async (t) => {
  const { db, path } = file(t)
  db.exec('CREATE INDEX t_by_x ON t (x)')
  const writer = createWriter(db, path, { sync: async () => {}, checkpointIntervalMs: 0 })
  const random = (): string => Math.random().toString(36).repeat(8)
  // An index of some hundred pages, so that each later write dirties pages the batch already has.
  await writer.run(() => { for (let i = 0; i < 5000; i++) insert(db, random())() })
  const seen: string[][] = []
  // One turn: 40 writes in one transaction, each in its savepoint, each dirtying some 40 pages.
  await Promise.all(Array.from({ length: 40 }, () => writer.run(() => {
    for (let i = 0; i < 40; i++) insert(db, random())()
    seen.push(temporaryFiles())
  })))
  // Fault caught: the default temp_store, where the sub-journal spilled to a file and every page
  // a savepoint journaled was a pwrite (about 20 per order, docs/performance.md "Orders").
  assert.deepEqual(seen.flat(), [])
  assert.equal(rows(path).length, 5000 + 40 * 40)
  await writer.close()
})
