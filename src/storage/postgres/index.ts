// The PostgreSQL engine: every port on one pg pool, shared by the requests of this instance.
import type { Stores } from '../stores.ts'
import { createPostgresCategoryStore } from './categories.ts'
import { createDb, createPool, migratePostgres, type PoolOptions } from './database.ts'
import { createPostgresEventStore } from './events.ts'
import { createPostgresIdempotency } from './idempotency.ts'
import { createPostgresInventoryStore } from './inventory.ts'
import { createPostgresKeyStore } from './keys.ts'
import { createPostgresOrderStore } from './orders.ts'
import { createPostgresPetStore } from './pets.ts'
import { createPostgresWebhookStore } from './webhooks.ts'

export interface PostgresStores extends Stores { readonly engine: 'postgres' }

export interface PostgresStoresOptions extends PoolOptions {
  /** Apply pending migrations first, under an advisory lock (default true). */
  migrate?: boolean
}

/**
 * Applies migrations unless told not to, opens the pool and checks that the database answers,
 * so a wrong URL or a database that is down fails here, at start, not on the first request.
 * Rejects with the driver's error (infra.ts turns it into one clear line).
 */
export async function createPostgresStores (url: string, options: PostgresStoresOptions = {}): Promise<PostgresStores> {
  const poolOptions: PoolOptions = {
    ...(options.poolMax !== undefined && { poolMax: options.poolMax }),
    ...(options.schema !== undefined && { schema: options.schema })
  }
  if (options.migrate !== false) await migratePostgres(url, poolOptions)
  const pool = createPool(url, poolOptions)
  const db = createDb(pool)
  try {
    await db.query('SELECT 1')
  } catch (error) {
    await pool.end().catch(() => {})
    throw error
  }
  const idempotency = createPostgresIdempotency(db)
  let closing: Promise<void> | null = null
  return {
    engine: 'postgres',
    pets: createPostgresPetStore(db, idempotency),
    categories: createPostgresCategoryStore(db),
    orders: createPostgresOrderStore(db, idempotency),
    inventory: createPostgresInventoryStore(db),
    keys: createPostgresKeyStore(db),
    events: createPostgresEventStore(db),
    webhooks: createPostgresWebhookStore(db),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async ping () { await db.query('SELECT 1') },
    /** Waits for the connections in use to be released, then closes them all. Idempotent. */
    async close () { closing ??= pool.end(); await closing }
  }
}
