// Prometheus metrics (docs/product.md section 8): requests by operation and status, latency, rate-limit
// decisions and bans, deprecated-operation calls per key, the limiter's degraded state, the
// PostgreSQL pool and the process. Each app has its own Registry: tests build many apps in one
// process, and prom-client's global registry would refuse the second app's metric names.
//
// Labels are bounded: `operation` is the route's operationId, `unknown` for unmatched paths,
// `malformed_url` for URLs that cannot be decoded, `preflight` for OPTIONS, and the route pattern
// (never the raw URL) for routes outside /v1.
// Key ids (numbers) may appear as labels; keys never do.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { createRequire } from 'node:module'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { AccessEvents } from '../http/access.ts'
import type { LifecycleHookOptions } from '../http/lifecycle-hooks.ts'
import type { RouteContext } from '../routing/route-config.ts'
import { arrivedOnPublicListener } from '../transport/connections.ts'
import { AppError } from '../errors.ts'

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
  /** Reports sqlite_wal_bytes from this function at each scrape (once per Metrics). */
  trackWal (bytes: () => number): void
  /** A background job (jobs/runner.ts JobEvents): its job_runs_total and job_failures_total start at 0. */
  onJobDeclared (job: string): void
  /** One run of a background job, and whether it failed. */
  onJobRun (job: string, failed: boolean): void
  /** A webhook attempt's outcome: succeeded, retrying (failed, another is due) or failed (the last one). */
  onWebhookOutcome (outcome: 'succeeded' | 'retrying' | 'failed'): void
  /**
   * Reports webhook_deliveries_pending and webhook_oldest_pending_age_seconds from the store at
   * each scrape (once per Metrics).
   */
  trackWebhooks (
    stats: () => Promise<{ pending: number; oldestCreatedAt: number | null }>,
    clock: { now (): number }
  ): void
  /** The Prometheus text and its content type. */
  scrape (): Promise<{ contentType: string; body: string }>
  /** http_requests_total and http_request_duration_seconds (see HttpSeries). */
  readonly http: HttpSeries
}

type Labels = Readonly<Record<'operation' | 'method', string>>
type StatusLabels = Readonly<Record<'operation' | 'method' | 'status', string>>

/** One series of http_requests_total: the answers counted since the last scrape. */
interface CountCell { readonly labels: StatusLabels; unscraped: number }

/** One series of http_request_duration_seconds: its observations since the start. */
export interface DurationCell {
  readonly labels: Labels
  /** The histogram's upper bounds, seconds. */
  readonly bounds: readonly number[]
  /** Observations per bucket, not cumulative: [i] counts those in (bound i-1, bound i]. */
  readonly counts: number[]
  sum: number
  count: number
}

/**
 * The two per-request metrics. prom-client's inc() and observe() hash their label object on every
 * call (a sorted key walk and a string: about 0.6 us for inc(), 1 us for observe(), of a read's
 * 45 us in the CPU profile), so each series is made once and counted in plain numbers: the
 * request counter hands its counts to prom-client's Counter by its collect() at scrape time, an
 * inc() per series and not per request, and the histogram is DurationHistogram below.
 */
interface HttpSeries {
  /** A series of http_requests_total, made once per operation, method and status. */
  counter (labels: StatusLabels): CountCell
  /** A series of http_request_duration_seconds, made once per operation and method. */
  duration (labels: Labels): DurationCell
}

/** Seconds. From 1 ms (a SQLite read) to 10 s (past every timeout of the stores). */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/**
 * prom-client's Histogram whose series are DurationCells: observing is a bucket search and three
 * additions on the series itself, and a scrape reads the cells out in the shape prom-client's own
 * Histogram gives them (the same text, test/ops/duration-histogram.test.ts). Its own observe()
 * and labels() are not used.
 */
export class DurationHistogram extends Histogram<'operation' | 'method'> {
  readonly #cells: DurationCell[] = []
  readonly #bounds: readonly number[]
  readonly #name: string
  readonly #help: string

  constructor (configuration: { name: string; help: string; buckets: number[]; registers: Registry[] }) {
    super({ ...configuration, labelNames: ['operation', 'method'] as const })
    this.#bounds = configuration.buckets
    this.#name = configuration.name
    this.#help = configuration.help
  }

