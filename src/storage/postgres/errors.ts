// What a pg failure means to the API. Two kinds matter:
// - the database cannot serve us (refused, reset, timed out, shutting down, out of connections,
//   a statement cut by statement_timeout...): ServiceUnavailableError, a 503 with Retry-After,
//   so clients retry and readiness reports it, never a 500;
// - a constraint the schema enforces: the caller names the AppError each constraint means
//   (the same codes the SQLite engine throws from its own checks).
// Driver and SQL messages never reach an AppError message; they travel as `cause`, to the log.
import { AppError, ServiceUnavailableError } from '../../errors.ts'

/** Node socket errors that mean "no database at the other end right now". */
const NETWORK_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN',
  'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED'
])

/**
 * SQLSTATEs (https://www.postgresql.org/docs/current/errcodes-appendix.html) after which a retry
 * later can succeed: 08 connection exception, 53 insufficient resources (too many connections,
 * disk full), 57P01-57P05 shutdown and crash, 57014 statement_timeout, 55P03 lock_timeout,
 * 28 authentication (a rotated password, fixed by the operator), 3D000 database missing.
 */
function isTransientSqlState (code: string): boolean {
  return code.startsWith('08') || code.startsWith('53') || code.startsWith('28')
    || /^57P0[1-5]$/.test(code) || code === '57014' || code === '55P03' || code === '3D000'
}

/** Errors pg and pg-pool raise without a code when the connection is gone or never came. */
const DRIVER_MESSAGES = [
  'timeout exceeded when trying to connect', // pool: no connection within connectionTimeoutMillis
  'timeout expired', // a client of its own (migrations, the CLI): its connect timeout passed
  'Connection terminated', // socket closed, also "... due to connection timeout" and "... unexpectedly"
  'Query read timeout', // query_timeout: the server stopped answering
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool'
]

/** True when the error says the database is unreachable or cannot serve now (see above). */
export function isUnavailable (error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  if (error instanceof AggregateError && error.errors.some(isUnavailable)) return true // dual-stack connect
  const { code, message } = error as { code?: unknown; message?: unknown }
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isTransientSqlState(code)))) return true
  return typeof message === 'string' && DRIVER_MESSAGES.some((m) => message.startsWith(m))
}

/**
 * At start: true when the database may answer if we wait a little (no route, refused, timed out,
 * starting up, out of connections), false when waiting cannot help (a wrong password or database
 * name, a missing permission, a bug): those fail at once, so a typo is not a 30 s silence.
 */
export function isWorthWaitingFor (error: unknown): boolean {
  if (!isUnavailable(error)) return false
  const code = (error as { code?: unknown } | null)?.code
  return !(typeof code === 'string' && (code.startsWith('28') || code === '3D000'))
}

/** Deadlock or serialization failure: the transaction did nothing and can simply run again. */
export function isRetryable (error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '40P01' || code === '40001'
}

/** Turns a failure of the database into the error the API reports; AppErrors pass through. */
export function toStoreError (error: unknown): unknown {
  if (error instanceof AppError) return error
  if (isUnavailable(error)) return new ServiceUnavailableError('the database is unavailable; retry shortly', error)
  return error // a bug (bad SQL, a constraint nobody mapped): the handler makes it a logged 500
}

/**
 * Maps constraint violations (23xxx, by constraint name) to the AppError each means in the
 * calling method, and rethrows anything else. Use as `.catch(onConstraint({ name: () => err }))`.
 */
export function onConstraint (map: Record<string, () => AppError>): (error: unknown) => never {
  return (error) => {
    const { code, constraint } = error as { code?: unknown; constraint?: unknown }
    if (typeof code === 'string' && code.startsWith('23') && typeof constraint === 'string') {
      const make = map[constraint]
      if (make !== undefined) {
        const appError = make()
        throw new AppError(appError.code, appError.message, { cause: error })
      }
    }
    throw error
  }
}

/**
 * One line for an operator when the database cannot be opened at start: what went wrong, never
 * the password (pg's own messages name at most the user and the database).
 */
export function describeOpenFailure (error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  const first = error instanceof AggregateError ? (error.errors[0] as { code?: unknown } | undefined)?.code : undefined
  const c = typeof code === 'string' ? code : typeof first === 'string' ? first : ''
  if (c === 'ECONNREFUSED') return 'connection refused (is PostgreSQL running and listening there?)'
  if (c === 'ENOTFOUND' || c === 'EAI_AGAIN') return 'the host name does not resolve'
  if (c === 'ETIMEDOUT' || c === 'EHOSTUNREACH' || c === 'ENETUNREACH') return 'the host is unreachable'
  if (c === '28P01' || c === '28000') return 'authentication failed (check the user and password)'
  if (c === '3D000') return 'the database does not exist'
  if (c === '57P03') return 'the server is starting up or shutting down'
  if (c === '53300') return 'the server has no free connections'
  if (c === '42501') return 'permission denied (the user may not create or use the schema)'
  if (typeof message === 'string' && /^timeout (exceeded when trying to connect|expired)/.test(message)) return 'no connection within the connect timeout'
  if (typeof message === 'string' && message.startsWith('Connection terminated')) return 'the server closed the connection'
  if (typeof message === 'string' && /^[\w ,.()'"-]{1,200}$/.test(message) && !/password/i.test(message)) return message
  return c !== '' ? `error ${c}` : 'unexpected error'
}
