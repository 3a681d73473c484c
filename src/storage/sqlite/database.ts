// Opening SQLite through node:sqlite, its pragmas, its migrations, and its synchronous
// transaction. The write path of the stores (group commit) is in writer.ts, the WAL checkpoint
// in checkpoint.ts.
import { DatabaseSync } from 'node:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { ServiceUnavailableError } from '../../errors.ts'
import { refuseNewerSchema } from '../checks.ts'
import { searchFold } from '../key-filters.ts'
import { SQLITE_MIGRATIONS } from './migrations.ts'

export type Db = DatabaseSync

/**
 * How long a statement run outside the writer (reads, the synchronous `transaction`, the CLI)
 * may wait, blocking, for a lock another connection holds. In WAL mode readers never wait for a
 * writer, so reads hardly ever use it; a synchronous write that still finds the file locked
 * after it answers 503 (see `transaction`). Short, because it blocks the event loop.
 */
export const BUSY_TIMEOUT_MS = 100

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
  // The writer runs each write of a group commit in a savepoint of its own; SQLite keeps what a
  // savepoint would undo in a sub-journal, which past 64 KiB spills to a temporary file: about
  // 20 pwrite calls per order in a batch of 20 (docs/performance.md, "Orders"). In memory, it is
  // freed at each commit; the few sorts without an index (bounded pages) stay in memory too.
  db.exec('PRAGMA temp_store = MEMORY')
  // SQLite's lower() folds ASCII only: the key search's fold instead (key-filters.ts), with which
  // the migration that added api_keys.search_name filled it for the keys already there.
  db.function('lower', { deterministic: true }, (text) => typeof text === 'string' ? searchFold(text) : text)
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

/** The 503 of a write that could not take the lock another process holds. */
export const locked = (cause: unknown): ServiceUnavailableError => {
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
