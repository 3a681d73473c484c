// The one module that reads configuration. loadConfig is a pure function of an environment
// object, so tests build a Config from a literal and the entry passes process.env.
import { isIP } from 'node:net'
import { PLAN_ORDER_LIMITS, PLANS, type OrderLimits, type Plan } from './accounts/plans.ts'
import type { OrderSettings } from './orders/orders.service.ts'
import { DEFAULT_LOW_STOCK_THRESHOLD, DEFAULT_ORDER_COOLDOWN_MS, DEFAULT_ORDER_HOLD_MS } from './orders/orders.store.ts'
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from './webhooks/schedule.ts'
import { normalizeAllowedHost } from './webhooks/url-guard.ts'
import type { WebhookSettings } from './webhooks/dispatcher.ts'

export interface Config {
  host: string
  port: number
  database: DatabaseConfig
  redisUrl: string | null
  /** Instant after which GET /pets/{petId} answers 410 (PETSTORE_GET_PET_SUNSET). */
  getPetSunset: Date
  corsOrigins: '*' | string[]
  logLevel: LogLevel
  /** LOG_FORMAT: JSON lines, readable lines, or (auto) readable when standard output is a terminal. */
  logFormat: LogFormat
  /**
   * Which proxies' X-Forwarded-For is believed (Fastify's trustProxy): false (none), a hop count,
   * or the proxies' addresses and CIDRs. Never "any": the client address is the one the nearest
   * untrusted hop was seen from, so a client cannot choose it by sending the header.
   */
  trustProxy: false | number | string[]
  /** The most rate-limit subjects (keys and client addresses) one process holds in memory (RATE_LIMIT_MAX_SUBJECTS). */
  limiterMaxSubjects: number
  /**
   * Most PostgreSQL connections per process (DATABASE_POOL_MAX); null: sized to the machine
   * (storage/postgres/database.ts).
   */
  databasePoolMax: number | null
  /** Connection limits and the stop's grace period (transport/connections.ts, server.ts). */
  server: ServerLimits
  /** The private listener of /metrics (and the probes): METRICS_HOST, METRICS_PORT (transport/ops-listener.ts). */
  metrics: MetricsListener
  /**
   * Open orders: how long one holds its stock, the caps per plan, the cool-down after a cancel or a
   * lapse (docs/product.md rules 9 to 11), and the threshold of inventory.low.
   */
  orders: OrderSettings
  /** The MCP endpoint's loop breaker: the same tool call, per key and minute (MCP_REPEAT_LIMIT). */
  mcp: { repeatLimit: number }
  /** Events: how long they are kept before the prune job deletes them (EVENT_RETENTION_DAYS). */
  events: { retentionDays: number }
  /** Webhook delivery (docs/product.md, webhooks; SECURITY.md). */
  webhooks: WebhookSettings
  /**
   * Each key's own request log (GET /v1/keys/me/requests): REQUEST_LOG=off records nothing and
   * runs no step per request (the bench compares both); what was kept stays readable. `flushMs`
   * (REQUEST_LOG_FLUSH_MS): how often it is written; 0, only at stop and when read.
   */
  requestLog: { enabled: boolean; flushMs: number }
}

export const DEFAULT_EVENT_RETENTION_DAYS = 30
/** Within the second docs/product.md 9.13 promises between an answer and its entry in the request log. */
export const DEFAULT_REQUEST_LOG_FLUSH_MS = 1000

export const DEFAULT_ORDER_HOLD_MINUTES = DEFAULT_ORDER_HOLD_MS / 60_000
export const DEFAULT_ORDER_COOLDOWN_MINUTES = DEFAULT_ORDER_COOLDOWN_MS / 60_000

/**
 * Limits at the edge (docs/product.md section 9), all in milliseconds but the cap. The table of
 * docs/configuration.md gives each default and why; SECURITY.md says what each protects against.
 */
