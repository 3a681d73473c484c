// buildApp(deps): composition only, the table of contents of the running app. It builds the guard
// every request passes, hands each feature its ports and the few shared things it needs (each
// builds its own service: <feature>/<feature>.feature.ts), and lists the installation steps in the
// order they apply, each naming the steps it needs before it: a wrong order fails the build
// (http/steps.ts), never the first request. It opens nothing (infra.ts does) and listens nowhere
// (server.ts does), so tests build this very app on their own stores.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { Config } from './config.ts'
import type { AccessEvents } from './access/access.service.ts'
import { createGuard } from './access/guard.ts'
import type { KeyEvents } from './access/key-events.ts'
import { createUsageRecorder } from './access/usage.ts'
import { createInstance } from './http/instance.ts'
import { requestSteps, type RequestStepName } from './http/request-steps.ts'
import { installSteps, type Step } from './http/steps.ts'
import { backgroundJobs, installJobs } from './jobs/jobs.ts'
import { docsRoutes } from './openapi/docs.ts'
import { API_VERSION, describeOperation, registerOpenApi } from './openapi/openapi.ts'
import { serveOpenApi } from './openapi/serve.ts'
import { databaseReadiness, healthRoutes } from './ops/health.ts'
import { createMetrics, httpMetrics, malformedUrlCounter, metricsRoutes, type Metrics } from './ops/metrics.ts'
import type { RateLimiter } from './ratelimit/limiter.ts'
import { featureRoutes } from './routing/feature.ts'
import { systemClock, type Clock } from './shared/clock.ts'
import type { DeprecatedOperation } from './shared/deprecation.ts'
import type { Readiness } from './shared/readiness.ts'
import type { Stores } from './storage/stores.ts'
import { auditFeature } from './audit/audit.feature.ts'
import { categoriesFeature } from './categories/categories.feature.ts'
import { consoleRoutes } from './console/console.routes.ts'
import { eventsFeature } from './events/events.feature.ts'
import { inventoryFeature } from './inventory/inventory.feature.ts'
import { keyHolderFeature } from './key-holder/key-holder.feature.ts'
import { keysFeature } from './keys/keys.feature.ts'
import { mcpFeature } from './mcp/mcp.feature.ts'
import { ordersFeature } from './orders/orders.feature.ts'
import { petsFeature } from './pets/pets.feature.ts'
import { rateLimitStatusFeature } from './rate-limit-status/rate-limit-status.feature.ts'
import { keyRequestsFeature } from './key-requests/key-requests.feature.ts'
import { portalFeature } from './portal/portal.feature.ts'
import { webhooksFeature, type WebhooksShared } from './webhooks/webhooks.feature.ts'

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
  /** Bans restored at start, then lifts polled this often (jobs/ban-sync.ts); neither when absent (tests). */
  banSyncMs?: number
  /** Webhook attempts' resolver, reachable addresses and delivery data: tests only (webhooks.feature.ts). */
  webhooks?: Pick<WebhooksShared, 'resolve' | 'mayConnect' | 'render'>
}

/** The installation steps, in their order. */
export type StepName = RequestStepName | 'openapi' | 'mcp-tools' | 'v1-routes' | 'mcp-routes' | 'health-routes'
  | 'metrics-routes' | 'openapi-routes' | 'docs-routes' | 'console-routes' | 'portal-routes'
export type AppStep = Step<StepName>

/**
 * What a routes step needs: the hooks, parsers and error handler every request runs through (a
 * route keeps those the app has when it is declared), and the steps that read each route as it is
 * declared (a route declared before them would be missing from the document, the deprecations and
 * the MCP tools, and a /v1 route without a role would not fail the build).
 */
const ROUTES_NEED: StepName[] = [
  'validation', 'errors', 'json', 'pipeline', 'openapi', 'deprecations', 'roles', 'mcp-tools'
]

export async function buildApp (deps: AppDeps): Promise<FastifyInstance> {
  return await assembleApp(deps, (steps) => steps)
}

