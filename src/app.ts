// buildApp(deps): composition only. It lists the plugins and route modules in the order they
// apply and hands each its dependencies; it opens nothing (infra.ts does) and listens nowhere
// (server.ts does), so tests build this very app on their own stores.
import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { categoryRoutes } from './categories/categories.routes.ts'
import { createCategoryService } from './categories/categories.service.ts'
import type { Config } from './config.ts'
import { answerMalformedUrl, installAccess } from './http/access.ts'
import { connectionOptions } from './http/connections.ts'
import { installCors } from './http/cors.ts'
import { consoleRoutes } from './console/console.routes.ts'
import { docsRoutes } from './openapi/docs.ts'
import { installErrorHandling } from './http/errors.ts'
import { deprecatedOperation } from './http/lifecycle.ts'
import { collectDeprecatedOperations, installSunset, lifecycleHeaderStep } from './http/lifecycle-hooks.ts'
import { healthRoutes } from './ops/health.ts'
import { setResponseHeaders } from './http/response-headers.ts'
import { createMetrics, installMetrics, malformedUrlCounter, metricsRoutes, type Metrics } from './ops/metrics.ts'
import { registerOpenApi } from './openapi/openapi.ts'
import { serveOpenApi } from './openapi/serve.ts'
import { acceptedRequestId, bindRequestLogger, lazyChildLogger, observeFrameworkAnswers, RequestLog } from './http/request-log.ts'
import { installValidation, parseJsonBody } from './http/validation.ts'
import { inventoryRoutes } from './inventory/inventory.routes.ts'
import { createInventoryService } from './inventory/inventory.service.ts'
import { keyRoutes } from './keys/keys.routes.ts'
import { createAccessService, type AccessEvents } from './access/access.service.ts'
import { localKeyEvents, type KeyEvents } from './access/key-events.ts'
import { createKeyAdmin } from './keys/keys.service.ts'
import { createUsageRecorder } from './access/usage.ts'
import { installUsageRecording } from './http/usage.ts'
import { orderRoutes } from './orders/orders.routes.ts'
import { createOrderService } from './orders/orders.service.ts'
import { rateLimitRoutes } from './quota/quota.routes.ts'
import { petRoutes } from './pets/pets.routes.ts'
import { createPetService } from './pets/pets.service.ts'
import type { RateLimiter } from './ratelimit/limiter.ts'
import type { Readiness } from './shared/readiness.ts'
import { systemClock, type Clock } from './shared/clock.ts'
import type { Stores } from './storage/stores.ts'
import { requireRoles, routeConfigOf } from './http/route-config.ts'

export interface AppDeps {
  config: Config
  stores: Stores
  limiter: RateLimiter
  clock?: Clock
  /** A pino logger; none (silent) when absent. */
  logger?: FastifyBaseLogger
  readiness?: Readiness
  /** Metrics and log events of the access and lifecycle hooks; by default those of `metrics`. */
  events?: AccessEvents & { onDeprecatedCall?: (operationId: string, keyId: number | null) => void }
  /** Served at /metrics (ops/metrics.ts); a fresh set when absent. */
  metrics?: Metrics
  keyCacheMs?: number
  /** Key changes from and to the other instances (infra.ts); this app alone when absent. */
  keyEvents?: KeyEvents
  /** How often usage per key is written (access/usage.ts); 0: only on demand and at close (tests). */
  usageFlushMs?: number
}

/** The 1.0.0 release deprecated GET /pets/{petId}; its sunset comes from the configuration. */
export const GET_PET_DEPRECATED_AT = new Date('2026-11-21T00:00:00Z')

export const BODY_LIMIT = 64 * 1024

const EXPOSED_HEADERS = [
  'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit', 'RateLimit-Policy', 'Retry-After',
  'Request-Id', 'ETag', 'Location', 'Link', 'Deprecation', 'Sunset', 'Warning', 'Allow'
]

