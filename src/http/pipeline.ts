// The one pipeline step (docs/architecture.md, "The request pipeline"): every request, routed or
// not, runs one onRequest step and one onResponse step; the routes that write add one preHandler
// (the audit log's actor), those with integer parameters the integer guard (http/validation.ts).
// What a route declares (its config: role, scope, quota, lifecycle, the paths CORS leaves out,
// its metrics series, whether it takes a body, the head every answer of it carries) is read once,
// the first time the route answers, into its plan; a request then only fills in what changes.
//
// The order inside the request step is the contract the separate hooks had, each for a reason:
// 1. the request id, the typed headers and the lifecycle headers: on every answer, refusals and
//    errors included, so set before anything can fail; a request no route takes is answered
//    without reading its body (transport/unread-body.ts), so its refusals close the connection;
// 2. the access decision (http/access.ts): a refusal (401, 403, 429) is answered from here and
//    goes out without CORS headers, as when @fastify/cors ran after it;
// 3. CORS (http/cors.ts), which answers a preflight;
// 4. the sunset of a deprecated operation: after the access decision, so the key is known and
//    the 410 is charged like any call;
// 5. a body sent to an operation that takes none is refused before it is read (http/validation.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { routeContextOf, type RouteContext } from '../routing/route-config.ts'
import {
  accessStep, actorStep, decorateAccess, routeAccessOf, type AccessHookOptions, type RouteAccess
} from './access.ts'
import { corsExcluded, corsStep, installPreflightRoute, type CorsOptions } from './cors.ts'
import {
  lifecycleHead, lifecycleValue, sunsetStep, type Deprecated, type LifecycleHeader, type LifecycleHookOptions
} from './lifecycle-hooks.ts'
import { bindRequestLogger } from './request-log.ts'
import { isNoStorePath } from './response-headers.ts'
import { usageStep, type UsageHookOptions } from './usage.ts'
import { bodySent, takesNoBody } from './validation.ts'
import { leaveUnroutedBodyUnread } from '../transport/unread-body.ts'

/** Counts and times the answers (ops/metrics.ts httpMetrics): a series made once per route, a record per answer. */
export interface ResponseMetrics<Series> {
  seriesOf: (context: RouteContext) => Series
  record: (series: Series, request: FastifyRequest, reply: FastifyReply) => void
}

export interface PipelineOptions<Series> {
  access: AccessHookOptions
  lifecycle: LifecycleHookOptions
  cors: CorsOptions
  usage: UsageHookOptions
  metrics: ResponseMetrics<Series>
}

/** What the pipeline reads about a route, made once per route (per Fastify context). */
interface RoutePlan<Series = unknown> {
  /**
   * The head every answer of the route carries, made once: X-Content-Type-Options, Cache-Control
   * for key administration, the lifecycle headers of a deprecated operation (a value given as a
   * template is filled from the path parameters).
   */
  readonly head: readonly LifecycleHeader[]
  readonly access: RouteAccess
  /** Left out of CORS (/metrics); null when it depends on the path. */
  readonly corsExcluded: boolean | null
  /** The operation takes no body: one sent is refused before it is read (http/validation.ts); null for no operation. */
  readonly noBody: string | null
  /** The deprecated operation the sunset step counts and refuses, or null. */
  readonly deprecated: Deprecated | null
  readonly series: Series
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The plan of the route this request matched (set by the pipeline's request step). */
    plan: RoutePlan | null
  }
}

/**
 * Where a route's plan is kept: under this key on the route's config object, which Fastify makes
 * once per route (`{ ...opts.config, url, method }` in its lib/route.js), so that a request finds
 * its plan in one property read. That this object is the same on every request of the route, one
 * per route and open to a key of ours is Fastify's private shape, not its promise: the first
 * request checks the last (planShapeProblem), and test/http/pipeline.test.ts checks all three,
 * failing with what changed. The fallback keeps the plans in a map per app, keyed by the route's
 * method and url as the public `request.routeOptions` gives them (a new object per read, so
 * slower; the app declares no route constraints, so the two name one route).
 */
const PLAN = Symbol('petstore.plan')

/** Why plans are kept in the map (the fallback), or null: set at the first request (planOf). */
let fallback: string | null | undefined

/** Why the first request found the route's config object unable to keep a plan, or null. */
function planShapeProblem (config: object | undefined): string | null {
  if (config === undefined) return 'the matched route has no config object'
  if (!Object.isExtensible(config)) return 'the config object of a route takes no new key (frozen or sealed)'
  return null
}

/** Why plans are kept in a map by method and url (the fallback), or null; undefined before the first request. */
export function planFallback (): string | null | undefined {
  return fallback
}

/** For tests: plans kept in the map from now on (true), or the config object checked again at the next request. */
export function forcePlanFallback (on: boolean): void {
  fallback = on ? 'forced by a test' : undefined
}