/** buildApp, its steps passed through `arrange` before they are installed: a test moves, drops or adds one. */
export async function assembleApp (
  deps: AppDeps,
  arrange: (steps: readonly AppStep[]) => readonly Step[]
): Promise<FastifyInstance> {
  const { config, stores, limiter } = deps
  const clock = deps.clock ?? systemClock
  const metrics = deps.metrics ?? createMetrics()
  const events = deps.events ?? metrics.events
  if (stores.poolStats !== undefined) metrics.trackPool(stores.poolStats.bind(stores))
  const { keyCacheMs, keyEvents, logger } = deps
  const { access, onKeyChanged } = createGuard({
    keys: stores.keys, limiter, clock, ...events, keyCacheMs, keyEvents, log: logger
  })
  const app = createInstance({ config, access, clock, logger, onFrameworkAnswer: malformedUrlCounter(metrics) })
  // Filled as the routes are declared (the deprecations step); usage per key, counted in memory.
  const deprecated: DeprecatedOperation[] = []
  const usage = createUsageRecorder(stores.keys, { clock, deprecations: () => deprecated })

  const features = {
    pets: petsFeature(stores.pets, { clock, getPetSunset: config.getPetSunset }),
    categories: categoriesFeature(stores.categories, { clock }),
    orders: ordersFeature(stores.orders, { clock, settings: config.orders }),
    inventory: inventoryFeature(stores.inventory, { clock, policy: config.orders }),
    keys: keysFeature(stores.keys, { clock, limiter, usage, onKeyChanged, deprecatedOperations: () => deprecated }),
    keyHolder: keyHolderFeature(stores.keys, { clock, usage, onKeyChanged }),
    rateLimitStatus: rateLimitStatusFeature(),
    events: eventsFeature(stores.events),
    webhooks: webhooksFeature(stores.webhooks, {
      clock, settings: config.webhooks, log: app.log, metrics, ...deps.webhooks
    }),
    audit: auditFeature(stores.audit),
    keyRequests: keyRequestsFeature(stores.keyRequests, {
      enabled: config.requestLog.enabled, registry: metrics.registry, keys: stores.keys
    }),
    portal: portalFeature(stores.portal, { clock, keys: stores.keys, limiter, access })
  }
  const mcp = mcpFeature({
    clock, repeatLimit: config.mcp.repeatLimit, describe: describeOperation, version: API_VERSION
  })
  const readiness = deps.readiness ?? databaseReadiness(stores)

  const steps: AppStep[] = [
    // Every request's hooks, parsers and error handler, and the readers of each route as declared.
    ...requestSteps({
      access, clock, usage, deprecated, corsOrigins: config.corsOrigins, metrics: httpMetrics(metrics),
      onDeprecatedCall: events.onDeprecatedCall, onNearLimit: (window) => { metrics.onNearLimit(window) },
      requestLog: features.keyRequests.recorder
    }),
    // @fastify/swagger and the error responses, and the MCP tools: both read the routes as declared.
    { name: 'openapi', needs: [], install: registerOpenApi },
    { name: 'mcp-tools', needs: [], install: mcp.collectTools },
    { name: 'v1-routes', needs: ROUTES_NEED, prefix: '/v1', encapsulated: true, install: featureRoutes(features) },
    // Its tools call the /v1 routes (app.inject), and their prose comes from the finished document.
    { name: 'mcp-routes', needs: [...ROUTES_NEED, 'v1-routes'], encapsulated: true, install: mcp.routes },
    { name: 'health-routes', needs: ROUTES_NEED, encapsulated: true, install: (a) => healthRoutes(a, { readiness }) },
    { name: 'metrics-routes', needs: ROUTES_NEED, encapsulated: true, install: (a) => metricsRoutes(a, { metrics }) },
    // Also after openapi for itself: it serves app.swagger(), which @fastify/swagger adds.
    { name: 'openapi-routes', needs: ROUTES_NEED, install: (a) => { serveOpenApi(a) } },
    { name: 'docs-routes', needs: ROUTES_NEED, encapsulated: true, install: (a) => docsRoutes(a, { specUrl: '/openapi.json' }) },
    // The operator console (docs/product.md section 10): static files; it works through /v1 only.
    { name: 'console-routes', needs: ROUTES_NEED, encapsulated: true, install: consoleRoutes },
    // The partner portal (docs/product.md, "Partner portal"): its page, assets and session routes;
    // its API door /portal/api/v1 is the /v1 routes themselves (http/instance.ts).
    { name: 'portal-routes', needs: ROUTES_NEED, encapsulated: true, install: features.portal.pages }
  ]
  await installSteps(app, arrange(steps))
  // Background work (jobs/jobs.ts), from ready to close; the bans are restored before the first request.
  installJobs(app, backgroundJobs({
    keys: stores.keys, events: stores.events, limiter, clock, usage, log: app.log,
    orders: features.orders.service, dispatcher: features.webhooks.dispatcher,
    eventRetentionDays: config.events.retentionDays, webhookPollMs: config.webhooks.pollMs,
    usageFlushMs: deps.usageFlushMs, banSyncMs: deps.banSyncMs,
    requestLog: features.keyRequests.recorder, keyRequests: stores.keyRequests,
    requestLogFlushMs: config.requestLog.flushMs,
    portalSessions: features.portal.service
  }), { events: metrics })
  return app
}
