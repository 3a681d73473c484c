// Opening SQLite through node:sqlite, its pragmas, its migrations, and its write paths.
import { DatabaseSync } from 'node:sqlite'
import { closeSync, fsync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { Worker } from 'node:worker_threads'
import { ServiceUnavailableError } from '../../errors.ts'
import { refuseNewerSchema } from '../checks.ts'
import { SQLITE_MIGRATIONS } from './migrations.ts'

export type Db = DatabaseSync

/**
 * How long a statement run outside the writer (reads, the synchronous `transaction`, the CLI)
 * may wait, blocking, for a lock another connection holds. In WAL mode readers never wait for a
 * writer, so reads hardly ever use it; a synchronous write that still finds the file locked
 * after it answers 503 (see `transaction`). Short, because it blocks the event loop.
 */
export const BUSY_TIMEOUT_MS = 100

/** How long the writer keeps retrying, without blocking, to take a lock another process holds. */
export const WRITE_LOCK_BOUND_MS = 1000

/**
 * WAL lets readers run beside the writer; synchronous=FULL makes every acknowledged commit
 * durable even across a power loss (NORMAL would only survive a process crash), which
 * docs/product.md section 9 asks of us. The writer (`createWriter`) commits with NORMAL and
 * then fsyncs the WAL itself, off the event loop, before it answers: the same durability.
 * Migrations may wait longer for the lock: two instances may start together.
 */
export function openSqlite (path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const db = new DatabaseSync(path)
  db.exec('PRAGMA busy_timeout = 5000')
  if (path !== ':memory:') db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = FULL')
  db.exec('PRAGMA foreign_keys = ON')
  return db
}

/** Applies pending migrations, each in its own transaction, tracked by PRAGMA user_version. */
export function migrateSqlite (db: Db): { from: number; to: number } {
  const from = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)
  refuseNewerSchema(from, SQLITE_MIGRATIONS.length)
  for (let v = from; v < SQLITE_MIGRATIONS.length; v++) {
    transaction(db, () => {
      db.exec(SQLITE_MIGRATIONS[v]!)
      db.exec(`PRAGMA user_version = ${v + 1}`)
    })
  }
  return { from, to: SQLITE_MIGRATIONS.length }
}

/** SQLITE_BUSY or SQLITE_LOCKED (with their extended codes): another connection holds the lock. */
export function isBusy (error: unknown): boolean {
  const errcode = (error as { errcode?: unknown } | null)?.errcode
  return typeof errcode === 'number' && ((errcode & 0xff) === 5 || (errcode & 0xff) === 6)
}

const locked = (cause: unknown): ServiceUnavailableError => {
  const error = new ServiceUnavailableError('the database is locked by another process; retry shortly', cause)
  error.headers!['retry-after'] = '1'
  return error
}

/**
 * Runs fn inside BEGIN IMMEDIATE ... COMMIT, synchronously (with synchronous=FULL, the commit is
 * durable when this returns). node:sqlite is synchronous and every request shares this one
 * connection, so no other request can interleave: a store method that does all its work inside
 * one call is atomic. fn must not await. A lock held elsewhere past the busy timeout is a 503.
 */
export function transaction<T> (db: Db, fn: () => T): T {
  try {
    db.exec('BEGIN IMMEDIATE')
  } catch (error) {
    throw isBusy(error) ? locked(error) : error
  }
  try {
    const result = fn()
    db.exec('COMMIT')
    return result
  } catch (error) {
    // SQLite may have ended the transaction itself (it rolls back on SQLITE_FULL, SQLITE_IOERR
    // and the like): a ROLLBACK then fails with "no transaction is active", and that error
    // would hide the real one. A ROLLBACK that fails otherwise must not hide it either.
    if (db.isTransaction) {
      try {
        db.exec('ROLLBACK')
      } catch {
        // The error that matters is fn's or the commit's, thrown below.
      }
    }
    throw error
  }
}

export interface Writer {
  /**
   * Runs fn inside the next group commit, in a savepoint of its own, and resolves with its result
   * once that commit is durable; rejects with fn's error (only fn's changes are undone) or, when
   * the commit fails, with the commit's error. fn must do all its work synchronously (it must not
   * await), so it is atomic. When another process holds the write lock, the commit is retried
   * without blocking the event loop for up to WRITE_LOCK_BOUND_MS, then fails with 503
   * service_unavailable and Retry-After.
   */
  run<T> (fn: () => T): Promise<T>
  /** Waits for the writes queued and in flight, and releases the WAL file. */
  close (): Promise<void>
}

export interface WriterOptions {
  /** Makes the commits so far durable (fsync of the WAL); injectable for tests. */
  sync?: () => Promise<void>
  lockBoundMs?: number
  /** How often the WAL is checkpointed, off the event loop (see createCheckpointer); 0: never (tests). */
  checkpointIntervalMs?: number
}

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