export interface ServerLimits {
  /** The request line and headers must have arrived this long after the request began (HEADERS_TIMEOUT_MS). */
  headersTimeoutMs: number
  /** The whole request, body included, must have arrived this long after it began (REQUEST_TIMEOUT_MS). */
  requestTimeoutMs: number
  /** An idle keep-alive connection is closed after this (KEEP_ALIVE_TIMEOUT_MS). */
  keepAliveTimeoutMs: number
  /**
   * Once an answer has begun, the client must take each part handed to the connection within
   * this (WRITE_TIMEOUT_MS): a client that stops reading is cut, its connection freed.
   */
  writeTimeoutMs: number
  /** Open connections per process; further ones are closed at once (MAX_CONNECTIONS). */
  maxConnections: number
  /**
   * Open connections per client address, an IPv6 address by its /64 (MAX_CONNECTIONS_PER_ADDRESS):
   * below MAX_CONNECTIONS, so that one address cannot hold them all (transport/connections.ts).
   */
  maxConnectionsPerAddress: number
  /** How long a SIGTERM waits for requests in flight before closing their connections (SHUTDOWN_GRACE_MS). */
  shutdownGraceMs: number
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  // The docs bundle (4.35 MB uncompressed, the largest answer) at 1.2 Mbit/s; compressed (what a
  // browser takes) at a tenth of that.
  writeTimeoutMs: 30_000,
  // Longer than the idle timeout of the balancers in front (nginx's upstream keepalive_timeout
  // and AWS ALB's are 60 s), so the balancer closes an idle connection first and never sends a
  // request on one we are closing.
  keepAliveTimeoutMs: 72_000,
  maxConnections: 1000,
  // A tenth of MAX_CONNECTIONS (when that is set, a tenth of its value): a browser opens 6 per
  // origin, a client pool a few dozen; a balancer in front, which is one address for all its
  // clients, needs its pool size here (docs/configuration.md, SECURITY.md).
  maxConnectionsPerAddress: 100,
  shutdownGraceMs: 10_000
}

/** Where /metrics is served, apart from the API (docs/operating.md, "What is exposed"). */
export interface MetricsListener {
  host: string
  /**
   * null: DEFAULT_METRICS_PORT, or any free port when the API's own port is 0 (tests, several
   * processes on one machine).
   */
  port: number | null
}

export const DEFAULT_METRICS_PORT = 9464

