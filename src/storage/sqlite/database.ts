// Opening SQLite through node:sqlite, its pragmas and its migrations.
import { DatabaseSync } from 'node:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { SQLITE_MIGRATIONS } from './migrations.ts'

export type Db = DatabaseSync

/**
 * WAL lets readers run beside the writer; synchronous=FULL makes every acknowledged commit
 * durable even across a power loss (NORMAL would only survive a process crash), which
 * docs/product.md 8.6 ("an acknowledged write survives a crash") asks of us. busy_timeout covers the
 * CLI writing while a server runs on the same file.
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
  if (from > SQLITE_MIGRATIONS.length) {
    throw new Error(`the database schema (version ${from}) is newer than this program knows (${SQLITE_MIGRATIONS.length}); upgrade the program`)
  }
  for (let v = from; v < SQLITE_MIGRATIONS.length; v++) {
    transaction(db, () => {
      db.exec(SQLITE_MIGRATIONS[v]!)
      db.exec(`PRAGMA user_version = ${v + 1}`)
    })
  }
  return { from, to: SQLITE_MIGRATIONS.length }
}

/**
 * Runs fn inside BEGIN IMMEDIATE ... COMMIT. node:sqlite is synchronous and every request shares
 * this one connection, so no other request can interleave: a store method that does all its
 * work inside one call is atomic. fn must not await.
 */
export function transaction<T> (db: Db, fn: () => T): T {
  db.exec('BEGIN IMMEDIATE')
  try {
    const result = fn()
    db.exec('COMMIT')
    return result
  } catch (error) {
    db.exec('ROLLBACK')
    throw error
  }
}
