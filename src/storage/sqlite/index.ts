// The SQLite engine: every port on one node:sqlite connection.
import type { Stores } from '../stores.ts'
import { createSqliteCategoryStore } from './categories.ts'
import { migrateSqlite, openSqlite } from './database.ts'
import { createSqliteIdempotency } from './idempotency.ts'
import { createSqliteInventoryStore } from './inventory.ts'
import { createSqliteKeyStore } from './keys.ts'
import { createSqliteOrderStore } from './orders.ts'
import { createSqlitePetStore } from './pets.ts'

export interface SqliteStores extends Stores { readonly engine: 'sqlite' }

/** Opens the file (or ':memory:'), applies migrations unless told not to, and builds the stores. */
export function createSqliteStores (path: string, options: { migrate?: boolean } = {}): SqliteStores {
  const db = openSqlite(path)
  if (options.migrate !== false) migrateSqlite(db)
  const idempotency = createSqliteIdempotency(db)
  const ping = db.prepare('SELECT 1')
  return {
    engine: 'sqlite',
    pets: createSqlitePetStore(db, idempotency),
    categories: createSqliteCategoryStore(db),
    orders: createSqliteOrderStore(db, idempotency),
    inventory: createSqliteInventoryStore(db),
    keys: createSqliteKeyStore(db),
    async ping () { ping.get() },
    async close () { if (db.isOpen) db.close() }
  }
}
