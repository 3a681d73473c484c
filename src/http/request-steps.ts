// The installation steps every request runs through, in their order, for the list of app.ts: they
// come before any route, because a route keeps the hooks, parsers and error handler the app has
// when it is declared (Fastify copies them into each plugin as it starts). Hooks of one kind run
// in the order they are installed.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AccessService } from '../access/access.service.ts'
import type { RefusedKey } from '../access/key-cache.ts'
import type { UsageRecorder } from '../access/usage.ts'
import type { Role } from '../accounts/plans.ts'
import type { Scope, ScopeNeed } from '../accounts/scopes.ts'
import type { Decision } from '../ratelimit/limiter.ts'
import { requireRoles, routeContextOf, type RouteContext } from '../routing/route-config.ts'
import { viaMcp } from '../shared/channel.ts'
import type { Clock } from '../shared/clock.ts'
import type { DeprecatedOperation } from '../shared/deprecation.ts'
import type { CorsOptions } from './cors.ts'
import { installErrorHandling } from './errors.ts'
import { collectDeprecatedOperations } from './lifecycle-hooks.ts'
import { viaPortal } from './instance.ts'
import { installPipeline, type ResponseMetrics } from './pipeline.ts'
import { redactText, redactUrl } from './redact.ts'
import type { Step } from './steps.ts'
import { installValidation, parseJsonBody } from './validation.ts'

export type RequestStepName = 'deprecations' | 'roles' | 'validation' | 'errors' | 'json' | 'pipeline'

export interface RequestStepOptions<Series> {
  access: AccessService
  clock: Clock
  /** Usage per key, and each key's calls of deprecated operations (the console's deprecation view). */
  usage: UsageRecorder
  /** Filled with the deprecated operations as the routes are declared (GET /admin/deprecations). */
  deprecated: DeprecatedOperation[]
  /** CORS_ORIGINS (config.ts). */
  corsOrigins: CorsOptions['origin']
  /** Counts and times the answers (ops/metrics.ts httpMetrics). */
  metrics: ResponseMetrics<Series>
  /** A deprecated operation was called, with a key or without (ops/metrics.ts counts it). */
  onDeprecatedCall?: ((operationId: string, keyId: number | null) => void) | undefined
  /** An allowed request left less than 10% of a window (ratelimit_near_limit_total). */
  onNearLimit: (window: 'minute' | 'day') => void
  /**
   * Each key's own request log (key-requests/key-requests.recorder.ts), handed every finished
   * request made with a valid key; null or absent (REQUEST_LOG=off): no step runs for it.
   */
  requestLog?: RequestLogSink | null | undefined
}

/**
 * What the request log is told of a finished request made with a valid key, or with a key of ours
 * that was refused (never its body, never the key).
 */
export interface FinishedRequest {
  /** The valid key's id, or the refused key's (`refusedKey`). */
  keyId: number
  /** When it was answered (the clock's epoch ms). */
  at: number
  method: string
  /** The route's path template; for a path no route has, the path (secrets redacted). */
  route: string
  operationId: string | null
  /**
   * The query string without `?`, secret values and key-shaped text redacted (redact.ts), cut to
   * QUERY_MAX; or null.
   */
  query: string | null
  status: number
  code: string | null
  message: string | null
  requestId: string
  latencyMs: number
  /** An agent's MCP tool call, a call through the partner portal's door, or null for any other. */
  via: 'mcp' | 'portal' | null
  /** What the access step decided, and what the route and the key hold: which rule refused it. */
  decision: Decision | null
  role: Role | undefined
  scope: ScopeNeed | undefined
  /** The valid key's role and scopes; null for a refused key. */
  keyRole: Role | null
  keyScopes: ReadonlySet<Scope> | null
  /** The key, when it was refused itself (revoked, expired, rotated past its grace period); else null. */
  refusedKey: RefusedKey | null
}

export interface RequestLogSink {
  /** A request a rule refused (a 403 or 429), or made with a refused key: the sink finds the rule. */
  record (request: FinishedRequest): void
  /**
   * Any other: the fields the log keeps, as values, so that the common case builds no object
   * (a read's whole cost of the log is a few µs: docs/performance.md, "The request log").
   */
  add (
    keyId: number, at: number, method: string, route: string, operationId: string | null, query: string | null,
    status: number, code: string | null, requestId: string, latencyMs: number, via: 'mcp' | 'portal' | null
  ): void
}

const NO_ROUTE = { template: undefined, operationId: null }

/** The longest query string the request log keeps (the rest is cut). */
export const QUERY_MAX = 500

/**
 * The operation that reads the log: its successful reads are not logged, so looking never pushes
 * out what was looked for.
 */
const LOG_READ = 'listMyApiKeyRequests'

/**
 * The request log's response step: one object per request made with a valid key, or with a key of
 * ours the access step refused (request.refusedKey: revoked, expired, rotated past its grace
 * period; its own log keeps the refusal; an unknown key belongs to no log), handed to the sink
 * (memory only; the sink writes in batches). Runs after the pipeline's, which has set the
 * principal, the decision and the error's code.
 */
