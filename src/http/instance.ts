// The Fastify instance buildApp (app.ts) installs its steps on: the body limit, Node's timeouts and
// limits, which proxies are trusted, the router's limits, request ids, the one-line request log,
// and the answers Fastify gives outside its hooks (a malformed URL), which still get the error
// object, the request id and, under /v1, the charge and the rate-limit headers.
import type { IncomingMessage } from 'node:http'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import type { AccessService } from '../access/access.service.ts'
import type { Config } from '../config.ts'
import type { Clock } from '../shared/clock.ts'
import { telemetry } from '../telemetry/hooks.ts'
import { connectionOptions } from '../transport/connections.ts'
import { trustProxyOption } from '../transport/trust-proxy.ts'
import { answerMalformedUrl } from './access.ts'
import { acceptedRequestId, lazyChildLogger, newRequestId, observeFrameworkAnswers, RequestLog } from './request-log.ts'

export const BODY_LIMIT = 64 * 1024

/**
 * The partner portal's door (docs/product.md, "Partner portal"): `/portal/api/v1/…` is routed as
 * `/v1/…`, the very route, schema and rules, and marked here so that the access step takes the
 * portal session in place of a key (http/access.ts) and the audit log says `via: portal`. The mark
 * is on the raw request, which only this rewrite sets: a client cannot mark a /v1 request itself.
 */
const PORTAL_DOOR = '/portal/api/v1'
const PORTAL_MARK = Symbol('petstore.portal')

/** The URL routed for `url`: a portal door path without its `/portal/api` part; null for any other. */
export function portalDoorTarget (url: string): string | null {
  if (!url.startsWith(PORTAL_DOOR)) return null
  const next = url.charCodeAt(PORTAL_DOOR.length)
  // '/' or '?' or the end: /portal/api/v10 is no door.
  if (!(Number.isNaN(next) || next === 47 || next === 63)) return null
  return url.slice(PORTAL_DOOR.length - 3)
}

/** Whether the request came through the portal's door. */
export const viaPortal = (request: FastifyRequest): boolean =>
  (request.raw as unknown as Record<symbol, unknown>)[PORTAL_MARK] === true

function rewritePortalDoor (raw: IncomingMessage): string {
  const url = raw.url ?? '/'
  const target = portalDoorTarget(url)
  if (target === null) return url
  ;(raw as unknown as Record<symbol, unknown>)[PORTAL_MARK] = true
  return target
}

export interface InstanceOptions {
  config: Pick<Config, 'server' | 'trustProxy'>
  /** The guard: a malformed URL under /v1 is charged like any request. */
  access: AccessService
  clock: Clock
  /** A pino logger; none (silent) when absent. */
  logger?: FastifyBaseLogger | undefined
  /** Each answer Fastify gave outside its hooks (ops/metrics.ts counts them). */
  onFrameworkAnswer: (request: FastifyRequest, reply: FastifyReply, ms: number) => void
}

export function createInstance (options: InstanceOptions): FastifyInstance {
  const { config, clock, logger } = options
  // One "request completed" line per request, refusals aggregated, and no pino child per request
  // unless something is logged through it (request-log.ts).
  const requestLog = new RequestLog({ clock })
  const app = Fastify({
    ...(logger === undefined
      ? { logger: false }
      : { loggerInstance: logger, logController: requestLog, childLoggerFactory: lazyChildLogger }),
    bodyLimit: BODY_LIMIT,
    // Timeouts, header size, and the error object for Node's own answers (400, 408, 431).
    ...connectionOptions(config.server),
    trustProxy: trustProxyOption(config.trustProxy),
    // Long enough for any int64 and then some: a longer path segment is refused below.
    routerOptions: { maxParamLength: 200 },
    rewriteUrl: rewritePortalDoor,
    // A malformed URL (bad percent-encoding) or an over-long path segment never reaches routing.
    // Fastify answers these outside its hooks: each is logged and counted here.
    frameworkErrors: observeFrameworkAnswers(answerMalformedUrl(options.access, clock), (request, reply, ms) => {
      requestLog.completedOutsideRouting(request, reply, ms)
      options.onFrameworkAnswer(request, reply, ms)
    }),
    // Accept a caller's request id for tracing when it is harmless, else make one.
    genReqId: (request) => acceptedRequestId(request.headers['request-id']) ?? newRequestId()
  })
  requestLog.attach(app.log)
  // The access decision on each request's span: only when tracing is on (telemetry/).
  telemetry.installApp?.(app)
  app.addHook('onClose', (_app, done) => { requestLog.flush(); done() })
  return app
}
