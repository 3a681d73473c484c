// Prometheus metrics (docs/product.md section 8): requests by operation and status, latency, rate-limit
// decisions and bans, deprecated-operation calls per key, the limiter's degraded state, the
// PostgreSQL pool and the process. Each app has its own Registry: tests build many apps in one
// process, and prom-client's global registry would refuse the second app's metric names.
//
// Labels are bounded: `operation` is the route's operationId, `unknown` for unmatched paths,
// `preflight` for OPTIONS, and the route pattern (never the raw URL) for routes outside /v1.
// Key ids (numbers) may appear as labels; keys never do.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { AccessEvents } from './access.ts'
import type { LifecycleHookOptions } from './lifecycle-hooks.ts'

/** Connection counts of a database pool (PostgreSQL; SQLite has one connection and no pool). */
export interface PoolStats {
  total: number
  idle: number
  waiting: number
}

/** The callbacks of the access and lifecycle hooks (AppDeps.events). */
export type MetricsEvents = Required<AccessEvents> & Required<Pick<LifecycleHookOptions, 'onDeprecatedCall'>>

export interface Metrics {
  readonly registry: Registry
  /** Pass to buildApp as deps.events. */
  readonly events: MetricsEvents
  /** Pass to openInfra's onLimiterState: ratelimit_backend_degraded is 1 while degraded. */
  onLimiterState (state: 'ok' | 'degraded', reason?: string): void
  /** An allowed request left less than 10% of a window (http/usage.ts). */
  onNearLimit (window: 'minute' | 'day'): void
  /** Reports db_pool_connections from this function at each scrape (once per Metrics). */
  trackPool (stats: () => PoolStats): void
  /** The Prometheus text and its content type. */
  scrape (): Promise<{ contentType: string; body: string }>
  readonly http: {
    readonly requests: Counter<'operation' | 'method' | 'status'>
    readonly duration: Histogram<'operation' | 'method'>
  }
}

/** Seconds. From 1 ms (a SQLite read) to 10 s (past every timeout of the stores). */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

let processRegistry: Registry | null = null

/**
 * Node's default metrics (CPU, memory, heap, event loop, GC) describe the process, not an app, and
 * collectDefaultMetrics starts a GC observer and an event-loop monitor that are never stopped. So
 * they are collected once per process, and every app's registry exposes those same metric objects.
 */
function processMetrics (): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

export function createMetrics (): Metrics {
  const registry = Registry.merge([processMetrics()])
  const registers = [registry]

  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by operation (operationId; unknown for unmatched paths, preflight for OPTIONS), method and status.',
    labelNames: ['operation', 'method', 'status'] as const,
    registers
  })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its response, by operation and method.',
    labelNames: ['operation', 'method'] as const,
    buckets: DURATION_BUCKETS,
    registers
  })
  const decisions = new Counter({
    name: 'ratelimit_decisions_total',
    help: 'Rate-limit decisions on requests that cost quota: allowed, limited (429 rate_limited) or banned (429 api_key_banned).',
    labelNames: ['decision'] as const,
    registers
  })
  // Present at 0 from the start, so rate() and alerts work before the first refusal.
  for (const decision of ['allowed', 'limited', 'banned']) decisions.inc({ decision }, 0)
  const nearLimit = new Counter({
    name: 'ratelimit_near_limit_total',
    help: 'Allowed requests that left less than 10% of a window\'s quota, by window (minute or day): callers close to their limits.',
    labelNames: ['window'] as const,
    registers
  })
  for (const window of ['minute', 'day']) nearLimit.inc({ window }, 0)
  const bans = new Counter({
    name: 'ratelimit_bans_total',
    help: 'Bans started (the key id and the end are in the log line "ban started").',
    registers
  })
  const deprecatedCalls = new Counter({
    name: 'deprecated_operation_calls_total',
    help: 'Calls to deprecated operations by API key id (anonymous without a valid key): who must still migrate.',
    labelNames: ['operation', 'key_id'] as const,
    registers
  })
  const degraded = new Gauge({
    name: 'ratelimit_backend_degraded',
    help: '1 while Redis is unreachable and this instance counts rate limits in memory (the reason is logged), else 0.',
    registers
  })
  degraded.set(0)

  let poolTracked = false

  return {
    registry,
    events: {
      onDecision: (decision) => { decisions.inc({ decision }) },
      onBan: () => { bans.inc() },
      onDeprecatedCall: (operation, keyId) => { deprecatedCalls.inc({ operation, key_id: keyId === null ? 'anonymous' : String(keyId) }) }
    },
    onLimiterState (state) { degraded.set(state === 'degraded' ? 1 : 0) },
    onNearLimit (window) { nearLimit.inc({ window }) },
    trackPool (stats) {
      if (poolTracked) return
      poolTracked = true
      // Read at scrape time: the pool keeps its own counts, so the hot path pays nothing.
      new Gauge({
        name: 'db_pool_connections',
        help: 'PostgreSQL pool connections: total open, idle, and requests waiting for one.',
        labelNames: ['state'] as const,
        registers,
        collect () {
          const s = stats()
          this.set({ state: 'total' }, s.total)
          this.set({ state: 'idle' }, s.idle)
          this.set({ state: 'waiting' }, s.waiting)
        }
      })
    },
    async scrape () { return { contentType: registry.contentType, body: await registry.metrics() } },
    http: { requests, duration }
  }
}

