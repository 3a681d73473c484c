// The SQLite writer (src/storage/sqlite/writer.ts) at its edges, found by mutation testing
// (issue 22): the connection settings a write runs with and those it leaves behind, the retry
// schedule behind a lock held elsewhere and the lock bound at its last millisecond (on a mocked
// clock and mocked timers: the attempts are counted in milliseconds, without sleeping), an undo
// that fails, and an fsync the system refuses. Real files, real locks, a real fsync.
import assert from 'node:assert/strict'
import { symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { openSqlite, type Db } from '../../../src/storage/sqlite/database.ts'
import { createWriter } from '../../../src/storage/sqlite/writer.ts'
import { tempDir } from '../../helpers/temp.ts'
import { file, insert, rows, turns, watch } from './writer-helpers.ts'

const pragma = (db: Db, name: string): unknown => Object.values(db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown>)[0]

test('writer: a write, the first one included, runs without the busy handler and with synchronous NORMAL (the writer fsyncs itself); after a commit and after a failed write the connection has busy_timeout 100 and synchronous FULL again', async (t) => {
  const { db, path } = file(t)
  const writer = createWriter(db, path, { sync: async () => {}, checkpointIntervalMs: 0 })
  const settings = (): unknown => ({
    busyTimeout: pragma(db, 'busy_timeout'),
    synchronous: pragma(db, 'synchronous'),
    inTransaction: db.isTransaction
  })
  // The writer's first write too: SQLite applies such a PRAGMA while compiling it, so a prepared
  // PRAGMA statement did nothing on its first run and the first write ran with busy_timeout 100
  // and synchronous FULL (found by mutation testing, issue 22; the writer now uses exec()).
  assert.deepEqual(settings(), { busyTimeout: 100, synchronous: 2, inTransaction: false }, 'from the start (openSqlite set 5000)')
  assert.deepEqual(await writer.run(settings), { busyTimeout: 0, synchronous: 1, inTransaction: true }, 'the first write')
  assert.deepEqual(settings(), { busyTimeout: 100, synchronous: 2, inTransaction: false }, 'after the first commit')
  assert.deepEqual(await writer.run(settings), { busyTimeout: 0, synchronous: 1, inTransaction: true }, 'the second write')
  assert.deepEqual(settings(), { busyTimeout: 100, synchronous: 2, inTransaction: false }, 'after a commit')
  await assert.rejects(writer.run(() => { throw new Error('refused') }), /^Error: refused$/)
  assert.deepEqual(settings(), { busyTimeout: 100, synchronous: 2, inTransaction: false }, 'after a failed write')
  await writer.close()
})

test('writer: after a BEGIN refused for the lock the connection has busy_timeout 100 and synchronous FULL again', async (t) => {
  const { db, path } = file(t)
  const writer = createWriter(db, path, { sync: async () => {}, lockBoundMs: 0, checkpointIntervalMs: 0 })
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  await assert.rejects(writer.run(insert(db, 'x')), { code: 'service_unavailable' })
  other.exec('ROLLBACK')
  assert.deepEqual([pragma(db, 'busy_timeout'), pragma(db, 'synchronous'), db.isTransaction], [100, 2, false])
  await writer.close()
})

test('writer: a write that breaks its own savepoint (the undo fails) fails the whole batch with its error, keeps none of it, and the writes after it commit next', async (t) => {
  const { db, path } = file(t)
  let syncs = 0
  const writer = createWriter(db, path, { sync: async () => { syncs++ }, checkpointIntervalMs: 0 })
  const before = watch(writer.run(insert(db, 'before')))
  const bad = watch(writer.run(() => { insert(db, 'half')(); db.exec('RELEASE write'); throw new Error('refused') }))
  const after = watch(writer.run(insert(db, 'after')))
  await turns()
  assert.deepEqual([before.outcome, bad.outcome, after.outcome], ['error refused', 'error refused', 'ok 1'])
  assert.equal(syncs, 1, 'one fsync, for the commit of the write after it: none for the batch that kept nothing')
  assert.equal(db.isTransaction, false)
  await writer.close()
  assert.deepEqual(rows(path), ['after'], "neither 'before' nor the half write of the failed one is kept")
})

test('writer: an fsync the system refuses (EINVAL: the WAL path names a device) rejects the write with that error, never acknowledged', async (t) => {
  const dir = tempDir(t, 'petstore-writer-')
  const path = join(dir, 'petstore.db')
  symlinkSync('/dev/null', `${path}-wal`) // fsync(2) of /dev/null fails with EINVAL on Linux
  const db = openSqlite(':memory:') // the rows go to memory; the fsync goes to `${path}-wal`
  t.after(() => db.close())
  db.exec('CREATE TABLE t (x TEXT)')
  const writer = createWriter(db, path, { checkpointIntervalMs: 0 })
  await assert.rejects(writer.run(insert(db, 'a')), { code: 'EINVAL' })
  await writer.close()
})

test('writer: behind a lock held elsewhere the attempts come 2, 4, 8, 16, 32 ms apart, then every 50 ms, in one chain however many writes arrive; a commit starts the backoff over at 2 ms', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 })
  const { db, path } = file(t)
  const writer = createWriter(db, path, { sync: async () => {}, lockBoundMs: 10_000, checkpointIntervalMs: 0 })
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  /** Moves the mocked clock to `ms`, one millisecond at a time, letting the writer run at each. */
  const until = async (ms: number): Promise<void> => {
    while (Date.now() < ms) { t.mock.timers.tick(1); await turns(3) }
  }
  /** The millisecond at which a write settles, the lock being released at `releaseAt`. */
  const settledAt = async (write: { outcome: string | null }, releaseAt: number): Promise<number> => {
    await until(releaseAt)
    other.exec('ROLLBACK')
    while (write.outcome === null) await until(Date.now() + 1)
    return Date.now()
  }

  other.exec('BEGIN IMMEDIATE')
  const a = watch(writer.run(insert(db, 'a'))) // tried at 0, then at 2, 6, 14, 30, 62, 112, 162
  await turns(3)
  await until(1)
  const b = watch(writer.run(insert(db, 'b'))) // joins a's retries: no attempt of its own at 1 and 5
  assert.equal(await settledAt(a, 150), 162)
  assert.deepEqual([a.outcome, b.outcome], ['ok 1', 'ok 2'])

  other.exec('BEGIN IMMEDIATE')
  await until(200)
  const c = watch(writer.run(insert(db, 'c'))) // tried at 200, then at 202 (not 250)
  await turns(3)
  assert.equal(await settledAt(c, 201), 202)
  assert.equal(c.outcome, 'ok 3')

  await writer.close()
})