  /** A new series (one per label set: the caller keeps it); observe into it with observeIn. */
  cell (labels: Labels): DurationCell {
    const cell = { labels, bounds: this.#bounds, counts: this.#bounds.map(() => 0), sum: 0, count: 0 }
    this.#cells.push(cell)
    return cell
  }

  override reset (): void {
    // prom-client's constructor calls reset() before this class's fields exist.
    if (!(#cells in this)) return
    for (const cell of this.#cells) {
      cell.counts.fill(0)
      cell.sum = 0
      cell.count = 0
    }
  }

  /**
   * What the registry reads at a scrape, in prom-client's shape (the series' labels as
   * sharedLabels); prom-client's own get() reads it from here too and merges the labels.
   */
  async getForPromString (): Promise<Exposition> {
    return { name: this.#name, help: this.#help, type: 'histogram', aggregator: 'sum', values: this.#values() }
  }

  #values (): ExpositionValue[] {
    const name = this.#name
    const values: ExpositionValue[] = []
    for (const cell of this.#cells) {
      if (cell.count === 0) continue
      let cumulative = 0
      this.#bounds.forEach((le, i) => {
        cumulative += cell.counts[i]!
        values.push({ labels: { le }, sharedLabels: cell.labels, value: cumulative, metricName: `${name}_bucket` })
      })
      values.push({ labels: { le: '+Inf' }, sharedLabels: cell.labels, value: cell.count, metricName: `${name}_bucket` })
      values.push({ labels: {}, sharedLabels: cell.labels, value: cell.sum, metricName: `${name}_sum` })
      values.push({ labels: {}, sharedLabels: cell.labels, value: cell.count, metricName: `${name}_count` })
    }
    return values
  }
}

interface ExpositionValue {
  labels: Record<string, string | number>
  sharedLabels: Labels
  value: number
  metricName: string
}
interface Exposition { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: ExpositionValue[] }

/** Counts one observation in a series of a DurationHistogram (seconds). */
export function observeIn (cell: DurationCell, seconds: number): void {
  const { bounds } = cell
  // An observation above the last bound counts only in +Inf (count), as prom-client does.
  for (let i = 0; i < bounds.length; i++) {
    if (seconds <= bounds[i]!) { cell.counts[i]!++; break }
  }
  cell.sum += seconds
  cell.count++
}

let processRegistry: Registry | null = null
const require = createRequire(import.meta.url)

/**
 * prom-client's default metrics but one: `gc`, its nodejs_gc_duration_seconds, observes every GC
 * through a PerformanceObserver, and the entry Node builds for each GC (a scavenge every few
 * hundred requests under load) ends up in the old space: it alone made a mark-compact, an 8 to
 * 10 ms pause, every 7 s of reads, and none ran in 20 s without it (docs/performance.md, "Stalls
 * and memory"). GC pauses still show in the event loop's lag (nodejs_eventloop_lag_*).
 */
export const PROCESS_METRICS = collectDefaultMetrics.metricsList.filter((name) => name !== 'gc')

type DefaultMetric = (registry: Registry, config: { eventLoopMonitoringPrecision: number }) => void

/**
 * Node's default metrics (CPU, memory, heap, event loop) describe the process, not an app, and
 * the event-loop monitor they start is never stopped. So they are collected once per process, and
 * every app's registry exposes those same metric objects. Each is prom-client's own module, called
 * as collectDefaultMetrics calls it, with its precision.
 */
function processMetrics (): Registry {
  if (processRegistry === null) {
    const registry = new Registry()
    for (const name of PROCESS_METRICS) {
      (require(`prom-client/lib/metrics/${name}.js`) as DefaultMetric)(registry, { eventLoopMonitoringPrecision: 10 })
    }
    processRegistry = registry
  }
  return processRegistry
}

export function createMetrics (): Metrics {
  const registry = Registry.merge([processMetrics()])
  const registers = [registry]

  const counts: CountCell[] = []
  new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by operation (operationId; unknown for unmatched paths, malformed_url for URLs that cannot be decoded, preflight for OPTIONS), method and status.',
    labelNames: ['operation', 'method', 'status'] as const,
    registers,
    collect () {
      for (const cell of counts) {
        if (cell.unscraped === 0) continue
        this.inc(cell.labels, cell.unscraped)
        cell.unscraped = 0
      }
    }
  })
  const http: HttpSeries = {
    counter (labels) {
      const cell = { labels, unscraped: 0 }
      counts.push(cell)
      return cell
    },
    duration: (labels) => duration.cell(labels)
  }
  const duration = new DurationHistogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its response, by operation and method.',
    buckets: DURATION_BUCKETS,
    registers
  })
  // Counted in plain numbers (one decision per charged request), handed to prom-client at scrape
  // time like http_requests_total; present at 0 from the start, so rate() and alerts work before
  // the first refusal.
  const decisionCounts = { allowed: 0, limited: 0, banned: 0 }
  new Counter({
    name: 'ratelimit_decisions_total',
    help: 'Rate-limit decisions on requests that cost quota: allowed, limited (429 rate_limited) or banned (429 api_key_banned).',
    labelNames: ['decision'] as const,
    registers,
    collect () {
      for (const decision of ['allowed', 'limited', 'banned'] as const) {
        this.inc({ decision }, decisionCounts[decision])
        decisionCounts[decision] = 0
      }
    }
  })
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
  // Counted in plain maps, per operation and key id, and handed to prom-client at scrape time:
  // inc() with labels hashes the label object, on every call of a deprecated operation.
  const deprecatedCounts = new Map<string, Map<number | null, number>>()
  new Counter({
    name: 'deprecated_operation_calls_total',
    help: 'Calls to deprecated operations by API key id (anonymous without a valid key): who must still migrate.',
    labelNames: ['operation', 'key_id'] as const,
    registers,
    collect () {
      this.reset()
      for (const [operation, byKey] of deprecatedCounts) {
        for (const [keyId, count] of byKey) this.inc({ operation, key_id: keyId === null ? 'anonymous' : String(keyId) }, count)
      }
    }
  })
  const degraded = new Gauge({
    name: 'ratelimit_backend_degraded',
    help: '1 while Redis is unreachable and this instance counts rate limits in memory (the reason is logged), else 0.',
    registers
  })
  degraded.set(0)
  // Labelled by the job's name: a fixed list (jobs/jobs.ts). Runs are seconds apart: plain inc().
  const jobRuns = new Counter({ name: 'job_runs_total', help: 'Runs of each background job, failed ones included.', labelNames: ['job'] as const, registers })
  const jobFailures = new Counter({ name: 'job_failures_total', help: 'Failed runs of each background job (the error is in the log line with the job\'s name).', labelNames: ['job'] as const, registers })

  let poolTracked = false
  let walTracked = false
  // One attempt every few hundred ms at most per endpoint: plain inc().
  const webhookAttempts = new Counter({ name: 'webhook_attempts_total', help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, another attempt is scheduled) or failed (the last attempt failed: the delivery is failed until replayed).', labelNames: ['outcome'] as const, registers })
  for (const outcome of ['succeeded', 'retrying', 'failed']) webhookAttempts.inc({ outcome }, 0)
  let webhooksTracked = false

  return {
    registry,
    events: {
      onDecision: (decision) => { decisionCounts[decision]++ },
      onBan: () => { bans.inc() },
      onDeprecatedCall: (operation, keyId) => {
        let byKey = deprecatedCounts.get(operation)
        if (byKey === undefined) deprecatedCounts.set(operation, byKey = new Map())
        byKey.set(keyId, (byKey.get(keyId) ?? 0) + 1)
      }
    },
    onLimiterState (state) { degraded.set(state === 'degraded' ? 1 : 0) },
    onNearLimit (window) { nearLimit.inc({ window }) },
    onJobDeclared (job) { jobRuns.inc({ job }, 0); jobFailures.inc({ job }, 0) },
    onJobRun (job, failed) {
      jobRuns.inc({ job })
      if (failed) jobFailures.inc({ job })
    },
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
    onWebhookOutcome (outcome) { webhookAttempts.inc({ outcome }) },
    trackWebhooks (stats, clock) {
      if (webhooksTracked) return
      webhooksTracked = true
      // Read at scrape time from the database: the backlog of every instance, not only this one's.
      let last: Promise<{ pending: number; oldestCreatedAt: number | null }> | null = null
      const read = (): Promise<{ pending: number; oldestCreatedAt: number | null }> =>
        (last ??= stats().finally(() => { last = null }))
      new Gauge({
        name: 'webhook_deliveries_pending',
        help: 'Webhook deliveries waiting for an attempt (first or retry) on enabled endpoints.',
        registers,
        async collect () { this.set((await read()).pending) }
      })
      new Gauge({
        name: 'webhook_oldest_pending_age_seconds',
        help: 'Age of the oldest webhook delivery still waiting (0 when none): a growing value means deliveries are stuck or receivers down.',
        registers,
        async collect () {
          const { oldestCreatedAt } = await read()
          this.set(oldestCreatedAt === null ? 0 : Math.max(0, (clock.now() - oldestCreatedAt) / 1000))
        }
      })
    },
    trackWal (bytes) {
      if (walTracked) return
      walTracked = true
      // Read at scrape time (one stat of the file); the event loop's lag is Node's default
      // nodejs_eventloop_lag_p99_seconds: together they show a checkpoint that stalls requests.
      new Gauge({
        name: 'sqlite_wal_bytes',
        help: 'Size of the SQLite write-ahead log in bytes; kept near 4 MiB by the WAL checkpoint.',
        registers,
        collect () { this.set(bytes()) }
      })
    },
    async scrape () { return { contentType: registry.contentType, body: await registry.metrics() } },
    http
  }
}

