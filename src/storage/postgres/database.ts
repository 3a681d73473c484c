// The pg pool, the one way the stores talk to it (query / transaction), and the migrations.
import { availableParallelism } from 'node:os'
import pg from 'pg'
import type { PoolClient, QueryResultRow } from 'pg'
import type { ActorContext, ActorSource } from '../../shared/actor-context.ts'
import { refuseNewerSchema } from '../checks.ts'
import { isRetryable, isUnavailable, toStoreError } from './errors.ts'
import { POSTGRES_MIGRATIONS } from './migrations.ts'

export interface PoolOptions {
  /** Most connections this process opens (default: defaultPoolMax()). */
  poolMax?: number
  /** Schema to work in (search_path); tests use one fresh schema each. Default: the server's. */
  schema?: string
}

/**
 * The pool sized to the machine: 4 connections per CPU of this process, from 4 to 16 (8 on 2
 * CPUs). A connection is busy for a round trip and, on a write, the commit's WAL flush; with
 * PostgreSQL beside us on the same cores, more connections than that only queue inside the
 * server (measured in docs/performance.md, "PostgreSQL orders"), and PostgreSQL's default
 * max_connections (100) is shared by every instance, the CLI and admin sessions.
 * DATABASE_POOL_MAX overrides it (a remote database with spare cores may want more).
 */
export function defaultPoolMax (cpus: number = availableParallelism()): number {
  return Math.min(16, Math.max(4, cpus * 4))
}

/** Connection settings; each bound keeps a dead or stuck database from hanging a request. */
export const POOL_DEFAULTS = {
  /** A new connection (or a free one, when all are busy) within 2 s, else 503: bounded, never a hang. */
  connectionTimeoutMillis: 2000,
  /** Idle connections close after 30 s, so a quiet instance does not hold server slots. */
  idleTimeoutMillis: 30_000,
  /** Server side: no statement runs longer than 5 s (it is cancelled; the request gets 503). */
  statementTimeoutMillis: 5000,
  /** Server side: a connection idle inside a transaction (a bug, a lost client) drops its locks. */
  idleInTransactionTimeoutMillis: 10_000,
  /** Client side: a server that stops answering (network gone, no RST) frees the request too. */
  queryTimeoutMillis: 6000
} as const

/**
 * BIGINT (int8, oid 20) arrives as a string by default, since it may exceed 2^53. Our ids and
 * epoch-ms times stay far below, so they are parsed as numbers for this pool only (not through
 * pg.types, which would change every pool in the process).
 */
const INT8_OID = 20
const types = {
  getTypeParser (oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary') return (value: string) => Number(value)
    return pg.types.getTypeParser(oid, format as 'text')
  }
}

/** The connection settings shared by the pool and the migration connection. */
export function connectionConfig (url: string, options: PoolOptions = {}): pg.ClientConfig {
  const schema = options.schema
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error('schema must be a lower-case SQL identifier')
  // A connection string's own settings override the config's, so the search path is added to
  // the URL's `options` parameter rather than beside it.
  let connectionString = url
  if (schema !== undefined) {
    const u = new URL(url)
    u.searchParams.set('options', `${u.searchParams.get('options') ?? ''} -c search_path=${schema}`.trim())
    connectionString = u.toString()
  }
  return {
    connectionString,
    connectionTimeoutMillis: POOL_DEFAULTS.connectionTimeoutMillis,
    statement_timeout: POOL_DEFAULTS.statementTimeoutMillis,
    idle_in_transaction_session_timeout: POOL_DEFAULTS.idleInTransactionTimeoutMillis,
    query_timeout: POOL_DEFAULTS.queryTimeoutMillis,
    application_name: 'petstore-api',
    keepAlive: true,
    types
  }
}

export function createPool (url: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    ...connectionConfig(url, options),
    max: options.poolMax ?? defaultPoolMax(),
    idleTimeoutMillis: POOL_DEFAULTS.idleTimeoutMillis
  })
  // An idle connection that dies (server restart, network cut) is dropped from the pool, which
  // then emits 'error'. Without a listener that would crash the process; the next checkout
  // simply opens a new connection, which is how the pool recovers by itself.
  pool.on('error', () => {})
  return pool
}

/** A connection inside a transaction. */
export interface Tx {
  /**
   * Who makes the change (shared/actor-context.ts): the engine's ActorSource read when the
   * transaction began, in its caller's context. The audit door (audit.ts) records it.
   */
  readonly actor: ActorContext
  query<R extends QueryResultRow = QueryResultRow> (sql: string, params?: unknown[]): Promise<R[]>
  /** The first row, or undefined. */
  first<R extends QueryResultRow = QueryResultRow> (sql: string, params?: unknown[]): Promise<R | undefined>
}