type Labels = Readonly<Record<'operation' | 'method', string>>
type StatusLabels = Readonly<Record<'operation' | 'method' | 'status', string>>
interface MethodLabels { labels: Labels; byStatus: Map<number, StatusLabels> }
interface RouteLabels { operation: string; byMethod: Map<string, MethodLabels> }

/**
 * One onResponse hook counts and times every response. Label objects are made once per route,
 * method and status and reused, so a request costs two metric updates and a few map lookups.
 */
export function installMetrics (app: FastifyInstance, metrics: Metrics): void {
  const { requests, duration } = metrics.http
  // Keyed by the route's config object, which Fastify makes once per route.
  const routes = new WeakMap<object, RouteLabels>()
  const preflight: RouteLabels = { operation: 'preflight', byMethod: new Map() }

  function routeOf (request: FastifyRequest): RouteLabels {
    if (request.method === 'OPTIONS') return preflight
    const { config, schema, url } = request.routeOptions
    let route = routes.get(config)
    if (route === undefined) {
      const operationId = (schema as { operationId?: unknown } | undefined)?.operationId
      // Unmatched paths (404, 405) have no url: the raw URL would be unbounded.
      const operation = typeof operationId === 'string' ? operationId : url ?? 'unknown'
      route = { operation, byMethod: new Map() }
      routes.set(config, route)
    }
    return route
  }

  app.addHook('onResponse', (request, reply, done) => {
    const route = routeOf(request)
    let method = route.byMethod.get(request.method)
    if (method === undefined) {
      method = { labels: Object.freeze({ operation: route.operation, method: request.method }), byStatus: new Map() }
      route.byMethod.set(request.method, method)
    }
    let status = method.byStatus.get(reply.statusCode)
    if (status === undefined) {
      status = Object.freeze({ ...method.labels, status: String(reply.statusCode) })
      method.byStatus.set(reply.statusCode, status)
    }
    requests.inc(status)
    // elapsedTime: milliseconds since Fastify received the request.
    duration.observe(method.labels, reply.elapsedTime / 1000)
    done()
  })
}

/** GET /metrics: outside /v1 (no key, no quota) and hidden from the OpenAPI document. */
export async function metricsRoutes (app: FastifyInstance, { metrics }: { metrics: Metrics }): Promise<void> {
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const { contentType, body } = await metrics.scrape()
    return reply.type(contentType).send(body)
  })
}
