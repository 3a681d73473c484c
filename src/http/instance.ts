// The Fastify instance buildApp (app.ts) installs its steps on: the body limit, Node's timeouts and
// limits, which proxies are trusted, the router's limits, request ids, the one-line request log,
// and the answers Fastify gives outside its hooks (a malformed URL), which still get the error
// object, the request id and, under /v1, the charge and the rate-limit headers.
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
