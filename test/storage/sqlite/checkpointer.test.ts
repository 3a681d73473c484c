// The WAL checkpointer itself (src/storage/sqlite/checkpoint.ts), on a real file: the settings it
// gives the serving connection, that it runs on this thread (no worker), what it copies while
// writes go on (only frames made durable first) and when it holds the writer (past the WAL limit),
// and that nothing runs after close(). The writer-level effects are in checkpoint.test.ts.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { createCheckpointer, walBytes, WAL_SIZE_LIMIT_BYTES, type CheckpointHooks } from '../../../src/storage/sqlite/checkpoint.ts'
import { openSqlite, transaction, type Db } from '../../../src/storage/sqlite/database.ts'
import { tempDir } from '../../helpers/temp.ts'
import { countRows as count } from './writer-helpers.ts'

const MiB = 1024 * 1024

function file (t: TestContext): { db: Db; path: string } {
  const path = join(tempDir(t, 'petstore-checkpointer-'), 'petstore.db')
  const db = openSqlite(path)
  db.exec('CREATE TABLE t (x BLOB)')
  t.after(() => { if (db.isOpen) db.close() })
  return { db, path }
}

/** Appends about `mib` MiB to the WAL in one commit. */
function grow (db: Db, mib: number): void {
  db.prepare('INSERT INTO t (x) VALUES (?)').run(new Uint8Array(mib * MiB))
}

async function until (condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  return true
}

/**
 * The worker threads (worker_threads) of this process, by their name in /proc: libuv's pool and
 * V8's helpers do not count.
 */
const workers = (): number => readdirSync('/proc/self/task').filter((tid) => {
  try { return readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === 'WorkerThread' } catch { return false }
}).length

const pragma = (db: Db, name: string): unknown => Object.values(db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown>)[0]

/**
 * Hooks standing in for the writer's: durable() resolves when the test opens the gate (or at once
 * when open), and both count their calls.
 */
function gated (open = false): CheckpointHooks & { calls: { durable: number; resume: number }; open (): void } {
  let release: (() => void)[] = []
  const calls = { durable: 0, resume: 0 }
  return {
    calls,
    durable: () => {
      calls.durable++
      return open ? Promise.resolve() : new Promise<void>((resolve) => { release.push(resolve) })
    },
    resume: () => { calls.resume++ },
    open () {
      open = true
      for (const resolve of release) resolve()
      release = []
    }
  }
}

/** Whether another connection can take the write lock now (it does not wait). */
function canWrite (path: string): boolean {
  const other = new DatabaseSync(path)
  try {
    other.exec('PRAGMA busy_timeout = 0')
    other.exec('BEGIN IMMEDIATE')
    other.exec('ROLLBACK')
    return true
  } catch {
    return false
  } finally {
    other.close()
  }
}

/** One small row, unless a checkpoint holds the write lock (the writer would wait for it, not block). */
function tryInsert (db: Db): void {
  try { db.exec('INSERT INTO t (x) VALUES (1)') } catch { /* held: the next try */ }
}

test('checkpointer: the serving connection never checkpoints by itself and truncates its WAL to the limit; with interval 0 nothing runs and nothing is held', async (t) => {
  const { db, path } = file(t)
  const hooks = gated(true)
  const checkpointer = createCheckpointer(db, path, 0, hooks)
  assert.deepEqual([pragma(db, 'wal_autocheckpoint'), pragma(db, 'journal_size_limit')], [0, WAL_SIZE_LIMIT_BYTES])
  grow(db, 6)
  await new Promise((resolve) => setTimeout(resolve, 30))
  assert.equal(checkpointer.holding(), false)
  assert.deepEqual(hooks.calls, { durable: 0, resume: 0 })
  await checkpointer.close()
})

test('checkpointer: past the WAL limit a tick copies every frame on this thread, no worker thread is ever started, and the next commit starts the WAL over at the limit', async (t) => {
  // Fault caught: the checkpoint back on a worker thread (an isolate of about 10 MiB).
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5, gated(true))
  t.after(() => checkpointer.close())
  grow(db, 6)
  assert.ok(walBytes(path) > WAL_SIZE_LIMIT_BYTES)
  // Written around the checkpoint's lock, as the writer does, without blocking the event loop.
  db.exec('PRAGMA busy_timeout = 0')
  assert.ok(await until(() => { tryInsert(db); return walBytes(path) <= WAL_SIZE_LIMIT_BYTES }, 5000), `WAL at ${walBytes(path)} bytes`)
  assert.equal(workers(), 0, 'no worker thread was started')
  assert.equal(pragma(db, 'synchronous'), 2, 'the serving connection is back at synchronous=FULL')
})

