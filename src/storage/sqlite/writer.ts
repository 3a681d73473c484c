// The write path of the SQLite stores: group commit, with the fsync of the WAL off the event loop.
import { closeSync, fsync, openSync } from 'node:fs'
import { BUSY_TIMEOUT_MS, isBusy, locked, type Db } from './database.ts'
import { CHECKPOINT_INTERVAL_MS, createCheckpointer } from './checkpoint.ts'
import { telemetry, type WriteTrace } from '../../telemetry/hooks.ts'

/** How long the writer keeps retrying, without blocking, to take a lock another process holds. */
export const WRITE_LOCK_BOUND_MS = 1000

export interface Writer {
  /**
   * Runs fn inside the next group commit, in a savepoint of its own, and resolves with its result
   * once that commit is durable; rejects with fn's error (only fn's changes are undone) or, when
   * the commit fails, with the commit's error. fn must do all its work synchronously (it must not
   * await), so it is atomic. When another process holds the write lock, the commit is retried
   * without blocking the event loop for up to WRITE_LOCK_BOUND_MS, then fails with 503
   * service_unavailable and Retry-After.
   */
  run<T> (fn: () => T, options?: RunOptions): Promise<T>
  /** Waits for the writes queued and in flight, and releases the WAL file. */
  close (): Promise<void>
}

export interface RunOptions {
  /**
   * false: resolve once committed, without waiting for the fsync that makes it durable (the next
   * one does). Only for bookkeeping that a power loss may undo because it is redone: the webhook
   * dispatcher's fan-out, leases and attempt records (at-least-once: an attempt whose record is
   * lost is made again). A process crash (SIGKILL) loses nothing either way: the commit is in
   * the WAL file, in the page cache. Default true.
   */
  durable?: boolean
}

export interface WriterOptions {
  /** Makes the commits so far durable (fsync of the WAL); injectable for tests. */
  sync?: () => Promise<void>
  lockBoundMs?: number
  /** How often the WAL is checkpointed (see createCheckpointer); 0: never (tests). */
  checkpointIntervalMs?: number
}

/** The most writes one group commit takes; more wait for the next one. */
const MAX_BATCH = 256

interface Pending {
  fn: () => unknown
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
  since: number
  /** The caller's trace context when tracing is on (telemetry/hooks.ts). */
  trace: WriteTrace | undefined
  /** Answered at the commit, not after the fsync (RunOptions.durable false). */
  eager: boolean
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
  const sync = options.sync ?? wal?.sync ?? (async () => {})
  // A checkpoint holds the writer's batches while it runs (see createCheckpointer), then resumes it.
  const resume = (): void => { if (queue.length > 0 && scheduled === null) schedule() }
  const checkpointer = path === ':memory:'
    ? null
    : createCheckpointer(db, path, options.checkpointIntervalMs ?? CHECKPOINT_INTERVAL_MS, { durable, resume })
  const lockBoundMs = options.lockBoundMs ?? WRITE_LOCK_BOUND_MS
  db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
  // The commit of a batch is fsynced by durable(), off the event loop; and the lock is tried
  // without the busy handler, which would block the event loop while it waits. These settings
  // go through exec() each time: SQLite applies such a PRAGMA while compiling it, so a prepared
  // one did nothing on its first run, and the first batch of every writer ran with the busy
  // handler (up to 100 ms on the event loop behind another process's lock) and fsynced its
  // commit on the event loop (test/storage/sqlite-writer-edges.test.ts, the first write).
  const setting = (sql: string) => (): void => { db.exec(sql) }
  const relaxed = setting('PRAGMA synchronous = NORMAL')
  const strict = setting('PRAGMA synchronous = FULL')
  const noWait = setting('PRAGMA busy_timeout = 0')
  const wait = setting(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
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
    noWait()
    relaxed()
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
    try { strict() } catch { /* see above */ }
    try { wait() } catch { /* see above */ }
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
    // A checkpoint holds the writer (two fsyncs on libuv's pool and a copy): its resume()
    // schedules this again.
    if (queue.length > 0 && checkpointer?.holding() === true) return
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
    // Tracing off (telemetry.writer null): no span, no allocation.
    const tracing = telemetry.writer
    const batchSpan = tracing === null ? undefined : tracing.startBatch(batch.map((p) => p.trace))
    try {
      while (ran < batch.length && lost === null) {
        const p = batch[ran++]!
        let result: unknown
        try {
          savepoint.run()
          result = tracing === null || p.trace === undefined ? p.fn() : tracing.write(p.trace, p.fn)
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
      batchSpan?.end(lost?.error)
    }
    for (const [p, result] of done) if (p.eager) p.resolve(result)
    const durables = done.filter(([p]) => !p.eager)
    if (durables.length > 0) {
      durable().then(
        () => { for (const [p, result] of durables) p.resolve(result) },
        (error: unknown) => { for (const [p] of durables) p.reject(error) }
      )
    }
  }

  return {
    run<T> (fn: () => T, options?: RunOptions): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({
          fn,
          resolve: resolve as (value: unknown) => void,
          reject,
          since: Date.now(),
          trace: telemetry.writer?.capture(),
          eager: options?.durable === false
        })
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
