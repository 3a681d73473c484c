// The access decision on each request's server span, in our own namespace (OpenTelemetry has no
// convention for rate limiting yet: semantic-conventions issue 3361). Installed by app.ts only
// when tracing is on (telemetry/hooks.ts), so with tracing off a request runs none of these hooks.
import { context, type Span } from '@opentelemetry/api'
import { getRPCMetadata } from '@opentelemetry/core'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { bindingWindow } from '../ratelimit/limiter.ts'

/** The codes of the access step's refusals (errors.ts): 401, 403 and 429. */
const ACCESS_CODES = new Set([
  'unauthenticated', 'api_key_expired', 'forbidden', 'insufficient_scope', 'rate_limited', 'api_key_banned', 'address_banned'
])

/**
 * Each request's server span (instrumentation-http's), found when the request starts; for a
 * request the MCP endpoint makes in a caller's name, the span it runs under (mcp-span.ts).
 */
const spans = new WeakMap<FastifyRequest, Span>()
/** The requests the access step refused, with the refusal's code. */
const refused = new WeakMap<FastifyRequest, string>()

export function traceIdOf (request: FastifyRequest): string | undefined {
  return spans.get(request)?.spanContext().traceId
}

export function installRequestSpan (app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const span = getRPCMetadata(context.active())?.span
    if (span !== undefined) {
      spans.set(request, span)
      const operationId = (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId
      if (operationId !== undefined) span.setAttribute('petstore.operation_id', operationId)
    }
    done()
  })
  app.addHook('onError', (request, _reply, error, done) => {
    const code = (error as { code?: unknown }).code
    if (spans.has(request) && typeof code === 'string' && ACCESS_CODES.has(code)) refused.set(request, code)
    done()
  })
  app.addHook('onResponse', (request, reply, done) => {
    const span = spans.get(request)
    if (span !== undefined) {
      // Told once the answer is sent, so the event carries the status the client got.
      const code = refused.get(request)
      if (code !== undefined) {
        span.setAttributes({ 'petstore.access.refused': true, 'petstore.access.code': code })
        span.addEvent('petstore.access.refused', { 'petstore.access.code': code, 'http.response.status_code': reply.statusCode })
      }
      describeAccess(span, request)
    }
    done()
  })
}

/** The decision of the access step, if it decided this request (a guarded route). */
function describeAccess (span: Span, request: FastifyRequest): void {
  const decision = request.rateLimit
  if (decision === null) return
  const principal = request.principal
  if (principal !== null) {
    span.setAttributes({ 'petstore.key.id': principal.keyId, 'petstore.key.role': principal.role, 'petstore.plan': principal.plan })
  }
  span.setAttributes({
    'petstore.ratelimit.window': bindingWindow(decision) === decision.minute ? 'minute' : 'day',
    'petstore.ratelimit.remaining.minute': decision.minute.remaining,
    'petstore.ratelimit.remaining.day': decision.day.remaining
  })
  // onError said so when the access step refused; any other answer was not refused by it.
  if (!refused.has(request)) span.setAttribute('petstore.access.refused', false)
  if (decision.banStarted && decision.ban !== null) {
    span.addEvent('petstore.ban.started', {
      'petstore.ban.until': new Date(decision.ban.until).toISOString(),
      'petstore.ban.reason': decision.ban.reason
    })
  }
}