/** The most writes one group commit takes; more wait for the next one. */
const MAX_BATCH = 256

interface Pending {
  fn: () => unknown
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
  since: number
}

/**
 * The write path of the stores: group commit, off the event loop's disk waits.
 *
 * - The writes that arrive in one turn of the event loop (setImmediate) are run in one
 *   transaction, each in a savepoint of its own: a write that fails rolls back its savepoint
 *   and fails alone, the others commit together.
 * - The transaction commits with synchronous=NORMAL, which writes the WAL but does not fsync it,
 *   and the WAL file is then fsynced on libuv's thread pool: the event loop never waits for the
 *   disk, so reads and other requests go on meanwhile. One fsync is in flight at a time; a batch
 *   that commits during it waits for the next one.
 * - A write is answered only after an fsync that began after its own commit has completed. The
 *   WAL is appended in order and fsync makes every frame written before it durable, so an
 *   acknowledged write survives a power loss exactly as with synchronous=FULL.
 */
export function createWriter (db: Db, path: string, options: WriterOptions = {}): Writer {
  const wal = options.sync !== undefined || path === ':memory:' ? null : walFile(path)
  const checkpointer = path === ':memory:' ? null : createCheckpointer(db, path, options.checkpointIntervalMs ?? CHECKPOINT_INTERVAL_MS)
  const sync = options.sync ?? wal?.sync ?? (async () => {})
  const lockBoundMs = options.lockBoundMs ?? WRITE_LOCK_BOUND_MS
  db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
  // The commit of a batch is fsynced by durable(), off the event loop; and the lock is tried
  // without the busy handler, which would block the event loop while it waits.
  const relaxed = db.prepare('PRAGMA synchronous = NORMAL')
  const strict = db.prepare('PRAGMA synchronous = FULL')
  const noWait = db.prepare('PRAGMA busy_timeout = 0')
  const wait = db.prepare(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')
  const savepoint = db.prepare('SAVEPOINT write')
  const release = db.prepare('RELEASE write')
  const undo = db.prepare('ROLLBACK TO write')

  let queue: Pending[] = []
  let scheduled: NodeJS.Immediate | NodeJS.Timeout | null = null
  let retryDelay = 2
  /** close()'s waiters, told when the queue is empty and no flush is scheduled. */
  const idle: (() => void)[] = []

  // Group commit of fsyncs: `current` is the one in flight; `next` the one later commits wait for.
  let current: Promise<void> | null = null
  let next: Promise<void> | null = null

  function durable (): Promise<void> {
    if (current === null) {
      current = sync().finally(() => { current = null })
      return current
    }
    next ??= current.then(() => { next = null; return durable() }, () => { next = null; return durable() })
    return next
  }

  function schedule (): void {
    if (scheduled === null) scheduled = setImmediate(flush)
  }

  /** BEGIN IMMEDIATE without waiting: false when another connection holds the write lock. */
  function tryBegin (): boolean {
    noWait.run()
    relaxed.run()
    try {
      begin.run()
      return true
    } catch (error) {
      if (isBusy(error)) return false
      throw error
    }
  }

  /**
   * Back to the settings every other statement on the connection expects. These pragmas fail
   * only inside a transaction, which flush never leaves open unless even ROLLBACK failed; then
   * the next BEGIN fails and rejects its writes, so nothing waits forever.
   */
  function restore (): void {
    try { strict.run() } catch { /* see above */ }
    try { wait.run() } catch { /* see above */ }
  }

  /** Ends the transaction if SQLite has not already; a failed ROLLBACK must not hide the cause. */
  function abandon (): void {
    if (!db.isTransaction) return
    try { rollback.run() } catch { /* the writes are rejected with the error that caused this */ }
  }

  /**
   * Undoes one failed write's savepoint. False when that is impossible: the write's error ended
   * the whole transaction (SQLite rolls back on its own on SQLITE_FULL, SQLITE_IOERR and the
   * like, and the savepoint is gone with it), or the undo failed.
   */
  function undoWrite (): boolean {
    if (!db.isTransaction) return false
    try {
      undo.run()
      release.run()
      return true
    } catch {
      return false
    }
  }

  /**
   * Every write settles, in every path: it is answered (after its fsync), rejected with its own
   * error, rejected with the error that lost its work (the commit's, or another write's that
   * ended the transaction), or put back at the head of the queue when it has not run yet. And
   * whatever the path, when nothing is left to do, close() is told.
   */
  function flush (): void {
    scheduled = null
    if (queue.length > 0 && checkpointer?.restarting() === true) {
      // The checkpoint worker is copying the WAL back under the write lock: wait for it, without
      // blocking the event loop (a few milliseconds, RESTART_PAUSE_MS at most).
      scheduled = setTimeout(flush, 2)
      return
    }
    try {
      if (queue.length > 0) runBatch()
    } finally {
      if (queue.length > 0 && scheduled === null) schedule()
      if (queue.length === 0 && scheduled === null) {
        for (const resolve of idle.splice(0)) resolve()
      }
    }
  }

  function runBatch (): void {
    let began: boolean
    try {
      began = tryBegin()
    } catch (error) {
      // BEGIN (or a pragma before it) failed for another reason than the lock: this turn's
      // writes cannot run. A transaction already open on the connection is not ours to end.
      restore()
      for (const p of queue.splice(0)) p.reject(error)
      return
    }
    if (!began) {
      restore()
      // Locked by another process: the writes that waited long enough fail with 503, the others
      // try again a little later, without blocking the event loop meanwhile.
      const now = Date.now()
      const expired = queue.filter((p) => now - p.since >= lockBoundMs)
      queue = queue.filter((p) => now - p.since < lockBoundMs)
      for (const p of expired) p.reject(locked(undefined))
      if (queue.length > 0) {
        scheduled = setTimeout(flush, retryDelay)
        retryDelay = Math.min(retryDelay * 2, 50)
      }
      return
    }
    retryDelay = 2
    const batch = queue.length > MAX_BATCH ? queue.splice(0, MAX_BATCH) : queue.splice(0)
    const done: [Pending, unknown][] = []
    // The error that lost the transaction, if one did; `ran` counts the writes of the batch run.
    let lost: { error: unknown } | null = null
    let ran = 0
    try {
      while (ran < batch.length && lost === null) {
        const p = batch[ran++]!
        let result: unknown
        try {
          savepoint.run()
          result = p.fn()
          release.run()
        } catch (error) {
          p.reject(error)
          if (!undoWrite()) lost = { error }
          continue
        }
        done.push([p, result])
      }
      if (lost === null) commit.run()
    } catch (error) {
      // The commit failed: nothing of the batch is kept.
      lost = { error }
    } finally {
      if (lost !== null) {
        abandon()
        for (const [p] of done) p.reject(lost.error)
        done.length = 0
        // The writes after the one that ended the transaction did not run: they go first in the
        // next transaction, each still failing or succeeding on its own.
        queue.unshift(...batch.slice(ran))
      }
      restore()
    }
    if (done.length > 0) {
      durable().then(
        () => { for (const [p, result] of done) p.resolve(result) },
        (error: unknown) => { for (const [p] of done) p.reject(error) }
      )
    }
  }

  return {
    run<T> (fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ fn, resolve: resolve as (value: unknown) => void, reject, since: Date.now() })
        schedule()
      })
    },
    async close () {
      if (queue.length > 0 || scheduled !== null) await new Promise<void>((resolve) => { idle.push(resolve) })
      await next?.catch(() => {})
      await current?.catch(() => {})
      await checkpointer?.close()
      wal?.close()
    }
  }
}

