// The WAL checkpointer itself (src/storage/sqlite/checkpoint.ts), on a real file: the settings it
// gives the serving connection, the RESTART window it reports to the writer (restarting()), and
// that nothing runs after close(). The writer-level effects are in sqlite-checkpoint.test.ts.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { createCheckpointer, walBytes, WAL_SIZE_LIMIT_BYTES } from '../../../src/storage/sqlite/checkpoint.ts'
import { openSqlite, type Db } from '../../../src/storage/sqlite/database.ts'
import { tempDir } from '../../helpers/temp.ts'

function file (t: TestContext): { db: Db; path: string } {
  const path = join(tempDir(t, 'petstore-checkpointer-'), 'petstore.db')
  const db = openSqlite(path)
  db.exec('CREATE TABLE t (x BLOB)')
  t.after(() => { if (db.isOpen) db.close() })
  return { db, path }
}

/** Appends about `mib` MiB to the WAL in one commit. */
function grow (db: Db, mib: number): void {
  db.prepare('INSERT INTO t (x) VALUES (?)').run(new Uint8Array(mib * 1024 * 1024))
}

async function until (condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  return true
}

/** The threads of this process, read from /proc: a checkpoint worker is one more, from the moment it is made. */
const threads = (): number => Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1])

const pragma = (db: Db, name: string): unknown => Object.values(db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown>)[0]

test('checkpointer: the serving connection never checkpoints by itself and truncates its WAL to the limit; with interval 0 no restart is ever reported', async (t) => {
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 0)
  assert.deepEqual([pragma(db, 'wal_autocheckpoint'), pragma(db, 'journal_size_limit')], [0, WAL_SIZE_LIMIT_BYTES])
  grow(db, 6)
  await new Promise((resolve) => setTimeout(resolve, 30))
  assert.equal(checkpointer.restarting(), false)
  await checkpointer.close()
})

test('checkpointer: past the WAL limit a RESTART checkpoint runs, restarting() is true only while it runs, and the next commit starts the WAL over at the limit', async (t) => {
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5)
  t.after(() => checkpointer.close())
  assert.equal(checkpointer.restarting(), false, 'nothing runs before the first tick')
  grow(db, 6)
  assert.ok(walBytes(path) > WAL_SIZE_LIMIT_BYTES)
  assert.ok(await until(() => checkpointer.restarting(), 5000), 'a restart was reported')
  assert.ok(await until(() => !checkpointer.restarting(), 1000), 'and ended within the pause')
  // Every frame is now in the database file: the next commit rewinds the WAL and truncates it.
  assert.ok(await until(() => { db.exec('INSERT INTO t (x) VALUES (1)'); return walBytes(path) <= WAL_SIZE_LIMIT_BYTES }, 5000), `WAL at ${walBytes(path)} bytes`)
})

test('checkpointer: after close() no tick runs: a WAL past the limit starts no worker and no restart', async (t) => {
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5)
  await checkpointer.close()
  grow(db, 6)
  await new Promise((resolve) => setTimeout(resolve, 100))
  assert.equal(checkpointer.restarting(), false)
  assert.ok(walBytes(path) > WAL_SIZE_LIMIT_BYTES, 'nothing checkpointed it')
})

test('checkpointer (mocked interval): after close() its timer is stopped: ticks that come due start no thread however large the WAL', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] })
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5)
  await checkpointer.close()
  grow(db, 6)
  const before = threads()
  t.mock.timers.tick(50)
  assert.equal(threads(), before)
})

test('checkpointer: a WAL under 1 MiB starts no checkpoint thread however many ticks pass; past it, the thread starts', async (t) => {
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5)
  t.after(() => checkpointer.close())
  grow(db, 0.5)
  const before = threads()
  await new Promise((resolve) => setTimeout(resolve, 60))
  assert.equal(threads(), before, 'no thread for a small WAL')
  grow(db, 1)
  assert.ok(await until(() => threads() > before, 5000), 'the checkpoint thread started')
})