export async function buildApp (deps: AppDeps): Promise<FastifyInstance> {
  const { config, stores, limiter } = deps
  const clock = deps.clock ?? systemClock
  const metrics = deps.metrics ?? createMetrics()
  const events = deps.events ?? metrics.events
  const poolStats = stores.poolStats?.bind(stores)
  if (poolStats !== undefined) metrics.trackPool(poolStats)

  // One "request completed" line per request, refusals aggregated, and no pino child per request
  // unless something is logged through it (http/request-log.ts).
  const requestLog = new RequestLog({ clock })
  const countMalformedUrl = malformedUrlCounter(metrics)
  // Who may call what, and how much: decided by the access service, built before the app so
  // that Fastify's own error paths (malformed URLs) can charge through it too.
  const access = createAccessService({ keys: stores.keys, limiter, clock, ...events, ...(deps.keyCacheMs !== undefined && { keyCacheMs: deps.keyCacheMs }) })
  // A revocation, role or plan change or rotation made here is forgotten here at once, and on the
  // other instances as soon as the message arrives (Redis), else within the key cache's 2 s.
  const keyEvents = deps.keyEvents ?? localKeyEvents()
  keyEvents.subscribe((keyId) => { access.forgetKey(keyId) })
  const app = Fastify({
    ...(deps.logger !== undefined ? { loggerInstance: deps.logger, logController: requestLog, childLoggerFactory: lazyChildLogger } : { logger: false }),
    bodyLimit: BODY_LIMIT,
    // Timeouts, header size, and the error object for Node's own answers (400, 408, 431).
    ...connectionOptions(config.server),
    // Never "trust any hop" (config.ts). A hop count is given as a function: Fastify takes a
    // bare number as "trust nothing" since 5.x, which would make every client behind the load
    // balancer one address, one quota and one ban.
    trustProxy: trustFunction(config.trustProxy),
    // Long enough for any int64 and then some: a longer path segment is refused below.
    routerOptions: { maxParamLength: 200 },
    // A malformed URL (bad percent-encoding) or an over-long path segment never reaches routing;
    // it still gets the error object, the request id and, under /v1, the rate-limit headers.
    // Fastify answers these outside its hooks: each is logged and counted here.
    frameworkErrors: observeFrameworkAnswers(answerMalformedUrl(access, clock), (request, reply, ms) => {
      requestLog.completedOutsideRouting(request, reply, ms)
      countMalformedUrl(request, reply, ms)
    }),
    // Accept a caller's request id for tracing when it is harmless, else make one.
    genReqId: (request) => acceptedRequestId(request.headers['request-id']) ?? randomUUID()
  })
  requestLog.attach(app.log)
  app.addHook('onClose', (_app, done) => { requestLog.flush(); done() })

  // The first step of every request, synchronous: the request id and the lifecycle headers go on
  // every response, errors included, so they are set before anything can fail (the access step
  // comes next); and the request's logger learns where to find the key id once it is known.
  // A deprecated operation's call is counted in the metrics and, per key, in the usage flush
  // (the console's deprecation view); `usage` is made below, before any request arrives.
  const onDeprecatedCall = (operationId: string, keyId: number | null): void => {
    events.onDeprecatedCall?.(operationId, keyId)
    if (keyId !== null) usage.recordDeprecated(operationId, keyId, clock.now())
  }
  const deprecatedOperations = collectDeprecatedOperations(app)
  const lifecycleOptions = { clock, docsUrl: '/docs', onDeprecatedCall }
  const setLifecycleHeaders = lifecycleHeaderStep(lifecycleOptions)
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('request-id', request.id)
    setResponseHeaders(request, reply)
    setLifecycleHeaders(request, reply, routeConfigOf(request).lifecycle)
    bindRequestLogger(request)
    done()
  })
  installValidation(app)
  installErrorHandling(app)
  installMetrics(app, metrics)
  // JSON only: Fastify's default text/plain parser would let a string body reach validation.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try { done(null, parseJsonBody(body as string)) } catch (error) { done(error as Error, undefined) }
  })

  requireRoles(app)
  installAccess(app, { access, clock })
  installSunset(app, lifecycleOptions)
  // Usage per key: counted in memory per response, written in batches, flushed at close (before
  // server.ts closes the stores).
  const usage = createUsageRecorder(stores.keys, {
    ...(deps.usageFlushMs !== undefined && deps.usageFlushMs > 0 && { intervalMs: deps.usageFlushMs }),
    onError: (error) => { app.log.warn({ err: error }, 'usage flush failed; its counts are kept for the next one') }
  })
  installUsageRecording(app, { recorder: usage, clock, onNearLimit: (window) => { metrics.onNearLimit(window) } })
  if (deps.usageFlushMs !== 0) app.addHook('onReady', async () => { usage.start() })
  app.addHook('onClose', async () => {
    await usage.stop().catch((error: unknown) => { app.log.warn({ err: error }, 'usage flush at close failed') })
  })

  // /metrics is for Prometheus on the private network, never for a browser: no CORS at all,
  // preflights included (no CORS headers, and the preflight is not answered). http/cors.ts.
  installCors(app, {
    origin: config.corsOrigins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['X-API-Key', 'Authorization', 'Content-Type', 'If-Match', 'Idempotency-Key', 'Request-Id'],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
    excluded: ['/metrics']
  })

  await registerOpenApi(app)

  const pets = createPetService(stores.pets)
  const categories = createCategoryService(stores.categories)
  const orders = createOrderService(stores.orders, clock, config.orders)
  const inventory = createInventoryService(stores.inventory)
  const admin = createKeyAdmin(stores.keys, clock, { onUnban: async (_keyId, subject) => { await limiter.unban(subject) }, onKeyChanged: (record) => { access.forgetKey(record.quotaKeyId); keyEvents.publish(record.quotaKeyId) }, usage, peek: (subject, quota) => limiter.peek(subject, quota), deprecatedOperations: () => deprecatedOperations })
  const getPetLifecycle = deprecatedOperation(GET_PET_DEPRECATED_AT, config.getPetSunset, { method: 'GET', path: '/v1/pets?id={petId}', operationId: 'listPets' })

  await app.register(async (v1) => {
    await v1.register(petRoutes, { pets, clock, getPetLifecycle })
    await v1.register(categoryRoutes, { categories })
    await v1.register(orderRoutes, { orders, clock })
    await v1.register(inventoryRoutes, { inventory })
    await v1.register(keyRoutes, { admin })
    await v1.register(rateLimitRoutes)
  }, { prefix: '/v1' })

  await app.register(healthRoutes, { readiness: deps.readiness ?? { check: async () => { await stores.ping(); return { status: 'ok', checks: { database: { status: 'ok' } } } } } })
  await app.register(metricsRoutes, { metrics })
  serveOpenApi(app)
  await app.register(docsRoutes, { specUrl: '/openapi.json' })
  // The operator console (docs/product.md section 10): static files; it works through /v1 only.
  await app.register(consoleRoutes)
  return app
}

/** The hop at index i from the socket is trusted while i < hops; a list goes to proxy-addr as is. */
function trustFunction (trust: Config['trustProxy']): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust !== 'number') return trust
  const hops = trust
  return (_address, hop) => hop < hops
}
