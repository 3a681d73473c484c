// The one module that reads configuration. loadConfig is a pure function of an environment
// object, so tests build a Config from a literal and the entry passes process.env.

export interface Config {
  host: string
  port: number
  database: DatabaseConfig
  redisUrl: string | null
  /** Instant after which GET /pets/{petId} answers 410 (PETSTORE_GET_PET_SUNSET). */
  getPetSunset: Date
  corsOrigins: '*' | string[]
  logLevel: LogLevel
  /** Fastify's trustProxy: whether X-Forwarded-For names the client (behind a load balancer). */
  trustProxy: boolean | number | string
  /** The most rate-limit subjects (keys and client addresses) one process holds in memory (RATE_LIMIT_MAX_SUBJECTS). */
  limiterMaxSubjects: number
}

export type DatabaseConfig =
  | { kind: 'sqlite'; path: string } // path ':memory:' for an in-memory database
  | { kind: 'postgres'; url: string }

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/**
 * The default sunset of GET /pets/{petId}: fixed in code (not "now + 6 months", which would move
 * on every restart and make the announced date a lie). About six months after the 1.0.0 release.
 */
export const DEFAULT_GET_PET_SUNSET = '2027-05-21T00:00:00Z'

export class ConfigError extends Error {
  readonly problems: string[]
  constructor (problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

/** Builds a validated Config, or throws one ConfigError that lists every problem at once. */
export function loadConfig (env: Record<string, string | undefined>): Config {
  const problems: string[] = []

  const host = env.HOST?.trim() || '127.0.0.1'

  let port = 3000
  if (env.PORT !== undefined && env.PORT !== '') {
    port = Number(env.PORT)
    if (!/^\d+$/.test(env.PORT) || port > 65535) {
      problems.push(`PORT must be an integer from 0 to 65535, got "${env.PORT}"`)
    }
  }

  const database = parseDatabaseUrl(env.DATABASE_URL ?? 'sqlite:./data/petstore.db', problems)

  let redisUrl: string | null = null
  if (env.REDIS_URL !== undefined && env.REDIS_URL !== '') {
    if (/^rediss?:\/\//.test(env.REDIS_URL)) redisUrl = env.REDIS_URL
    else problems.push('REDIS_URL must start with redis:// or rediss://')
  }

  let getPetSunset = new Date(DEFAULT_GET_PET_SUNSET)
  if (env.PETSTORE_GET_PET_SUNSET !== undefined && env.PETSTORE_GET_PET_SUNSET !== '') {
    const parsed = parseIsoInstant(env.PETSTORE_GET_PET_SUNSET)
    if (parsed === null) {
      problems.push(`PETSTORE_GET_PET_SUNSET must be an ISO 8601 instant such as 2027-05-21T00:00:00Z, got "${env.PETSTORE_GET_PET_SUNSET}"`)
    } else {
      getPetSunset = parsed
    }
  }

  let corsOrigins: '*' | string[] = '*'
  const rawOrigins = env.CORS_ORIGINS?.trim()
  if (rawOrigins !== undefined && rawOrigins !== '' && rawOrigins !== '*') {
    corsOrigins = rawOrigins.split(',').map((o) => o.trim()).filter((o) => o !== '')
    for (const origin of corsOrigins) {
      if (!/^https?:\/\/[^/\s]+$/.test(origin)) problems.push(`CORS_ORIGINS entries must be origins like https://shop.example, got "${origin}"`)
    }
  }

  const logLevel = (env.LOG_LEVEL?.trim() || 'info') as LogLevel
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`)

  let trustProxy: boolean | number | string = false
  const rawTrust = env.TRUST_PROXY?.trim()
  if (rawTrust !== undefined && rawTrust !== '') {
    if (rawTrust === 'true' || rawTrust === 'false') trustProxy = rawTrust === 'true'
    else if (/^\d+$/.test(rawTrust)) trustProxy = Number(rawTrust)
    else if (/^[0-9a-fA-F.:/,\s]+$/.test(rawTrust)) trustProxy = rawTrust
    else problems.push(`TRUST_PROXY must be true, false, a hop count or a list of addresses, got "${rawTrust}"`)
  }

  const limiterMaxSubjects = readInteger(env, 'RATE_LIMIT_MAX_SUBJECTS', 100_000, 1_000, 10_000_000, problems)

  if (problems.length > 0) throw new ConfigError(problems)
  return { host, port, database, redisUrl, getPetSunset, corsOrigins, logLevel, trustProxy, limiterMaxSubjects }
}

/** A whole number from `min` to `max`, or `fallback` when the variable is unset or empty. */
export function readInteger (env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number, problems: string[]): number {
  const raw = env[name]?.trim()
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`)
    return fallback
  }
  return value
}

function parseDatabaseUrl (url: string, problems: string[]): DatabaseConfig {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length)
    if (path === '') problems.push('DATABASE_URL sqlite: needs a path, e.g. sqlite:./data/petstore.db or sqlite::memory:')
    return { kind: 'sqlite', path }
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url)
    } catch {
      problems.push('DATABASE_URL is not a valid postgres:// URL')
    }
    return { kind: 'postgres', url }
  }
  // Never echo the value: it may carry a password.
  problems.push('DATABASE_URL must start with sqlite: or postgres://')
  return { kind: 'sqlite', path: ':memory:' }
}

/** Strict ISO 8601 instant with a date, a time and an offset (a bare date is ambiguous). */
export function parseIsoInstant (text: string): Date | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) return null
  const date = new Date(text)
  if (Number.isNaN(date.getTime())) return null
  // Reject dates that Date silently rolls over (2027-02-30 becomes March 2).
  const [y, m, d] = text.slice(0, 10).split('-').map(Number)
  const check = new Date(Date.UTC(y!, m! - 1, d!))
  if (check.getUTCMonth() !== m! - 1 || check.getUTCDate() !== d!) return null
  return date
}

/** Postgres URLs carry passwords; this form is safe for logs and error lines. */
export function describeDatabase (db: DatabaseConfig): string {
  if (db.kind === 'sqlite') return `sqlite:${db.path}`
  try {
    const u = new URL(db.url)
    return `postgres://${u.hostname}${u.port ? ':' + u.port : ''}${u.pathname}`
  } catch {
    return 'postgres://(invalid)'
  }
}
