// The one error handler: every error becomes the error object (docs/product.md 5.1), and 5xx internals stay in
// the log. Also the 404/405 handler, since Fastify answers a known path with a wrong method 404.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, MAX_ERROR_DETAILS, type ErrorCode } from '../errors.ts'
import { redactUrl } from './redact.ts'
import { responseHeadersOf } from './response-headers.ts'

/** Fastify's own errors that a client can cause, and the code each becomes. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'validation_failed',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'validation_failed',
  FST_ERR_CTP_INVALID_JSON_BODY: 'validation_failed',
  FST_ERR_BAD_URL: 'validation_failed',
  FST_ERR_VALIDATION: 'validation_failed'
}

const CLIENT_MESSAGES: Partial<Record<ErrorCode, string>> = {
  unsupported_media_type: 'the body must be application/json',
  payload_too_large: 'the body is larger than 64 KiB'
}

export function toAppError (error: unknown): AppError {
  if (error instanceof AppError) return error
  const fastifyError = error as Partial<FastifyError>
  const code = fastifyError.code !== undefined ? FASTIFY_CODES[fastifyError.code] : undefined
  if (code !== undefined) return new AppError(code, CLIENT_MESSAGES[code] ?? 'the request is malformed')
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    // Any other client error Fastify raises (a malformed request line, an aborted body...).
    return new AppError('validation_failed', 'the request is malformed')
  }
  return new AppError('internal_error', 'an unexpected error occurred; quote the request id when reporting it', { cause: error })
}

export function sendError (request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  // Told in the request's one "request completed" line (http/request-log.ts), not a line of its own.
  request.failure = { code: error.code, message: error.message }
  // Also for answers that never ran the hooks (a malformed URL): every answer has these.
  reply.headers(responseHeadersOf(request))
  if (error.headers !== undefined) reply.headers(error.headers)
  const body: Record<string, unknown> = {
    code: error.code,
    message: error.message,
    status: error.status,
    requestId: request.id
  }
  const details = error.details
  if (details !== undefined) {
    body.details = details.length > MAX_ERROR_DETAILS ? details.slice(0, MAX_ERROR_DETAILS) : details
    if (details.length > MAX_ERROR_DETAILS) body.detailsTotal = details.length
  }
  return reply.code(error.status).type('application/json; charset=utf-8').send(body)
}

export function installErrorHandling (app: FastifyInstance): void {
  app.decorateRequest('failure', null)
  app.setErrorHandler((error, request, reply) => {
    const appError = toAppError(error)
    if (appError.status >= 500) {
      // The cause (stack, SQL, driver message) goes to the log only.
      request.log.error({ err: appError.cause ?? error, code: appError.code }, 'request failed')
    }
    return sendError(request, reply, appError)
  })

  const routes: { pattern: RegExp; method: string }[] = []
  app.addHook('onRoute', (route) => {
    if (route.url === '*' || route.url.endsWith('/*')) return
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    // The path exactly as declared: the router matches no trailing slash, so `GET /metrics/` is a
    // 404, not a 405 refusing GET while its Allow header offers GET.
    const pattern = new RegExp('^' + route.url.split('/').map((part) => part.startsWith(':') ? '[^/]+' : escapeRegExp(part)).join('/') + '$')
    for (const method of methods) routes.push({ pattern, method })
  })

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0] ?? ''
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))]
    if (allowed.length > 0) {
      if (!allowed.includes('OPTIONS')) allowed.push('OPTIONS') // CORS preflight answers every path
      return sendError(request, reply, new AppError(
        'method_not_allowed',
        `${request.method} is not allowed on ${redactUrl(path)}; allowed: ${allowed.join(', ')}`,
        { headers: { allow: allowed.join(', ') } }
      ))
    }
    // The path is echoed (and so logged) with anything shaped like a key cut out.
    return sendError(request, reply, new AppError('not_found', `no operation at ${request.method} ${redactUrl(path)}; see /openapi.json`))
  })
}

function escapeRegExp (text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