interface MethodSeries { labels: Labels; duration: DurationCell; byStatus: Map<number, CountCell> }

/** The series of one route (or of the preflights, of malformed URLs). */
export interface RouteSeries { operation: string; byMethod: Map<string, MethodSeries> }

/**
 * Counts and times every response: the pipeline's response step (http/pipeline.ts) calls
 * `record` with the series its route plan holds, made once per route by `seriesOf`. The label
 * objects of each method and status are made once: a request costs a few map lookups and a few
 * additions.
 */
export function httpMetrics (metrics: Metrics): {
  seriesOf: (context: RouteContext) => RouteSeries
  record: (series: RouteSeries, request: FastifyRequest, reply: FastifyReply) => void
} {
  const { http } = metrics
  const preflight: RouteSeries = { operation: 'preflight', byMethod: new Map() }
  return {
    seriesOf ({ config, schema }) {
      const operationId = (schema as { operationId?: unknown } | undefined)?.operationId
      // Unmatched paths (404, 405) have no url: the raw URL would be unbounded.
      return { operation: typeof operationId === 'string' ? operationId : config?.url ?? 'unknown', byMethod: new Map() }
    },
    record (series, request, reply) {
      // elapsedTime: milliseconds since Fastify received the request.
      record(http, request.method === 'OPTIONS' ? preflight : series, request.method, reply.statusCode, reply.elapsedTime / 1000)
    }
  }
}