test('checkpointer (mocked clock): restarting() is true from the tick that posts a RESTART until 250 ms later and not at 250 ms, and the ticks meanwhile post no other checkpoint', (t) => {
  // Mocked interval and clock: the ticks run synchronously inside tick(), where the worker's
  // answer (which would end the window early) cannot arrive.
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 0 })
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5)
  t.after(() => checkpointer.close())
  assert.equal(checkpointer.restarting(), false, 'nothing restarts before the first tick, even at the clock\'s 0')
  grow(db, 6)
  t.mock.timers.tick(5)
  assert.equal(checkpointer.restarting(), true, 'from the tick at 5 ms')
  t.mock.timers.tick(249) // 49 more ticks: each finds the checkpoint running and leaves it be
  assert.equal(checkpointer.restarting(), true, 'at 249 ms into the RESTART')
  t.mock.timers.tick(1)
  assert.equal(checkpointer.restarting(), false, 'at 250 ms the writer stops holding its batches (a later tick would have started the window over)')
})

test('checkpointer (mocked clock): the worker\'s answer ends the RESTART window before its 250 ms, and so does close()', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 0 })
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5)
  t.after(() => checkpointer.close())
  grow(db, 6)
  t.mock.timers.tick(5)
  assert.equal(checkpointer.restarting(), true)
  // The clock stands still at 5 ms: only the worker's answer can end the window.
  assert.ok(await until(() => !checkpointer.restarting(), 10_000), 'ended by the answer')
  grow(db, 6) // the WAL is past the limit again (nothing truncated it): the next tick restarts
  t.mock.timers.tick(5)
  assert.equal(checkpointer.restarting(), true)
  const closing = checkpointer.close()
  assert.equal(checkpointer.restarting(), false, 'ended by close()')
  await closing
})

test('checkpointer (mocked clock): between 1 MiB and the limit the tick starts the thread for a PASSIVE checkpoint, and no restart is reported; under 1 MiB no tick starts one', (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 0 })
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5)
  t.after(() => checkpointer.close())
  grow(db, 0.5)
  let before = threads()
  t.mock.timers.tick(50)
  assert.equal(threads(), before, 'ten ticks at 0.5 MiB: no thread')
  grow(db, 1.5)
  assert.ok(walBytes(path) > 1024 * 1024 && walBytes(path) < WAL_SIZE_LIMIT_BYTES)
  before = threads()
  t.mock.timers.tick(5)
  assert.equal(threads(), before + 1, 'the tick past 1 MiB made the thread')
  assert.equal(checkpointer.restarting(), false, 'a passive checkpoint holds no write')
})

test('checkpointer: a worker that fails (it cannot open the database) is made again at the next tick', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] })
  const dir = tempDir(t, 'petstore-checkpointer-')
  const path = join(dir, 'petstore.db')
  mkdirSync(path) // a directory where the worker expects the database: its DatabaseSync throws
  writeFileSync(`${path}-wal`, new Uint8Array(2 * 1024 * 1024)) // a WAL past 1 MiB, so a tick starts it
  const db = openSqlite(':memory:')
  t.after(() => db.close())
  const checkpointer = createCheckpointer(db, path, 5)
  t.after(() => checkpointer.close())
  const before = threads()
  t.mock.timers.tick(5)
  assert.equal(threads(), before + 1, 'the first worker')
  // It fails on its own thread; its error event then arrives on this one. The intervals are
  // mocked, so no tick runs meanwhile.
  assert.ok(await until(() => threads() === before, 5000), 'the failed worker ended')
  await new Promise((resolve) => setImmediate(resolve))
  t.mock.timers.tick(5)
  assert.equal(threads(), before + 1, 'a second worker, made by the next tick')
})

/**
 * Runs a short program in a child process that opens a file database, starts a checkpointer on it
 * and writes past the WAL limit, waits until the checkpoint thread has run a checkpoint (the next
 * commit then starts the WAL over, under the limit: nothing else checkpoints), then runs `rest`.
 * Its output and whether it ended by itself within 15 s. The program is a file, or with `eval` a
 * string run with `--input-type=module`, a flag the checkpoint thread inherits.
 */
