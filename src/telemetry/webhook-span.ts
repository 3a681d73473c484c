// The span of each webhook delivery attempt (webhooks/dispatcher.ts): a CLIENT span with the HTTP
// client conventions and the delivery's facts in our namespace, the root of a trace of its own,
// whose W3C traceparent goes out with the delivery so that the receiver can join it. Set into
// telemetry/hooks.ts by telemetry/sdk.ts, so with tracing off none of this is loaded.
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api'
import { suppressTracing } from '@opentelemetry/core'
import type { WebhookAttemptEnd, WebhookAttemptFacts, WebhookAttemptSpan, WebhookTracing } from './hooks.ts'

const tracer = trace.getTracer('petstore-api')

/**
 * The URL as a span may show it: user name and password, and each query parameter's value,
 * replaced by REDACTED (the HTTP conventions' rule for url.full), the fragment dropped. An
 * endpoint's URL may carry a receiver's token in its query.
 */
export function redactedUrl (url: URL): string {
  const shown = new URL(url.href)
  if (shown.username !== '') shown.username = 'REDACTED'
  if (shown.password !== '') shown.password = 'REDACTED'
  shown.hash = ''
  if (shown.search !== '') {
    shown.search = [...shown.searchParams.keys()].map((name) => `${encodeURIComponent(name)}=REDACTED`).join('&')
  }
  return shown.href
}

/** The attributes known before the attempt: the request's conventions and the delivery's facts. */
function startAttributes (facts: WebhookAttemptFacts): Attributes {
  const attributes: Attributes = {
    'http.request.method': 'POST',
    'petstore.webhook.id': facts.webhookId,
    'petstore.webhook.delivery_id': facts.deliveryId,
    'petstore.webhook.attempt': facts.attempt,
    'petstore.event.id': facts.eventId,
    'petstore.event.type': facts.eventType
  }
  // A retry is a resend of the same request (the conventions count resends from 1).
  if (facts.attempt > 1) attributes['http.request.resend_count'] = facts.attempt - 1
  let url: URL | null = null
  try {
    url = new URL(facts.url)
  } catch {
    // Not a URL (the dispatcher refuses it): the span says only what it knows.
  }
  if (url !== null) {
    attributes['url.full'] = redactedUrl(url)
    attributes['server.address'] = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
    attributes['server.port'] = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80
  }
  return attributes
}

export const webhookTracing: WebhookTracing = {
  startAttempt (facts: WebhookAttemptFacts): WebhookAttemptSpan {
    // A root: the dispatcher may run in the context of the request that woke it, whose trace it is not.
    const span = tracer.startSpan('POST', { kind: SpanKind.CLIENT, root: true, attributes: startAttributes(facts) })
    const { traceId, spanId, traceFlags } = span.spanContext()
    return {
      traceparent: `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`,
      // The HTTP instrumentation would otherwise start a second client span under the request
      // that woke the dispatcher, and overwrite this traceparent with its own.
      run: (fn) => context.with(suppressTracing(ROOT_CONTEXT), fn),
      end (result: WebhookAttemptEnd) {
        if (result.status !== undefined) span.setAttribute('http.response.status_code', result.status)
        if (result.outcome === 'failed') {
          // The error type is the status of an answer that refused, else the network error's code (or `timeout`).
          span.setAttribute('error.type', result.status !== undefined ? String(result.status) : result.errorType ?? '_OTHER')
          span.setStatus({ code: SpanStatusCode.ERROR, ...(result.error !== undefined && { message: result.error }) })
        }
        span.end()
      }
    }
  },
  detached (fn: () => void): void {
    context.with(ROOT_CONTEXT, fn)
  }
}
