// The local services the tests and the benchmark both lean on (PostgreSQL, Redis): whether one
// answers, and the few things both do with it. Neither bench/ nor src/ imports from test/; the
// tests' helper (test/helpers/services.ts) re-exports these beside its skip-or-fail rule.
//
// The probes take their URL as an argument and read no environment; the tests' URLs
// (PETSTORE_TEST_DATABASE_URL, PETSTORE_TEST_REDIS_URL) live in test/helpers/.
import { Redis } from 'ioredis'
import pg from 'pg'

/** The URL without its password, for messages. */
export function safeUrl (url: string): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.hostname}${u.port ? ':' + u.port : ''}${u.pathname === '/' ? '' : u.pathname}`
  } catch {
    return '(invalid URL)'
  }
}

const describeError = (error: unknown): string => {
  const { code, message } = (error ?? {}) as { code?: string; message?: string }
  return code ?? message ?? String(error)
}

/** Why Redis at `url` cannot be used (one line, no password), or null when it answers PING. */
export async function redisUnavailableReason (url: string): Promise<string | null> {
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    commandTimeout: 1000,
    retryStrategy: () => null
  })
  // The socket's error (ECONNREFUSED) says more than the rejection ("Connection is closed.").
  let socketError: unknown = null
  client.on('error', (error) => { socketError ??= error })
  try {
    await client.connect()
    await client.ping()
    return null
  } catch (error) {
    return `Redis at ${safeUrl(url)} is unreachable (${describeError(socketError ?? error)})`
  } finally {
    client.disconnect()
  }
}

/** Why PostgreSQL at `url` cannot be used (one line, no password), or null when it answers. */
export async function postgresUnavailableReason (url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return null
  } catch (error) {
    return `PostgreSQL at ${safeUrl(url)} is unreachable (${describeError(error)})`
  } finally {
    await client.end().catch(() => {})
  }
}

/** Deletes every key under `prefix` (a test's or a run's own keys on the shared Redis); returns how many. */
export async function deleteRedisKeys (redis: Redis, prefix: string): Promise<number> {
  let cursor = '0'
  let deleted = 0
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) deleted += await redis.del(...keys)
  } while (cursor !== '0')
  return deleted
}

/** A pg client on `url` for one statement or a few (schemas of tests and runs); always closed. */
export async function withPostgres<T> (url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
  client.on('error', () => {})
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end().catch(() => {})
  }
}
