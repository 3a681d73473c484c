// The WAL checkpoint of the SQLite stores, off the event loop on a worker thread.
import { statSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import type { Db } from './database.ts'

/**
 * How often the WAL is checkpointed. SQLite's own automatic checkpoint (every 1000 pages, about
 * 4 MiB) ran inside the committing call, on the event loop, with its fsyncs: a stall of its own
 * while orders flow (issue 20). A checkpoint every 100 ms on another thread (createCheckpointer)
 * keeps the WAL near WAL_SIZE_LIMIT_BYTES at any write rate this process reaches.
 */
export const CHECKPOINT_INTERVAL_MS = 100

/**
 * The WAL's size after SQLite restarts it (once a checkpoint has copied every frame): it is
 * truncated to this, so a burst of writes does not leave a large file behind.
 */
export const WAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024

/** Size in bytes of the database's WAL file (0 when there is none). */
export function walBytes (path: string): number {
  if (path === ':memory:') return 0
  try {
    return statSync(`${path}-wal`).size
  } catch {
    return 0
  }
}

/** The WAL size at which the checkpoint worker starts (see createCheckpointer). */
export const WORKER_START_BYTES = 1024 * 1024

/** The longest the writer holds its batches for a RESTART checkpoint (then it races it for the lock). */
const RESTART_PAUSE_MS = 250

/** How long the checkpointing connection waits for the write lock for a RESTART checkpoint (in its own thread). */
const RESTART_WAIT_MS = 200

// The checkpointing connection, in a worker thread: an ES module (a data: URL, so read as a
// module whatever the process was started with: a string run with `eval: true` takes the
// process's --input-type, and a CommonJS one failed at every tick under --input-type=module)
// that opens the file and runs a checkpoint on each message. With synchronous=FULL the
// checkpoint fsyncs the WAL before it copies pages and the database file before it lets SQLite
// reuse the WAL: an acknowledged write is in one of the two, durably, at every instant, as with
// SQLite's automatic checkpoint.
const CHECKPOINT_WORKER = new URL('data:text/javascript,' + encodeURIComponent(`
import { parentPort, workerData } from 'node:worker_threads'
import { DatabaseSync } from 'node:sqlite'
const db = new DatabaseSync(workerData.path)
db.exec('PRAGMA synchronous = FULL')
db.exec('PRAGMA busy_timeout = ${RESTART_WAIT_MS}')
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)')
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)')
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close()
    parentPort.close()
    return
  }
  try {
    const { busy, log, checkpointed } = (message === 'restart' ? restart : passive).get()
    parentPort.postMessage({ busy, log, checkpointed })
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message) })
  }
})
`))

/**
 * Takes the WAL checkpoint off the event loop: SQLite's automatic one is turned off on the serving
 * connection (wal_autocheckpoint=0), and a second connection, on a worker thread, checkpoints
 * every intervalMs:
 * - PASSIVE while the WAL is under WAL_SIZE_LIMIT_BYTES: it copies what no reader still needs and
 *   never waits for a lock, so it blocks neither the writer nor a read. Once every frame is
 *   copied, the writer starts the WAL over at its next commit and truncates it to the limit.
 * - RESTART past the limit: under a continuous stream of writes a passive checkpoint never
 *   catches up with the end of the WAL, so it would grow without bound. RESTART takes the write
 *   lock while it copies the rest (tens of milliseconds for a few MiB): the writer meanwhile
 *   retries without blocking the event loop (createWriter), and reads go on.
 * The worker starts once the WAL passes WORKER_START_BYTES (a short CLI command or a read-mostly
 * instance never pays for the thread), one checkpoint runs at a time, and the timer does not keep
 * the process alive. Until then, or without a worker, the WAL holds the commits durably; the last
 * connection to close checkpoints it.
 */
export interface Checkpointer {
  /**
   * True while a RESTART checkpoint runs (for at most RESTART_PAUSE_MS): the writer holds its
   * batches meanwhile, so that the checkpoint gets the write lock at once instead of racing the
   * writer for it turn after turn (it would lose, and the WAL would keep growing).
   */
  restarting (): boolean
  close (): Promise<void>
}

export function createCheckpointer (db: Db, path: string, intervalMs: number): Checkpointer {
  db.exec('PRAGMA wal_autocheckpoint = 0')
  db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`)
  if (intervalMs <= 0) return { restarting: () => false, async close () {} }
  let worker: Worker | null = null
  let running = false
  let restartSince: number | null = null
  let exited: Promise<void> = Promise.resolve()
  const done = (): void => { running = false; restartSince = null }
  const tick = (): void => {
    if (running) return
    if (worker === null) {
      // A thread costs about 10 MiB of resident memory: a process that hardly writes (a CLI
      // command, a read-mostly instance) does without until its WAL passes WORKER_START_BYTES.
      if (walBytes(path) < WORKER_START_BYTES) return
      const started = new Worker(CHECKPOINT_WORKER, { workerData: { path } })
      worker = started
      exited = new Promise<void>((resolve) => started.once('exit', () => resolve()))
      started.on('message', done)
      // A worker that fails (the file vanished) is started again at the next tick.
      started.on('error', () => { done(); if (worker === started) worker = null })
      started.unref()
    }
    running = true
    const restart = walBytes(path) > WAL_SIZE_LIMIT_BYTES
    if (restart) restartSince = Date.now()
    worker.postMessage(restart ? 'restart' : 'passive')
  }
  // Not a job (src/jobs/): it stands in for SQLite's automatic checkpoint, turned off above, so it
  // lives exactly as long as this connection, in every process that opens it (the CLI, tests),
  // and stops only when the stores close, after the last write of the jobs' stop.
  // eslint-disable-next-line local/no-repeating-timer -- the engine's own checkpoint, see above
  const timer = setInterval(tick, intervalMs)
  timer.unref()
  return {
    restarting: () => restartSince !== null && Date.now() - restartSince < RESTART_PAUSE_MS,
    async close () {
      restartSince = null
      clearInterval(timer)
      // Referenced again, so that the process waits for the thread to close its connection.
      worker?.ref()
      worker?.postMessage('close')
      worker = null
      await exited
    }
  }
}