export type DatabaseConfig =
  | { kind: 'sqlite'; path: string } // path ':memory:' for an in-memory database
  | { kind: 'postgres'; url: string }

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
export type LogFormat = 'json' | 'pretty' | 'auto'
const LOG_FORMATS: readonly string[] = ['json', 'pretty', 'auto']

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
  const logFormat = (env.LOG_FORMAT?.trim() || 'auto') as LogFormat
  if (!LOG_FORMATS.includes(logFormat)) problems.push(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, got "${env.LOG_FORMAT}"`)

  const trustProxy = parseTrustProxy(env.TRUST_PROXY, problems)

  const limiterMaxSubjects = readInteger(env, 'RATE_LIMIT_MAX_SUBJECTS', 100_000, 1_000, 10_000_000, problems)

  const server = parseServerLimits(env, problems)

  const metrics: MetricsListener = { host: env.METRICS_HOST?.trim() || '127.0.0.1', port: null }
  if (env.METRICS_PORT !== undefined && env.METRICS_PORT.trim() !== '') {
    metrics.port = readInteger(env, 'METRICS_PORT', DEFAULT_METRICS_PORT, 0, 65535, problems)
  }

  const poolMax = readInteger(env, 'DATABASE_POOL_MAX', 0, 1, 1000, problems)
  const databasePoolMax = poolMax === 0 ? null : poolMax

  const orders: OrderSettings = {
    holdMs: readInteger(env, 'ORDER_HOLD_MINUTES', DEFAULT_ORDER_HOLD_MINUTES, 1, 10_080, problems) * 60_000,
    limits: parseOrderLimits(env.ORDER_LIMITS, problems),
    // 0 turns the cool-down off; at most a day.
    cooldownMs: readInteger(env, 'ORDER_COOLDOWN_MINUTES', DEFAULT_ORDER_COOLDOWN_MINUTES, 0, 1440, problems) * 60_000,
    lowStockThreshold: readInteger(env, 'INVENTORY_LOW_THRESHOLD', DEFAULT_LOW_STOCK_THRESHOLD, 0, 1_000_000, problems)
  }

  const mcp = { repeatLimit: readInteger(env, 'MCP_REPEAT_LIMIT', 20, 1, 10_000, problems) }
  const events = { retentionDays: readInteger(env, 'EVENT_RETENTION_DAYS', DEFAULT_EVENT_RETENTION_DAYS, 1, 3650, problems) }

  const webhooks = parseWebhookSettings(env, problems)

  const requestLogSetting = (env.REQUEST_LOG ?? '').trim().toLowerCase() || 'on'
  if (requestLogSetting !== 'on' && requestLogSetting !== 'off') problems.push(`REQUEST_LOG must be on or off, got "${env.REQUEST_LOG}"`)
  const requestLog = {
    enabled: requestLogSetting !== 'off',
    flushMs: readInteger(env, 'REQUEST_LOG_FLUSH_MS', DEFAULT_REQUEST_LOG_FLUSH_MS, 0, 60_000, problems)
  }

  if (problems.length > 0) throw new ConfigError(problems)
  return {
    host,
    port,
    database,
    redisUrl,
    getPetSunset,
    corsOrigins,
    logLevel,
    logFormat,
    trustProxy,
    limiterMaxSubjects,
    databasePoolMax,
    server,
    metrics,
    orders,
    mcp,
    events,
    webhooks,
    requestLog
  }
}

function parseWebhookSettings (env: Record<string, string | undefined>, problems: string[]): WebhookSettings {
  const schedule = parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE?.trim() || DEFAULT_RETRY_SCHEDULE)
  if (!schedule.ok) problems.push(`WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of durations such as 5s,5m,2h: ${schedule.error}`)
  const allowedHosts = (env.WEBHOOK_ALLOWED_HOSTS ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  for (const entry of allowedHosts) {
    if (normalizeAllowedHost(entry) === null) problems.push(`WEBHOOK_ALLOWED_HOSTS entries must be host names or addresses without port or path, got "${entry}"`)
  }
  const maxInFlight = readInteger(env, 'WEBHOOK_MAX_IN_FLIGHT', 64, 1, 10_000, problems)
  return {
    timeoutMs: readInteger(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000, problems),
    retryScheduleMs: schedule.ok ? schedule.delaysMs : [],
    allowedHosts,
    maxInFlight,
    maxInFlightPerEndpoint: readInteger(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT', 4, 1, maxInFlight, problems),
    pollMs: readInteger(env, 'WEBHOOK_POLL_MS', 250, 10, 60_000, problems)
  }
}

/** A whole number from `min` to `max`, or `fallback` when the variable is unset or empty. */
export function readInteger (
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  min: number,
  max: number,
  problems: string[]
): number {
  const raw = env[name]?.trim()
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`)
    return fallback
  }
  return value
}

const SERVER_LIMIT_VARIABLES: Record<Exclude<keyof ServerLimits, 'maxConnectionsPerAddress'>, string> = {
  headersTimeoutMs: 'HEADERS_TIMEOUT_MS',
  requestTimeoutMs: 'REQUEST_TIMEOUT_MS',
  writeTimeoutMs: 'WRITE_TIMEOUT_MS',
  keepAliveTimeoutMs: 'KEEP_ALIVE_TIMEOUT_MS',
  maxConnections: 'MAX_CONNECTIONS',
  shutdownGraceMs: 'SHUTDOWN_GRACE_MS'
}

