// The local services the tests and the benchmark lean on (PostgreSQL, Redis, a program such as
// Chromium or wrk), and the one rule for when one is missing:
//
//   a test that needs a service is SKIPPED, with the reason, when the service does not answer,
//   except under CI (the CI variable set, and not "", "0" or "false"), where it FAILS with that
//   reason: CI must never go green by skipping.
//
// The probes take their URL as an argument and read no environment, so bench/ uses them too; the
// tests' URLs (PETSTORE_TEST_DATABASE_URL, PETSTORE_TEST_REDIS_URL) live in stores.ts and
// limiter.ts. The rule reads CI only when the caller does not pass it.
import type { TestContext } from 'node:test'
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
  const client = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 1000, commandTimeout: 1000, retryStrategy: () => null })
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

// ---------------------------------------------------------------------------------------------
// The rule

/** True under CI: the variable set to anything but "", "0" or "false". */
export function underCi (ci: string | undefined): boolean {
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false'
}

/**
 * What a test or suite that needs a service declares. `skip` goes into the test's (or describe's)
 * options; `check()` is the body's first line: under CI, with the service missing, it throws the
 * reason, so the test fails instead of being skipped.
 */
export interface ServiceGate {
  skip: string | false
  check (): void
}

export function serviceGate (reason: string | null, ci: string | undefined = process.env.CI): ServiceGate {
  if (reason === null) return { skip: false, check () {} }
  if (!underCi(ci)) return { skip: reason, check () {} }
  return { skip: false, check () { throw ciFailure(reason) } }
}

/**
 * The same rule inside a running test: true when the service answers; otherwise skips the test
 * and returns false (the caller returns at once) or, under CI, throws the reason.
 */
export function requireService (t: TestContext, reason: string | null, ci: string | undefined = process.env.CI): boolean {
  if (reason === null) return true
  if (!underCi(ci)) {
    t.skip(reason)
    return false
  }
  throw ciFailure(reason)
}

/**
 * For a helper that must return a value: after requireService skipped the test, throw this to end
 * its body. node:test still reports the test as skipped (and the run passes).
 */
export function skippedTestEnd (what: string): Error {
  const error = new Error(`${what}: skipped, the service does not answer`)
  error.stack = error.message
  return error
}

function ciFailure (reason: string): Error {
  const error = new Error(`CI is set, so a missing service fails the test: ${reason}`)
  // The reason is the whole story; a stack into this helper would only hide it.
  error.stack = error.message
  return error
}
