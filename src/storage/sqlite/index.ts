// The SQLite engine: every port on one node:sqlite connection.
import type { Stores } from '../stores.ts'
import { createSqliteCategoryStore } from './categories.ts'
import { walBytes } from './checkpoint.ts'
import { migrateSqlite, openSqlite } from './database.ts'
import { createSqliteEventLog, createSqliteEventStore } from './events.ts'
import { createSqliteIdempotency } from './idempotency.ts'
import { createSqliteInventoryStore } from './inventory.ts'
import { createSqliteKeyStore } from './keys.ts'
import { createSqliteOrderStore } from './orders.ts'
import { createPetCache, type PetCacheOptions } from './pet-cache.ts'
import { createSqlitePetStore } from './pets.ts'
import { createSqliteWebhookStore } from './webhooks.ts'
import { createWriter, type WriterOptions } from './writer.ts'

export interface SqliteStores extends Stores { readonly engine: 'sqlite' }

/** Opens the file (or ':memory:'), applies migrations unless told not to, and builds the stores. */
export function createSqliteStores (path: string, options: { migrate?: boolean; petCache?: PetCacheOptions } & WriterOptions = {}): SqliteStores {
  const db = openSqlite(path)
  if (options.migrate !== false) migrateSqlite(db)
  // Writes of the catalogue and of orders go through the writer (writer.ts): durable commits
  // that never block the event loop on the disk or on another process's lock.
  const writer = createWriter(db, path, options)
  const idempotency = createSqliteIdempotency(db)
  const pets = createPetCache(db, options.petCache)
  const ping = db.prepare('SELECT 1')
  // The outbox every store appends its events to, inside the writer's callback (events.ts).
  const eventLog = createSqliteEventLog(db)
  return {
    engine: 'sqlite',
    pets: createSqlitePetStore(db, writer, idempotency, pets, eventLog),
    categories: createSqliteCategoryStore(db, writer, eventLog),
    orders: createSqliteOrderStore(db, writer, idempotency, pets, eventLog),
    inventory: createSqliteInventoryStore(db, writer, pets, eventLog),
    keys: createSqliteKeyStore(db, eventLog),
    events: createSqliteEventStore(db, writer),
    webhooks: createSqliteWebhookStore(db, writer),
    async ping () { ping.get() },
    walBytes: () => walBytes(path),
    async close () {
      await writer.close()
      if (db.isOpen) db.close()
    }
  }
}