function child (path: string, rest: string, started: 'file' | 'eval' = 'file'): { stdout: string; ended: boolean } {
  const database = new URL('../../../src/storage/sqlite/database.ts', import.meta.url).href
  const checkpoint = new URL('../../../src/storage/sqlite/checkpoint.ts', import.meta.url).href
  const program = `
    import { openSqlite } from ${JSON.stringify(database)}
    import { createCheckpointer, walBytes, WAL_SIZE_LIMIT_BYTES } from ${JSON.stringify(checkpoint)}
    const db = openSqlite(${JSON.stringify(path)})
    db.exec('CREATE TABLE t (x BLOB)')
    const checkpointer = createCheckpointer(db, ${JSON.stringify(path)}, 5)
    db.prepare('INSERT INTO t (x) VALUES (?)').run(new Uint8Array(6 * 1024 * 1024))
    do {
      await new Promise((resolve) => setTimeout(resolve, 5))
      db.exec('INSERT INTO t (x) VALUES (1)')
    } while (walBytes(${JSON.stringify(path)}) > WAL_SIZE_LIMIT_BYTES)
    process.stdout.write('started ')
    ${rest}
  `
  const file = join(dirname(path), 'program.mjs')
  writeFileSync(file, program)
  const args = started === 'file' ? [file] : ['--input-type=module', '-e', program]
  const result = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 15_000 })
  return { stdout: result.stdout, ended: result.signal === null && result.status === 0 }
}

test('checkpointer: neither its timer nor its thread keeps a process alive (a program that never calls close() still ends)', (t) => {
  const path = join(tempDir(t, 'petstore-checkpointer-'), 'petstore.db')
  assert.deepEqual(child(path, ''), { stdout: 'started ', ended: true })
})

test('checkpointer: close() keeps the process alive until the thread has closed its connection, so the last connection then checkpoints and removes the WAL', (t) => {
  const path = join(tempDir(t, 'petstore-checkpointer-'), 'petstore.db')
  const rest = "await checkpointer.close(); db.close(); process.stdout.write('closed')"
  assert.deepEqual(child(path, rest), { stdout: 'started closed', ended: true })
  assert.equal(walBytes(path), 0, 'no WAL left')
})

test('checkpointer: in a process started with --input-type=module the thread checkpoints too, and close() removes the WAL', (t) => {
  // Catches: a worker script that depends on how the process was started (a CommonJS string run
  // with eval: true is read as a module under --input-type=module and fails at every tick, so the
  // WAL is never started over and the program never gets past its loop).
  const path = join(tempDir(t, 'petstore-checkpointer-'), 'petstore.db')
  const rest = "await checkpointer.close(); db.close(); process.stdout.write('closed')"
  assert.deepEqual(child(path, rest, 'eval'), { stdout: 'started closed', ended: true })
  assert.equal(walBytes(path), 0, 'no WAL left')
})

test('checkpointer: close() returns once the thread has closed its connection: the serving connection, closed right after, is the last and removes the WAL', async (t) => {
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5)
  grow(db, 6)
  // The thread has run a checkpoint once the next commit starts the WAL over under the limit.
  assert.ok(await until(() => { db.exec('INSERT INTO t (x) VALUES (1)'); return walBytes(path) <= WAL_SIZE_LIMIT_BYTES }, 10_000))
  await checkpointer.close()
  db.close()
  assert.equal(existsSync(`${path}-wal`), false, 'the WAL was removed by the serving connection\'s close')
})

test('checkpointer (mocked clock): past the limit the checkpoint is a RESTART: it holds off other writers while it waits for a reader (a PASSIVE one would not)', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 0 })
  const { db, path } = file(t)
  const checkpointer = createCheckpointer(db, path, 5)
  t.after(() => checkpointer.close())
  grow(db, 6)
  const reader = new DatabaseSync(path)
  t.after(() => reader.close())
  reader.exec('BEGIN')
  reader.prepare('SELECT count(*) FROM t').get() // a read transaction that uses the WAL
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('PRAGMA busy_timeout = 0')
  t.mock.timers.tick(5)
  // The clock stands still: the window lasts until the worker answers, after its 200 ms wait.
  let refused = 0
  while (checkpointer.restarting()) {
    try {
      other.exec('BEGIN IMMEDIATE')
      other.exec('ROLLBACK')
    } catch {
      refused++
    }
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  reader.exec('COMMIT')
  assert.ok(refused > 0, 'a writer was refused while the checkpoint ran')
})