export function installPipeline<Series> (app: FastifyInstance, options: PipelineOptions<Series>): void {
  const decide = accessStep(options.access)
  const cors = corsStep(options.cors)
  const sunset = sunsetStep(options.lifecycle)
  const recordUsage = usageStep(options.usage)
  const metrics = options.metrics
  const docsUrl = options.lifecycle.docsUrl

  decorateAccess(app)
  app.decorateRequest('plan', null)

  /** This app's plans by the route's method and url, while the fallback is in use. */
  const plans = new Map<string, RoutePlan<Series>>()

  function planOf (request: FastifyRequest): RoutePlan<Series> {
    const context = routeContextOf(request)
    if (fallback === undefined) fallback = planShapeProblem(context.config)
    if (fallback === null && context.config !== undefined) {
      const config = context.config as Record<symbol, RoutePlan<Series> | undefined>
      return config[PLAN] ??= planFor(context)
    }
    const { method, url } = request.routeOptions
    const key = `${String(method)} ${String(url)}`
    let plan = plans.get(key)
    if (plan === undefined) {
      plan = planFor(context)
      plans.set(key, plan)
    }
    return plan
  }

  function planFor (context: RouteContext): RoutePlan<Series> {
    const url = context.config?.url
    const lifecycle = context.config?.lifecycle
    const operationId = (context.schema as { operationId?: unknown } | undefined)?.operationId
    // A request that matched no route is answered by the error handler, which adds no-store by its path.
    const noStore = url !== undefined && isNoStorePath(url) ? [NO_STORE] : []
    return {
      head: [TYPED, ...noStore, ...lifecycleHead(lifecycle, docsUrl)],
      access: routeAccessOf(context.config ?? {}),
      corsExcluded: corsExcluded(options.cors, url),
      noBody: url !== undefined && takesNoBody(context.schema) ? url : null,
      deprecated: lifecycle?.deprecatedAt === undefined
        ? null
        : { operationId: typeof operationId === 'string' ? operationId : url ?? '', lifecycle },
      series: metrics.seriesOf(context)
    }
  }

  /** Steps 3 to 5, once access has let the request through; returns the error to answer, if any. */
  function afterAccess (
    request: FastifyRequest, reply: FastifyReply, plan: RoutePlan<Series>
  ): Error | undefined | 'answered' {
    if (cors(request, reply, plan.corsExcluded)) return 'answered'
    const retired = plan.deprecated === null ? undefined : sunset(request, plan.deprecated)
    return retired ?? (plan.noBody === null ? undefined : bodySent(request, plan.noBody))
  }

  app.addHook('onRequest', function requestStep (request, reply, done) {
    const plan = planOf(request)
    request.plan = plan
    // 1. On every answer of the route, refusals included.
    reply.header('request-id', request.id)
    for (const [name, value] of plan.head) reply.header(name, lifecycleValue(value, request))
    // A request no route takes is answered without reading its body (transport/unread-body.ts).
    leaveUnroutedBodyUnread(request, reply)
    bindRequestLogger(request)
    // 2. The access decision.
    const refusal = decide(request, reply, plan.access)
    if (refusal instanceof Promise) {
      // A throw after the decision goes to the error handler, as Fastify does for a hook's throw.
      refusal.then((error) => {
        let next: Error | undefined | 'answered'
        try { next = error ?? afterAccess(request, reply, plan) } catch (thrown) { done(thrown as Error); return }
        if (next !== 'answered') done(next)
      }, (error: unknown) => { done(error as Error) })
      return
    }
    if (refusal !== undefined) {
      // A refusal waits one microtask: when the bytes after a well-formed head are malformed HTTP
      // (a bad chunk), Node's parser reports it in this same tick and its 400, which closes the
      // connection, goes first, as it did when this step was always asynchronous.
      queueMicrotask(() => { done(refusal) })
      return
    }
    // 3. to 5.
    const next = afterAccess(request, reply, plan)
    if (next !== 'answered') done(next)
  })

  // The audit log's actor, for the routes that write only: reads pay nothing for it.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (methods.every((m) => m === 'GET' || m === 'HEAD' || m === 'OPTIONS')) return
    const existing = route.preHandler
    route.preHandler = existing === undefined
      ? [actorStep]
      : [actorStep, ...(Array.isArray(existing) ? existing : [existing])]
  })

  installPreflightRoute(app)

  // Once the answer is known: its metrics, and the usage of the key it was charged to.
  app.addHook('onResponse', function responseStep (request, reply, done) {
    metrics.record(((request.plan as RoutePlan<Series> | null) ?? planOf(request)).series, request, reply)
    recordUsage(request, reply)
    done()
  })
}

/** The headers of typed and sensitive answers (http/response-headers.ts). */
const TYPED = ['x-content-type-options', 'nosniff'] as const
const NO_STORE = ['cache-control', 'no-store'] as const
