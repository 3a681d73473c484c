// Helpers of the SQLite writer's tests (sqlite-writer-paths, -failures and -edges): a database file
// with a table t(x), its rows read through another connection, and the event-loop turns and
// promise outcomes the tests wait on instead of sleeping.
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import type { TestContext } from 'node:test'
import { AppError } from '../../../src/errors.ts'
import { openSqlite, type Db } from '../../../src/storage/sqlite/database.ts'
import { tempDir } from '../../helpers/temp.ts'

/** A database file with a table t(x), closed after the test. */
export function file (t: TestContext): { db: Db; path: string } {
  const path = join(tempDir(t, 'petstore-writer-'), 'petstore.db')
  const db = openSqlite(path)
  db.exec('CREATE TABLE t (x TEXT)')
  t.after(() => { if (db.isOpen) db.close() })
  return { db, path }
}

/** A write of one row of t; it returns the row's id. */
export const insert = (db: Db, x: string) => (): number => Number(db.prepare('INSERT INTO t (x) VALUES (?)').run(x).lastInsertRowid)

/** The x of every row of t, in order, read through a connection of its own (what is committed). */
export function rows (path: string): unknown[] {
  const other = new DatabaseSync(path)
  try {
    return other.prepare('SELECT x FROM t ORDER BY rowid').all().map((row) => row.x)
  } finally {
    other.close()
  }
}

/** Lets every pending immediate and promise callback run, `count` times over. */
export async function turns (count = 20): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** Records how a promise settled, so a test can assert that it did (or not yet) instead of hanging on it. */
export function watch<T> (promise: Promise<T>): { outcome: string | null } {
  const state: { outcome: string | null } = { outcome: null }
  promise.then(
    (value) => { state.outcome = `ok ${String(value)}` },
    (error: unknown) => { state.outcome = `error ${error instanceof AppError ? error.code : (error as Error).message}` }
  )
  return state
}

/** The rows of table t in the database at `path`, read by a connection of its own (what another process would see). */
export const countRows = (path: string): number => {
  const other = new DatabaseSync(path)
  try {
    return Number(other.prepare('SELECT count(*) AS n FROM t').get()?.n)
  } finally {
    other.close()
  }
}