test('checkpointer: under the limit a tick copies what was committed, without holding the writer, and the next commit starts the WAL over', async (t) => {
  const { db, path } = file(t)
  const hooks = gated(true)
  const checkpointer = createCheckpointer(db, path, 5, hooks)
  grow(db, 2)
  assert.ok(await until(() => hooks.calls.durable > 0, 5000), 'a checkpoint ran')
  await checkpointer.close() // waits for the checkpoint under way
  assert.equal(hooks.calls.resume, 0, 'the writer was never held')
  grow(db, 3) // had the WAL not started over, this would take it past 5 MiB
  assert.ok(walBytes(path) < 4 * MiB, `WAL at ${walBytes(path)} bytes`)
  assert.equal(count(path), 2)
})

test('checkpointer (mocked interval): under the limit, frames committed while the WAL\'s fsync runs are not copied: the WAL does not start over after that checkpoint', async (t) => {
  // Fault caught: a checkpoint at synchronous=OFF that copies a frame whose commit is not durable
  // yet (a power loss would leave part of a transaction in the database file and none in the WAL).
  t.mock.timers.enable({ apis: ['setInterval'] })
  const { db, path } = file(t)
  const hooks = gated()
  const checkpointer = createCheckpointer(db, path, 5, hooks)
  grow(db, 2)
  t.mock.timers.tick(5) // the pin's snapshot: frames up to here
  assert.equal(hooks.calls.durable, 1, 'the tick waits for the WAL\'s fsync')
  assert.equal(checkpointer.holding(), false)
  assert.equal(canWrite(path), true, 'other writers go on meanwhile')
  grow(db, 1) // committed after the snapshot
  hooks.open()
  await checkpointer.close()
  grow(db, 1.5) // the WAL did not start over: it grows past the 3 MiB written so far
  assert.ok(walBytes(path) > 4 * MiB, `WAL at ${walBytes(path)} bytes`)
  assert.equal(count(path), 3)
})

test('checkpointer (mocked interval): past the limit the tick holds the writer from before the WAL\'s fsync until the database file\'s, then resumes it once', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] })
  const { db, path } = file(t)
  const hooks = gated()
  const checkpointer = createCheckpointer(db, path, 5, hooks)
  t.after(() => checkpointer.close())
  grow(db, 6)
  t.mock.timers.tick(5)
  assert.equal(checkpointer.holding(), true, 'held from the tick')
  t.mock.timers.tick(50) // ticks meanwhile start no other checkpoint
  assert.equal(hooks.calls.durable, 1)
  hooks.open()
  assert.ok(await until(() => !checkpointer.holding(), 5000), 'released after the copy and the fsync')
  assert.equal(hooks.calls.resume, 1)
  assert.equal(canWrite(path), true)
  db.exec('INSERT INTO t (x) VALUES (1)')
  assert.ok(walBytes(path) <= WAL_SIZE_LIMIT_BYTES, `WAL at ${walBytes(path)} bytes: started over`)
})

test('checkpointer (mocked interval): a tick with nothing committed since the last checkpoint does nothing', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] })
  const { db, path } = file(t)
  const hooks = gated(true)
  const checkpointer = createCheckpointer(db, path, 5, hooks)
  t.after(() => checkpointer.close())
  grow(db, 1)
  t.mock.timers.tick(5)
  assert.equal(hooks.calls.durable, 1)
  // 200 ms of ticks, during the checkpoint and after it: none starts another.
  const until200 = Date.now() + 200
  while (Date.now() < until200) {
    t.mock.timers.tick(5)
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  assert.equal(hooks.calls.durable, 1, 'no commit: no checkpoint')
  grow(db, 0.1)
  assert.ok(await until(() => { t.mock.timers.tick(5); return hooks.calls.durable === 2 }, 5000), 'a commit: the next tick checkpoints')
})

test('checkpointer (mocked interval): past the limit, a synchronous transaction on the serving connection during the checkpoint commits at once (no write lock to wait for, which would block the loop the checkpoint needs), and is not copied', async (t) => {
  // Fault caught: a checkpoint that holds the write lock across its fsyncs; keys' and usage's
  // transaction() then waits in SQLite's busy handler, on the event loop, until it fails.
  t.mock.timers.enable({ apis: ['setInterval'] })
  const { db, path } = file(t)
  const hooks = gated()
  const checkpointer = createCheckpointer(db, path, 5, hooks)
  grow(db, 6)
  t.mock.timers.tick(5)
  assert.equal(checkpointer.holding(), true)
  db.exec('PRAGMA busy_timeout = 0') // a wait would show as SQLITE_BUSY at once
  transaction(db, () => { grow(db, 0.5) })
  hooks.open()
  await checkpointer.close()
  grow(db, 1) // the WAL did not start over (the transaction's frames came after the snapshot)
  assert.ok(walBytes(path) > 7 * MiB, `WAL at ${walBytes(path)} bytes`)
  assert.equal(count(path), 3)
})

