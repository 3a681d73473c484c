// The PostgreSQL engine: every port of stores.ts's list on one pg pool, shared by this instance's requests.
import { buildPorts, type Stores } from '../stores.ts'
import { createDb, createPool, migratePostgres, type PoolOptions } from './database.ts'
import { createPostgresIdempotency } from './idempotency.ts'
import { currentActor } from '../../shared/actor-context.ts'

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
  // Each transaction takes the actor of its caller when it begins (database.ts, Tx.actor).
  const db = createDb(pool, currentActor)
  try {
    await db.query('SELECT 1')
  } catch (error) {
    await pool.end().catch(() => {})
    throw error
  }
  let closing: Promise<void> | null = null
  return {
    engine: 'postgres',
    // Every port of stores.ts's list, on this pool.
    ...buildPorts('postgres', { db, idempotency: createPostgresIdempotency(db) }),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async ping () { await db.query('SELECT 1') },
    /** Waits for the connections in use to be released, then closes them all. Idempotent. */
    async close () { closing ??= pool.end(); await closing }
  }
}
