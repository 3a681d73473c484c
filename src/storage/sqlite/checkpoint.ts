// The WAL checkpoint of the SQLite stores, on the serving thread, its fsyncs on libuv's pool.
import { closeSync, fsync, openSync, statSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import type { Db } from './database.ts'

/**
 * How often the WAL is checkpointed. SQLite's own automatic checkpoint (every 1000 pages, about
 * 4 MiB) ran inside the committing call, on the event loop, with its fsyncs: a stall of its own
 * while orders flow (issue 20). A checkpoint every 100 ms (createCheckpointer) copies what the
 * last 100 ms wrote, and keeps the WAL near WAL_SIZE_LIMIT_BYTES at any write rate.
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

export interface CheckpointHooks {
  /**
   * Resolves once an fsync of the WAL that began after the call has completed (the writer's group
   * fsync): every frame committed before the call is then durable.
   */
  durable: () => Promise<void>
  /** Told when the writer may commit again (see Checkpointer.holding). */
  resume: () => void
}

/**
 * The WAL checkpoint, without a thread of its own (a worker's isolate cost about 10 MiB of
 * resident memory, docs/performance.md "Memory"). SQLite's automatic checkpoint is turned off on
 * the serving connection (wal_autocheckpoint=0). Every intervalMs, when anything was committed
 * since the last one, a checkpoint runs in four steps; only the third is on the event loop:
 * 1. A connection of its own (the pin) starts a read transaction: its snapshot, frames 1..M of
 *    the WAL, bounds what step 3 copies, and while it lasts no writer starts the WAL over.
 * 2. The writer's group fsync makes frames 1..M durable, on libuv's pool.
 * 3. A PASSIVE checkpoint on the serving connection with synchronous=OFF copies frames 1..M (no
 *    later one: the pin still reads them from the WAL) into the database file without an fsync,
 *    each being durable already. Page copies into the page cache, no disk wait; no statement of
 *    this process can be reading meanwhile (node:sqlite is synchronous).
 * 4. The database file is fsynced, on libuv's pool, then the pin ends: only now may the writer
 *    start the WAL over, when every frame is in the file (nothing was committed after M).
 * Writes go on meanwhile, so under a steady stream of them the WAL is never copied whole and
 * never starts over. Once it passes WAL_SIZE_LIMIT_BYTES the writer also holds its batches
 * (holding()) from step 1 to the end of step 4: nothing of the writer's is appended after M, every
 * frame is copied, and its next commit starts the WAL over and truncates it to the limit. The
 * write lock is not taken: a synchronous transaction() on the serving connection (keys, usage)
 * would wait for it in SQLite's busy handler, blocking the very event loop that must end the
 * checkpoint. Such a commit, or another process's, made meanwhile comes after M: it is not
 * copied and stays in the WAL, which then starts over at a later checkpoint.
 * An acknowledged write is thus, at every instant, durable in the WAL or in the database file,
 * as with SQLite's own checkpoint at synchronous=FULL. The timer does not keep the process
 * alive; until a tick, the WAL holds the commits durably, and the last connection to close
 * checkpoints it.
 */
export interface Checkpointer {
  /** True while a checkpoint holds the writer (the WAL past its limit): it keeps its batches until resume(). */
  holding (): boolean
  close (): Promise<void>
}

export function createCheckpointer (
  db: Db,
  path: string,
  intervalMs: number,
  hooks: CheckpointHooks = { durable: async () => {}, resume: () => {} }
): Checkpointer {
  db.exec('PRAGMA wal_autocheckpoint = 0')
  db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`)
  if (intervalMs <= 0) return { holding: () => false, async close () {} }
  const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)')
  // Opened at the first tick that finds a commit: a CLI command that ends sooner never opens it.
  let pin: { db: DatabaseSync; version: () => number; read: () => void; fd: number } | null = null
  let lastVersion = -1
  let holding = false
  let closed = false
  let running: Promise<void> | null = null

  const open = (): NonNullable<typeof pin> => {
    const own = new DatabaseSync(path)
    try {
      own.exec('PRAGMA busy_timeout = 0')
      const dataVersion = own.prepare('PRAGMA data_version')
      const read = own.prepare('SELECT count(*) FROM sqlite_schema')
      return {
        db: own,
        version: () => Number(Object.values(dataVersion.get()!)[0]),
        read: () => { read.get() },
        // The database file, fsynced in step 4 (fsync flushes it whichever descriptor names it).
        fd: openSync(path, 'r')
      }
    } catch (error) {
      own.close()
      throw error
    }
  }

  async function checkpoint (): Promise<void> {
    pin ??= open()
    // data_version changes when another connection (the serving one, another process's) commits.
    const version = pin.version()
    if (version === lastVersion) return
    const whole = walBytes(path) > WAL_SIZE_LIMIT_BYTES
    try {
      pin.db.exec('BEGIN')
      pin.read()
    } catch (error) {
      if (pin.db.isTransaction) pin.db.exec('ROLLBACK')
      throw error
    }
    holding = whole
    try {
      await hooks.durable()
      if (closed) return
      db.exec('PRAGMA synchronous = OFF')
      try {
        passive.get()
      } finally {
        db.exec('PRAGMA synchronous = FULL')
      }
      const fd = pin.fd
      await new Promise<void>((resolve, reject) => fsync(fd, (error) => {
        if (error === null) resolve()
        else reject(error)
      }))
      lastVersion = version
    } finally {
      try { pin.db.exec('ROLLBACK') } catch { /* not in a transaction */ }
      if (holding) {
        holding = false
        hooks.resume()
      }
    }
  }

  const tick = (): void => {
    if (running !== null || closed) return
    // A failed checkpoint (the file vanished, the disk is full) is tried again at the next tick;
    // the WAL keeps the commits meanwhile.
    running = checkpoint().catch(() => {}).finally(() => { running = null })
  }
  // Not a job (src/jobs/): it stands in for SQLite's automatic checkpoint, turned off above, so it
  // lives exactly as long as this connection, in every process that opens it (the CLI, tests),
  // and stops only when the stores close, after the last write of the jobs' stop.
  // eslint-disable-next-line local/no-repeating-timer -- the engine's own checkpoint, see above
  const timer = setInterval(tick, intervalMs)
  timer.unref()
  return {
    holding: () => holding,
    async close () {
      closed = true
      clearInterval(timer)
      await running
      if (pin !== null) {
        closeSync(pin.fd)
        pin.db.close()
        pin = null
      }
    }
  }
}