test('checkpointer: after close() no tick runs, however large the WAL', async (t) => {
  const { db, path } = file(t)
  const hooks = gated(true)
  const checkpointer = createCheckpointer(db, path, 5, hooks)
  await checkpointer.close()
  grow(db, 6)
  await new Promise((resolve) => setTimeout(resolve, 100))
  assert.equal(checkpointer.holding(), false)
  assert.equal(hooks.calls.durable, 0)
  assert.ok(walBytes(path) > WAL_SIZE_LIMIT_BYTES, 'nothing checkpointed it')
})

test('checkpointer: close() during a checkpoint waits for it and releases the lock; nothing is copied after the WAL\'s fsync, and the serving connection, closed right after, removes the WAL', async (t) => {
  const { db, path } = file(t)
  const hooks = gated()
  const checkpointer = createCheckpointer(db, path, 5, hooks)
  grow(db, 6)
  assert.ok(await until(() => checkpointer.holding(), 5000))
  const closing = checkpointer.close()
  hooks.open()
  await closing
  assert.equal(checkpointer.holding(), false)
  assert.equal(hooks.calls.resume, 1, 'the writer was resumed')
  assert.equal(canWrite(path), true, 'the lock was released')
  db.close()
  assert.equal(walBytes(path), 0, 'no WAL left')
  assert.equal(count(path), 1)
})

test('checkpointer: a checkpoint that fails (its connection cannot open the file) neither throws nor holds the writer', async (t) => {
  const { db, path } = file(t)
  const hooks = gated(true)
  mkdirSync(`${path}-x`)
  const checkpointer = createCheckpointer(db, `${path}-x`, 5, hooks) // a directory: the pin cannot open it
  t.after(() => checkpointer.close())
  await new Promise((resolve) => setTimeout(resolve, 30))
  assert.equal(checkpointer.holding(), false)
  assert.equal(hooks.calls.durable, 0)
})

/**
 * Runs a short program in a child process that opens a file database, starts a checkpointer on it
 * and writes past the WAL limit, waits until a checkpoint has run (the next commit then starts the
 * WAL over, under the limit: nothing else checkpoints), then runs `rest`. Its output and whether
 * it ended by itself within 15 s.
 */
function child (path: string, rest: string): { stdout: string; ended: boolean } {
  const database = new URL('../../../src/storage/sqlite/database.ts', import.meta.url).href
  const checkpoint = new URL('../../../src/storage/sqlite/checkpoint.ts', import.meta.url).href
  const program = `
    import { openSqlite } from ${JSON.stringify(database)}
    import { createCheckpointer, walBytes, WAL_SIZE_LIMIT_BYTES } from ${JSON.stringify(checkpoint)}
    const db = openSqlite(${JSON.stringify(path)})
    db.exec('CREATE TABLE t (x BLOB)')
    const checkpointer = createCheckpointer(db, ${JSON.stringify(path)}, 5)
    db.prepare('INSERT INTO t (x) VALUES (?)').run(new Uint8Array(6 * 1024 * 1024))
    db.exec('PRAGMA busy_timeout = 0')
    do {
      await new Promise((resolve) => setTimeout(resolve, 5))
      try { db.exec('INSERT INTO t (x) VALUES (1)') } catch { /* the checkpoint holds the lock */ }
    } while (walBytes(${JSON.stringify(path)}) > WAL_SIZE_LIMIT_BYTES)
    process.stdout.write('started ')
    ${rest}
  `
  const file = join(dirname(path), 'program.mjs')
  writeFileSync(file, program)
  const result = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 15_000 })
  return { stdout: result.stdout, ended: result.signal === null && result.status === 0 }
}

test('checkpointer: its timer does not keep a process alive (a program that never calls close() still ends)', (t) => {
  const path = join(tempDir(t, 'petstore-checkpointer-'), 'petstore.db')
  assert.deepEqual(child(path, ''), { stdout: 'started ', ended: true })
})

test('checkpointer: after close() the serving connection is the last one, and its close removes the WAL', (t) => {
  const path = join(tempDir(t, 'petstore-checkpointer-'), 'petstore.db')
  const rest = "await checkpointer.close(); db.close(); process.stdout.write('closed')"
  assert.deepEqual(child(path, rest), { stdout: 'started closed', ended: true })
  assert.equal(walBytes(path), 0, 'no WAL left')
})