function parseServerLimits (env: Record<string, string | undefined>, problems: string[]): ServerLimits {
  const limits = { ...DEFAULT_SERVER_LIMITS }
  const variables = Object.entries(SERVER_LIMIT_VARIABLES) as Array<[keyof typeof SERVER_LIMIT_VARIABLES, string]>
  for (const [field, variable] of variables) {
    // From 1: 0 would mean "no limit" to Node, exactly what these settings exist to prevent.
    limits[field] = readInteger(env, variable, DEFAULT_SERVER_LIMITS[field], 1, 2_147_483_647, problems)
  }
  // Up to MAX_CONNECTIONS itself (a deployment whose only client is its balancer may want that).
  limits.maxConnectionsPerAddress = readInteger(
    env,
    'MAX_CONNECTIONS_PER_ADDRESS',
    Math.max(1, Math.floor(limits.maxConnections / 10)),
    1,
    limits.maxConnections,
    problems
  )
  // Node refuses a header deadline later than the whole request's.
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    problems.push(`HEADERS_TIMEOUT_MS (${limits.headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${limits.requestTimeoutMs})`)
  }
  return limits
}

/**
 * ORDER_LIMITS: the plans whose caps change, as `plan=ORDERS/UNITS` or `plan=none`, comma-separated
 * (`free=3/5,enterprise=1000/100000`); the plans not named keep their defaults.
 */
function parseOrderLimits (raw: string | undefined, problems: string[]): Record<Plan, OrderLimits | null> {
  const limits: Record<Plan, OrderLimits | null> = { ...PLAN_ORDER_LIMITS }
  const value = raw?.trim() ?? ''
  if (value === '') return limits
  for (const entry of value.split(',').map((e) => e.trim()).filter((e) => e !== '')) {
    const match = /^([a-z]+)=(?:none|(\d{1,7})\/(\d{1,7}))$/.exec(entry)
    const plan = match?.[1] as Plan | undefined
    if (match === null || plan === undefined || !PLANS.includes(plan)
      || (match[2] !== undefined && (Number(match[2]) < 1 || Number(match[3]) < 1))) {
      problems.push(`ORDER_LIMITS entries must be PLAN=ORDERS/UNITS or PLAN=none, with a plan of ${PLANS.join(', ')} and whole numbers from 1 (e.g. free=5/10,enterprise=none), got "${entry}"`)
      continue
    }
    limits[plan] = match[2] === undefined ? null : { openOrders: Number(match[2]), unitsPerPet: Number(match[3]) }
  }
  return limits
}

/** Names proxy-addr knows for address ranges: loopback, link-local and unique-local addresses. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * TRUST_PROXY: unset or false, a hop count, or a list of proxy addresses and CIDRs. `true` is
 * taken as 1 hop (the nearest proxy is trusted, the address it saw is the client): trusting every
 * hop would make the client address the leftmost X-Forwarded-For entry, which the client writes.
 */
function parseTrustProxy (raw: string | undefined, problems: string[]): false | number | string[] {
  const value = raw?.trim() ?? ''
  if (value === '' || value === 'false' || value === '0') return false
  if (value === 'true') return 1
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    if (hops <= 32) return hops
    problems.push(`TRUST_PROXY hop count must be 0 to 32, got "${value}"`)
    return false
  }
  const entries = value.split(',').map((e) => e.trim()).filter((e) => e !== '')
  const bad = entries.filter((e) => !isProxyAddress(e))
  if (bad.length === 0 && entries.length > 0) return entries
  problems.push(`TRUST_PROXY must be false, true (1 hop), a hop count, or a comma-separated list of proxy addresses or CIDRs (e.g. 10.0.0.5,10.1.0.0/16), got "${value}"`)
  return false
}

function isProxyAddress (entry: string): boolean {
  if (PROXY_RANGE_NAMES.has(entry)) return true
  const slash = entry.indexOf('/')
  const address = slash === -1 ? entry : entry.slice(0, slash)
  const family = isIP(address)
  if (family === 0) return false
  if (slash === -1) return true
  const bits = entry.slice(slash + 1)
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)
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
