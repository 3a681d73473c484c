// The installation steps every request runs through, in their order, for the list of app.ts: they
// come before any route, because a route keeps the hooks, parsers and error handler the app has
// when it is declared (Fastify copies them into each plugin as it starts). Hooks of one kind run
// in the order they are installed.
import type { FastifyInstance } from 'fastify'
import type { AccessService } from '../access/access.service.ts'
import type { UsageRecorder } from '../access/usage.ts'
import { requireRoles } from '../routing/route-config.ts'
import type { Clock } from '../shared/clock.ts'
import type { DeprecatedOperation } from '../shared/deprecation.ts'
import type { CorsOptions } from './cors.ts'
import { installErrorHandling } from './errors.ts'
import { collectDeprecatedOperations } from './lifecycle-hooks.ts'
import { installPipeline, type ResponseMetrics } from './pipeline.ts'
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
    // and the audit log's actor on the routes that write.
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
          metrics: options.metrics
        })
      }
    }
  ]
}