test('writer: a write behind a lock fails with 503 at the first attempt at or past its bound (6 ms: the attempt at 6), and is never run after', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 })
  const { db, path } = file(t)
  const writer = createWriter(db, path, { sync: async () => {}, lockBoundMs: 6, checkpointIntervalMs: 0 })
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const write = watch(writer.run(insert(db, 'late'))) // tried at 0, 2 and 6
  const closed = watch(writer.close())
  await turns(3)
  for (let ms = 1; ms <= 5; ms++) {
    t.mock.timers.tick(1)
    await turns(3)
    assert.deepEqual([write.outcome, closed.outcome], [null, null], `still waiting at ${ms} ms, and close() with it`)
  }
  t.mock.timers.tick(1)
  await turns(3)
  assert.deepEqual([write.outcome, closed.outcome], ['error service_unavailable', 'ok undefined'], 'refused at 6 ms; close() returns then')
  other.exec('ROLLBACK')
  // No retry is left behind: a new write goes at the next turn, with no timer run.
  const next = watch(writer.run(insert(db, 'next')))
  await turns(3)
  assert.equal(next.outcome, 'ok 1')
  t.mock.timers.tick(100)
  await turns(3)
  await writer.close()
  assert.deepEqual(rows(path), ['next'], 'the refused write never commits later')
})

test('writer: while a checkpoint holds the writer (the WAL past its limit) it keeps its batches, without blocking, and commits them when the checkpoint resumes it', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] })
  const { db, path } = file(t)
  // The writer's fsync, gated: the checkpoint waits for one before it copies.
  const gate: { release: (() => void) | null } = { release: null }
  const writer = createWriter(db, path, {
    sync: () => new Promise<void>((resolve) => { gate.release = resolve }),
    checkpointIntervalMs: 5
  })
  db.prepare('INSERT INTO t (x) VALUES (?)').run('x'.repeat(6 * 1024 * 1024)) // the WAL past its limit
  t.mock.timers.tick(5) // the checkpoint tick: it holds the writer and waits for the writer's fsync
  const held = watch(writer.run(insert(db, 'held')))
  await turns(5)
  assert.equal(held.outcome, null, 'held, not committed')
  assert.deepEqual(rows(path).slice(1), [], 'nothing committed meanwhile')
  assert.ok(gate.release !== null, 'the checkpoint asked for the WAL\'s fsync')
  while (held.outcome === null) {
    gate.release?.()
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  assert.equal(held.outcome, 'ok 2')
  await writer.close()
})

test('writer: without checkpointIntervalMs the WAL is checkpointed every 100 ms (the first tick, which asks for the WAL\'s fsync, at 100 ms, not before)', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] })
  const { db, path } = file(t)
  let syncs = 0
  const writer = createWriter(db, path, { sync: async () => { syncs++ } })
  db.prepare('INSERT INTO t (x) VALUES (?)').run('x'.repeat(1024 * 1024))
  t.mock.timers.tick(99)
  assert.equal(syncs, 0, 'no tick before 100 ms')
  t.mock.timers.tick(1)
  assert.equal(syncs, 1, 'the tick at 100 ms')
  await writer.close()
})

test('writer: on :memory: there is no checkpointer: the connection keeps SQLite\'s own WAL settings', async (t) => {
  const db = openSqlite(':memory:')
  t.after(() => db.close())
  const writer = createWriter(db, ':memory:')
  assert.deepEqual([pragma(db, 'wal_autocheckpoint'), pragma(db, 'journal_size_limit')], [1000, -1])
  await writer.close()
})