export function requestLogStep (
  sink: RequestLogSink,
  clock: Clock
): (request: FastifyRequest, reply: FastifyReply) => void {
  // Each route's template and operation, made once per route (the config object is one per route).
  const routes = new WeakMap<object, { template: string | undefined; operationId: string | null }>()
  const routeOf = (context: RouteContext): { template: string | undefined; operationId: string | null } => {
    const config = context.config
    if (config === undefined) return NO_ROUTE
    let route = routes.get(config)
    if (route === undefined) {
      const operation = (context.schema as { operationId?: unknown } | undefined)?.operationId
      const url = config.url
      route = {
        // Fastify's `:petId` as the document spells it; a catch-all (the 404 handler) is no template.
        template: url === undefined || url.includes('*') ? undefined : url.replace(/:([A-Za-z0-9_]+)/g, '{$1}'),
        operationId: typeof operation === 'string' ? operation : null
      }
      routes.set(config, route)
    }
    return route
  }
  return (request, reply) => {
    const principal = request.principal
    const refusedKey = principal === null ? request.refusedKey : null
    const keyId = principal?.keyId ?? refusedKey?.keyId
    if (keyId === undefined) return
    const context = routeContextOf(request)
    const config = context.config
    const { template, operationId } = routeOf(context)
    const status = reply.statusCode
    if (operationId === LOG_READ && status < 400) return
    const url = request.url
    const mark = url.indexOf('?')
    let query: string | null = null
    let path = template
    if (mark !== -1 || path === undefined) {
      const redacted = redactUrl(url)
      const at = redacted.indexOf('?')
      if (at !== -1 && at < redacted.length - 1) query = redacted.slice(at + 1, at + 1 + QUERY_MAX)
      path ??= at === -1 ? redacted : redacted.slice(0, at)
    }
    const failure = request.failure
    const code = failure?.code ?? null
    const latencyMs = Math.round(reply.elapsedTime * 100) / 100
    const via = viaMcp(request.headers) ? 'mcp' : viaPortal(request) ? 'portal' : null
    if (refusedKey === null && status !== 403 && status !== 429) {
      sink.add(keyId, clock.now(), request.method, path, operationId, query, status, code, request.id, latencyMs, via)
      return
    }
    sink.record({
      keyId,
      at: clock.now(),
      method: request.method,
      route: path,
      operationId,
      query,
      status,
      code,
      message: failure === null ? null : redactText(failure.message),
      requestId: request.id,
      latencyMs,
      via,
      decision: request.rateLimit,
      role: config?.role === 'none' ? undefined : config?.role,
      scope: config?.scope,
      keyRole: principal?.role ?? null,
      keyScopes: principal?.scopes ?? null,
      refusedKey
    })
  }
}

/**
 * What browsers may do across origins. /metrics is for Prometheus on the private network, never
 * for a browser: no CORS at all there, preflights included (cors.ts).
 */
const CORS: Omit<CorsOptions, 'origin'> = {
  methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
  allowedHeaders: ['X-API-Key', 'Authorization', 'Content-Type', 'If-Match', 'Idempotency-Key', 'Request-Id'],
  exposedHeaders: [
    'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit', 'RateLimit-Policy', 'Retry-After',
    'Request-Id', 'ETag', 'Location', 'Link', 'Deprecation', 'Sunset', 'Warning', 'Allow'
  ],
  maxAge: 600,
  excluded: ['/metrics']
}

/**
 * The key's own request log rides on the pipeline's one response step (its "answer known" call,
 * after the metrics' record), not on a hook of its own: one onResponse per request
 * (test/http/pipeline.test.ts), and nothing at all when the log is off.
 */
function withRequestLog<Series> (
  metrics: ResponseMetrics<Series>,
  sink: RequestLogSink | null | undefined,
  clock: Clock
): ResponseMetrics<Series> {
  if (sink === null || sink === undefined) return metrics
  const log = requestLogStep(sink, clock)
  return {
    seriesOf: metrics.seriesOf,
    record: (series, request, reply) => {
      metrics.record(series, request, reply)
      log(request, reply)
    }
  }
}

/** JSON only: Fastify's default text/plain parser would let a string body reach validation. */
function acceptJsonOnly (app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try { done(null, parseJsonBody(body as string)) } catch (error) { done(error as Error, undefined) }
  })
}

export function requestSteps<Series> (options: RequestStepOptions<Series>): Step<RequestStepName>[] {
  const { access, clock, usage } = options
  const onDeprecatedCall = options.onDeprecatedCall === undefined ? {} : { onDeprecatedCall: options.onDeprecatedCall }
  return [
    // Each reads every route as it is declared: the deprecated operations, and a /v1 route without
    // config.role or config.scope fails the build.
    { name: 'deprecations', needs: [], install: (app) => { collectDeprecatedOperations(app, options.deprecated) } },
    { name: 'roles', needs: [], install: requireRoles },
    // The two Ajv instances and the integer and body guards (per route, as routes are declared).
    { name: 'validation', needs: [], install: installValidation },
    // The one error handler, the 404 and the 405 (which learns each route's path as it is declared).
    { name: 'errors', needs: [], install: installErrorHandling },
    { name: 'json', needs: [], install: acceptJsonOnly },
    // The one pipeline step (pipeline.ts): one onRequest step (the request id and the head of every
    // answer, the access decision, CORS, the sunset), one onResponse step (metrics, usage per key),
    // and the audit log's actor on the routes that write; the request log rides on the response step.
    {
      name: 'pipeline',
      needs: [],
      install: (app) => {
        installPipeline(app, {
          access: { access, clock },
          // The Link of a deprecated operation's answers points to the docs page (app.ts serves it).
          lifecycle: { clock, docsUrl: '/docs', usage, ...onDeprecatedCall },
          cors: { ...CORS, origin: options.corsOrigins },
          usage: { recorder: usage, clock, onNearLimit: options.onNearLimit },
          metrics: withRequestLog(options.metrics, options.requestLog, clock)
        })
      }
    }
  ]
}
