// buildApp(deps): composition only. It lists the installation steps (hooks, then routes) in the
// order they apply, each with the steps it needs before it, and hands each its dependencies; it
// opens nothing (infra.ts does) and listens nowhere (server.ts does), so tests build this very
// app on their own stores. A step installed before one it needs fails the build
// (http/steps.ts), never the first request.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { categoryRoutes } from './categories/categories.routes.ts'
import { createCategoryService } from './categories/categories.service.ts'
import type { Config } from './config.ts'
import { answerMalformedUrl } from './http/access.ts'
import { installPipeline } from './http/pipeline.ts'
import { connectionOptions } from './transport/connections.ts'
import { consoleRoutes } from './console/console.routes.ts'
import { docsRoutes } from './openapi/docs.ts'
import { installErrorHandling } from './http/errors.ts'
import { deprecatedOperation } from './routing/lifecycle.ts'
import { collectDeprecatedOperations } from './http/lifecycle-hooks.ts'
import type { DeprecatedOperation } from './shared/deprecation.ts'
import { healthRoutes } from './ops/health.ts'
import { createMetrics, httpMetrics, malformedUrlCounter, metricsRoutes, type Metrics } from './ops/metrics.ts'
import { API_VERSION, registerOpenApi } from './openapi/openapi.ts'
import { serveOpenApi } from './openapi/serve.ts'
import { acceptedRequestId, lazyChildLogger, newRequestId, observeFrameworkAnswers, RequestLog } from './http/request-log.ts'
import { installValidation, parseJsonBody } from './http/validation.ts'
import { inventoryRoutes } from './inventory/inventory.routes.ts'
import { createInventoryService } from './inventory/inventory.service.ts'
import { keyRoutes } from './keys/keys.routes.ts'
import { keyHolderRoutes } from './key-holder/key-holder.routes.ts'
import { createKeyHolder } from './key-holder/key-holder.service.ts'
import { createAccessService, type AccessEvents } from './access/access.service.ts'
import { localKeyEvents, type KeyEvents } from './access/key-events.ts'
import { createKeyAdmin } from './keys/keys.service.ts'
import { createUsageRecorder } from './access/usage.ts'
import { orderRoutes } from './orders/orders.routes.ts'
import { mcpRoutes } from './mcp/mcp.routes.ts'
import { collectTools, type Tool } from './mcp/tools.ts'
import { MCP_CHANNEL_HEADER, MCP_CHANNEL_TOKEN } from './shared/channel.ts'
import { createOrderService } from './orders/orders.service.ts'
import { eventRoutes } from './events/events.routes.ts'
import { auditRoutes } from './audit/audit.routes.ts'
import { createAuditService } from './audit/audit.service.ts'
import { createEventService } from './events/events.service.ts'
import { renderEvent } from './events/render.ts'
import { rateLimitRoutes } from './rate-limit-status/rate-limit-status.routes.ts'
import { petRoutes } from './pets/pets.routes.ts'
import { createPetService } from './pets/pets.service.ts'
import type { RateLimiter } from './ratelimit/limiter.ts'
import type { Readiness } from './shared/readiness.ts'
import { systemClock, type Clock } from './shared/clock.ts'
import type { Stores } from './storage/stores.ts'
import { requireRoles } from './routing/route-config.ts'
import { installSteps, type Step } from './http/steps.ts'
import { backgroundJobs, installJobs } from './jobs/jobs.ts'
import { telemetry } from './telemetry/hooks.ts'
import { webhookRoutes } from './webhooks/webhooks.routes.ts'
import { createWebhookService } from './webhooks/webhooks.service.ts'
import { createDispatcher, type RenderEvent } from './webhooks/dispatcher.ts'
import type { Resolve } from './webhooks/url-guard.ts'

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
  /** How often usage per key is written (jobs/usage-flush.ts); 0: only on demand and at close (tests). */
  usageFlushMs?: number
  /** How often the bans lifted elsewhere are polled (jobs/ban-sync.ts); none when absent: server.ts, which restores the bans, polls. */
  banSyncMs?: number
  /** The resolver webhook URLs are checked with, at creation and at every attempt: tests only (the system's by default). */
  webhookResolve?: Resolve
  /** Which addresses webhook attempts may connect to (all by default): tests allow loopback only. */
  webhookMayConnect?: (address: string) => boolean
  /** An event's data as deliveries show it; events/render.ts (what GET /v1/events shows) when absent. */
  renderEvent?: RenderEvent
  /** Rearranges the installation steps before they are installed: tests only (a wrong order must fail the build). */
  arrangeSteps?: (steps: readonly AppStep[]) => readonly Step[]
}

/** The installation steps of buildApp, in their order. */
export type StepName =
  | 'deprecations' | 'roles' | 'validation' | 'errors' | 'json' | 'pipeline' | 'openapi'
  | 'mcp-tools' | 'v1-routes' | 'mcp-routes' | 'health-routes' | 'metrics-routes' | 'openapi-routes' | 'docs-routes' | 'console-routes'