export interface Db extends Tx {
  /**
   * One statement outside any transaction, as a named prepared statement (parsed and planned
   * once per connection, then only bound and run): for the hot statements that are a whole
   * operation on their own, such as place_order. A deadlock or serialization failure runs it
   * again, up to 3 times, like a transaction.
   */
  statement<R extends QueryResultRow = QueryResultRow> (name: string, sql: string, params: unknown[]): Promise<R[]>
  /**
   * Runs fn between BEGIN and COMMIT on one connection of the pool (READ COMMITTED; methods
   * lock the rows they read then change with SELECT ... FOR UPDATE). A deadlock or
   * serialization failure runs the whole transaction again, up to 3 times.
   */
  transaction<T> (fn: (tx: Tx) => Promise<T>): Promise<T>
  readonly pool: pg.Pool
}

const MAX_ATTEMPTS = 3

/** `actor`: who makes a change, read when each transaction begins (Tx.actor). */
export function createDb (pool: pg.Pool, actor: ActorSource): Db {
  // One statement on its own is a transaction of its own: a deadlock or serialization failure
  // rolled all of it back, so it runs again like a transaction (a webhook's DELETE cascading to
  // deliveries the dispatcher holds was a 500).
  async function query<R extends QueryResultRow> (sql: string, params?: unknown[]): Promise<R[]> {
    for (let n = 1; ; n++) {
      try {
        return (await pool.query<R>(sql, params)).rows
      } catch (error) {
        if (n < MAX_ATTEMPTS && isRetryable(error)) continue
        throw toStoreError(error)
      }
    }
  }

  async function attempt<T> (fn: (tx: Tx) => Promise<T>): Promise<T> {
    const by = actor()
    let client: PoolClient
    try {
      client = await pool.connect()
    } catch (error) {
      throw toStoreError(error)
    }
    // A checked-out connection has no error listener of the pool's: without this one, the
    // connection dying between two statements would be an uncaught 'error' event.
    let broken: unknown = null
    const onError = (error: unknown) => { broken = error }
    client.on('error', onError)
    const tx: Tx = {
      actor: by,
      async query<R extends QueryResultRow> (sql: string, params?: unknown[]) {
        return (await client.query<R>(sql, params)).rows
      },
      async first<R extends QueryResultRow> (sql: string, params?: unknown[]) {
        return (await client.query<R>(sql, params)).rows[0]
      }
    }
    try {
      await client.query('BEGIN')
      const result = await fn(tx)
      await client.query('COMMIT')
      return result
    } catch (error) {
      if (broken === null && !isUnavailable(error)) {
        await client.query('ROLLBACK').catch((rollbackError: unknown) => { broken = rollbackError })
      } else {
        broken ??= error
      }
      throw error
    } finally {
      client.off('error', onError)
      // A connection in an unknown state is destroyed, not reused.
      client.release(broken === null ? undefined : (broken as Error))
    }
  }

  return {
    pool,
    get actor () { return actor() },
    query,
    async statement<R extends QueryResultRow> (name: string, sql: string, params: unknown[]) {
      for (let n = 1; ; n++) {
        try {
          return (await pool.query<R>({ name, text: sql, values: params })).rows
        } catch (error) {
          if (n < MAX_ATTEMPTS && isRetryable(error)) continue
          throw toStoreError(error)
        }
      }
    },
    async first<R extends QueryResultRow> (sql: string, params?: unknown[]) { return (await query<R>(sql, params))[0] },
    async transaction (fn) {
      for (let n = 1; ; n++) {
        try {
          return await attempt(fn)
        } catch (error) {
          if (n < MAX_ATTEMPTS && isRetryable(error)) continue
          throw toStoreError(error)
        }
      }
    }
  }
}

/** Key of the advisory lock that serializes migrations (with the schema: see migratePostgres). */
const MIGRATION_LOCK = 0x7065_7473 // "pets"

/**
 * Applies the pending migrations in one transaction that first takes a transaction-level
 * advisory lock (this constant and a hash of the current schema, so test schemas do not queue
 * behind each other): instances starting together queue on the lock, and each one after the
 * first finds nothing left to do. COMMIT or ROLLBACK releases the lock, even if the process
 * dies. It runs on its own connection without the request timeouts: a migration may rewrite a
 * large table, and waiting for another instance's migration is the point of the lock.
 */
export async function migratePostgres (url: string, options: PoolOptions = {}): Promise<{ from: number; to: number }> {
  const { query_timeout: _q, statement_timeout: _s, ...config } = connectionConfig(url, options)
  const client = new pg.Client({ ...config, application_name: 'petstore-api migrate' })
  let broken = false
  client.on('error', () => { broken = true })
  await client.connect()
  try {
    await client.query('BEGIN')
    try {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), \'\')))', [MIGRATION_LOCK])
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version    integer PRIMARY KEY,
        applied_at bigint  NOT NULL -- epoch ms
      )`)
      const row = (await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations')).rows[0]
      const from = row?.version ?? 0
      refuseNewerSchema(from, POSTGRES_MIGRATIONS.length)
      for (let v = from; v < POSTGRES_MIGRATIONS.length; v++) {
        await client.query(POSTGRES_MIGRATIONS[v]!)
        await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [v + 1, Date.now()])
      }
      await client.query('COMMIT')
      return { from, to: POSTGRES_MIGRATIONS.length }
    } catch (error) {
      if (!broken) await client.query('ROLLBACK').catch(() => {})
      throw error
    }
  } finally {
    await client.end().catch(() => {})
  }
}