/** fsync of the database's WAL file, on libuv's thread pool. The file exists once a commit did. */
function walFile (path: string): { sync (): Promise<void>; close (): void } {
  let fd: number | null = null
  return {
    sync: () => new Promise<void>((resolve, reject) => {
      try {
        // fsync flushes the file, whichever descriptor names it: SQLite's own writes included.
        fd ??= openSync(`${path}-wal`, 'r')
      } catch (error) {
        reject(error as Error)
        return
      }
      fsync(fd, (error) => { if (error === null) resolve(); else reject(error) })
    }),
    close () {
      if (fd !== null) closeSync(fd)
      fd = null
    }
  }
}

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

// The checkpointing connection, in a worker thread: a plain script (eval'd, so CommonJS) that
// opens the file and runs a passive checkpoint on each message. With synchronous=FULL the
// checkpoint fsyncs the WAL before it copies pages and the database file before it lets SQLite
// reuse the WAL: an acknowledged write is in one of the two, durably, at every instant, as with
// SQLite's automatic checkpoint.
const CHECKPOINT_WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const { DatabaseSync } = require('node:sqlite')
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
`

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
interface Checkpointer {
  /**
   * True while a RESTART checkpoint runs (for at most RESTART_PAUSE_MS): the writer holds its
   * batches meanwhile, so that the checkpoint gets the write lock at once instead of racing the
   * writer for it turn after turn (it would lose, and the WAL would keep growing).
   */
  restarting (): boolean
  close (): Promise<void>
}

function createCheckpointer (db: Db, path: string, intervalMs: number): Checkpointer {
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
      // A thread costs about 18 MiB of resident memory: a process that hardly writes (a CLI
      // command, a read-mostly instance) does without until its WAL passes WORKER_START_BYTES.
      if (walBytes(path) < WORKER_START_BYTES) return
      const started = new Worker(CHECKPOINT_WORKER, { eval: true, workerData: { path } })
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