export type AppStep = Step<StepName>

/** The steps every request runs through (hooks and parsers): every routes step comes after them all. */
const PIPELINE: StepName[] = ['validation', 'errors', 'json', 'pipeline']
/**
 * What a routes step needs: the pipeline (a route's hooks, parsers and error handler are those
 * of the app when the route is declared: Fastify copies them into each plugin as it starts), and
 * the steps that read each route as it is declared (onRoute): a route declared before them would
 * be missing from the document and from the deprecations list, and a /v1 route without a role
 * would not fail the build.
 */
const ROUTES_NEED: StepName[] = [...PIPELINE, 'openapi', 'deprecations', 'roles', 'mcp-tools']

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
  const onObserverError = (error: unknown): void => { deps.logger?.error({ err: error }, 'an access observer failed; the request was answered all the same') }
  const access = createAccessService({ keys: stores.keys, limiter, clock, ...events, onObserverError, ...(deps.keyCacheMs !== undefined && { keyCacheMs: deps.keyCacheMs }) })
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
    genReqId: (request) => acceptedRequestId(request.headers['request-id']) ?? newRequestId()
  })
  requestLog.attach(app.log)
  // The access decision on each request's span: only when tracing is on (telemetry/).
  telemetry.installApp?.(app)
  app.addHook('onClose', (_app, done) => { requestLog.flush(); done() })

  // Usage per key: counted in memory per response, written in batches by the usage-flush job.
  const usage = createUsageRecorder(stores.keys, { clock, deprecations: () => deprecatedOperations })
  // A deprecated operation's call is counted in the metrics and, per key, in the usage flush
  // (the console's deprecation view).
  const onDeprecatedCall = (operationId: string, keyId: number | null): void => {
    events.onDeprecatedCall?.(operationId, keyId)
    if (keyId !== null) usage.recordDeprecated(operationId, keyId, clock.now())
  }
  const lifecycleOptions = { clock, docsUrl: '/docs', onDeprecatedCall }
  let deprecatedOperations: DeprecatedOperation[] = []
  let tools: Tool[] = []

  const pets = createPetService(stores.pets, clock)
  const categories = createCategoryService(stores.categories, clock)
  const orders = createOrderService(stores.orders, clock, config.orders)
  const inventory = createInventoryService(stores.inventory, clock, config.orders)
  const admin = createKeyAdmin(stores.keys, clock, { onUnban: async (_keyId, subject) => { await limiter.unban(subject) }, onKeyChanged: (record) => { access.forgetKey(record.quotaKeyId); keyEvents.publish(record.quotaKeyId) }, usage, peek: (subject, quota) => limiter.peek(subject, quota), deprecatedOperations: () => deprecatedOperations })
  const webhookOptions = { ...(deps.webhookResolve !== undefined && { resolve: deps.webhookResolve }) }
  const dispatcher = createDispatcher({ store: stores.webhooks, clock, settings: config.webhooks, log: app.log, onOutcome: (outcome) => { metrics.onWebhookOutcome(outcome) }, ...webhookOptions, ...(deps.webhookMayConnect !== undefined && { mayConnect: deps.webhookMayConnect }), render: deps.renderEvent ?? ((event) => renderEvent(event).data) })
  const webhooks = createWebhookService(stores.webhooks, clock, { allowedHosts: config.webhooks.allowedHosts, onQueued: () => { dispatcher.wake() }, ...webhookOptions })
  metrics.trackWebhooks(() => stores.webhooks.pendingStats(), clock)
  const getPetLifecycle = deprecatedOperation(GET_PET_DEPRECATED_AT, config.getPetSunset, { method: 'GET', path: '/v1/pets?id={petId}', operationId: 'listPets' })

  // The installation order. Hooks of one kind run in the order they are installed; a step
  // lists the steps it needs before it, and the reason is beside it.
  const steps: AppStep[] = [
    // Reads each route as it is declared: the list of deprecated operations (GET /admin/deprecations).
    { name: 'deprecations', needs: [], install: (app) => { deprecatedOperations = collectDeprecatedOperations(app) } },
    // Reads each route as it is declared: a /v1 route without config.role fails the build.
    { name: 'roles', needs: [], install: requireRoles },
    // The two Ajv instances and the integer and body guards (per route, as routes are declared).
    { name: 'validation', needs: [], install: installValidation },
    // The one error handler, the 404 and the 405 (which learns each route's path as it is declared).
    { name: 'errors', needs: [], install: installErrorHandling },
    // JSON only: Fastify's default text/plain parser would let a string body reach validation.
    {
      name: 'json',
      needs: [],
      install: (app) => {
        app.removeAllContentTypeParsers()
        app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
          try { done(null, parseJsonBody(body as string)) } catch (error) { done(error as Error, undefined) }
        })
      }
    },
    // The one pipeline step (http/pipeline.ts): one onRequest step (the request id and the
    // headers of every answer, the access decision, CORS, the sunset), one onResponse step
    // (metrics, usage per key), and the audit log's actor on the routes that write. /metrics is
    // for Prometheus on the private network, never for a browser: no CORS at all, preflights
    // included (http/cors.ts).
    {
      name: 'pipeline',
      needs: [],
      install: (app) => {
        installPipeline(app, {
          access: { access, clock },
          lifecycle: lifecycleOptions,
          cors: {
            origin: config.corsOrigins,
            methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
            allowedHeaders: ['X-API-Key', 'Authorization', 'Content-Type', 'If-Match', 'Idempotency-Key', 'Request-Id'],
            exposedHeaders: EXPOSED_HEADERS,
            maxAge: 600,
            excluded: ['/metrics']
          },
          usage: { recorder: usage, clock, onNearLimit: (window) => { metrics.onNearLimit(window) } },
          metrics: httpMetrics(metrics)
        })
      }
    },
    // @fastify/swagger and the error responses: both read each route as it is declared.
    { name: 'openapi', needs: [], install: registerOpenApi },
    // Reads each /v1 route as it is declared: the MCP tools are made from the routes themselves.
    { name: 'mcp-tools', needs: [], install: (app) => { tools = collectTools(app) } },
    {
      name: 'v1-routes',
      needs: ROUTES_NEED,
      prefix: '/v1',
      encapsulated: true,
      install: async (v1) => {
        await v1.register(petRoutes, { pets, clock, getPetLifecycle })
        await v1.register(categoryRoutes, { categories })
        await v1.register(orderRoutes, { orders, clock })
        await v1.register(inventoryRoutes, { inventory })
        await v1.register(keyRoutes, { admin })
        await v1.register(keyHolderRoutes, { holder: createKeyHolder(stores.keys, clock, { usage, onKeyChanged: (record) => { access.forgetKey(record.quotaKeyId); keyEvents.publish(record.quotaKeyId) } }) })
        await v1.register(rateLimitRoutes)
        await v1.register(eventRoutes, { events: createEventService(stores.events) })
        await v1.register(webhookRoutes, { webhooks })
        await v1.register(auditRoutes, { audit: createAuditService(stores.audit) })
      }
    },
    // The MCP endpoint (mcp/): its tools call the /v1 routes through app.inject, so after them;
    // the prose of each operation comes from the finished document (openapi).
    {
      name: 'mcp-routes',
      needs: [...ROUTES_NEED, 'v1-routes'],
      encapsulated: true,
      install: (app) => mcpRoutes(app, {
        tools,
        describe: (operationId) => describeOperation(app, operationId),
        clock,
        repeatLimit: config.mcp.repeatLimit,
        channel: { header: MCP_CHANNEL_HEADER, value: MCP_CHANNEL_TOKEN },
        version: API_VERSION
      })
    },
    { name: 'health-routes', needs: ROUTES_NEED, encapsulated: true, install: (app) => healthRoutes(app, { readiness: deps.readiness ?? { check: async () => { await stores.ping(); return { status: 'ok', checks: { database: { status: 'ok' } } } } } }) },
    { name: 'metrics-routes', needs: ROUTES_NEED, encapsulated: true, install: (app) => metricsRoutes(app, { metrics }) },
    // Also after openapi for itself: it serves app.swagger(), which @fastify/swagger adds.
    { name: 'openapi-routes', needs: ROUTES_NEED, install: (app) => { serveOpenApi(app) } },
    { name: 'docs-routes', needs: ROUTES_NEED, encapsulated: true, install: (app) => docsRoutes(app, { specUrl: '/openapi.json' }) },
    // The operator console (docs/product.md section 10): static files; it works through /v1 only.
    { name: 'console-routes', needs: ROUTES_NEED, encapsulated: true, install: consoleRoutes }
  ]
  await installSteps(app, deps.arrangeSteps?.(steps) ?? steps)
  // Background work (jobs/jobs.ts): from ready to close; the usage flush runs once more at close.
  const jobDeps = { keys: stores.keys, limiter, clock, usage, orders, events: stores.events, eventRetentionDays: config.events.retentionDays, dispatcher, webhookPollMs: config.webhooks.pollMs, ...(deps.usageFlushMs !== undefined && { usageFlushMs: deps.usageFlushMs }), ...(deps.banSyncMs !== undefined && { banSyncMs: deps.banSyncMs }) }
  installJobs(app, backgroundJobs(jobDeps), { events: metrics })
  return app
}

/** The hop at index i from the socket is trusted while i < hops; a list goes to proxy-addr as is. */
function trustFunction (trust: Config['trustProxy']): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust !== 'number') return trust
  const hops = trust
  return (_address, hop) => hop < hops
}

/** The description the finished document gives an operation (its prose file included). */
function describeOperation (app: FastifyInstance, operationId: string): string | undefined {
  const document = (app as unknown as { swagger?: () => { paths?: Record<string, Record<string, { operationId?: string; description?: string }>> } }).swagger?.()
  for (const item of Object.values(document?.paths ?? {})) {
    for (const operation of Object.values(item)) if (operation.operationId === operationId) return operation.description
  }
  return undefined
}