/** Counts and times one answer in the series of `route`, method and status (made on first use). */
function record (
  http: HttpSeries,
  route: RouteSeries,
  requestMethod: string,
  statusCode: number,
  seconds: number
): void {
  let method = route.byMethod.get(requestMethod)
  if (method === undefined) {
    const labels = Object.freeze({ operation: route.operation, method: requestMethod })
    method = { labels, duration: http.duration(labels), byStatus: new Map() }
    route.byMethod.set(requestMethod, method)
  }
  let status = method.byStatus.get(statusCode)
  if (status === undefined) {
    status = http.counter(Object.freeze({ ...method.labels, status: String(statusCode) }))
    method.byStatus.set(statusCode, status)
  }
  status.unscraped++
  observeIn(method.duration, seconds)
}

/**
 * Counts the answers to malformed URLs (http/request-log.ts observeFrameworkAnswers: Fastify runs
 * no response hook for them) under the operation `malformed_url`.
 */
export function malformedUrlCounter (
  metrics: Metrics
): (request: FastifyRequest, reply: FastifyReply, ms: number) => void {
  const route: RouteSeries = { operation: 'malformed_url', byMethod: new Map() }
  // The method is the client's text: an unknown one is counted as OTHER, so labels stay bounded.
  return (request, reply, ms) => {
    const method = KNOWN_METHODS.has(request.method) ? request.method : 'OTHER'
    record(metrics.http, route, method, reply.statusCode, ms / 1000)
  }
}

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/**
 * GET /metrics: outside /v1 (no key, no quota) and hidden from the OpenAPI document. Served on
 * the private listener (transport/ops-listener.ts); on the public one it does not exist: the
 * same 404 as any unknown path.
 */
export async function metricsRoutes (app: FastifyInstance, { metrics }: { metrics: Metrics }): Promise<void> {
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (arrivedOnPublicListener(request.raw)) throw new AppError('not_found', `no operation at ${request.method} /metrics; see /openapi.json`)
    const { contentType, body } = await metrics.scrape()
    return reply.type(contentType).send(body)
  })
}
