// No key leaves in a trace (SECURITY.md): every span is redacted as the logs are, on its way to
// the exporter. A key can reach a span by many roads: a key sent in the query string
// (`?api_key=psk_…`, refused with 400 but still a request with a URL), one spelt with escapes in
// the path (`/v1/pets/%70sk_…`), an error message that quotes what a client sent (recorded as an
// exception and as the span's status), a span of an instrumentation we do not write. So the
// redaction is not left to each span's maker: the exporter is wrapped, and every span's name,
// status message, attributes, events and links go through the same two functions as the logs
// (http/redact.ts, handed in by the entry, cli/serve.ts: telemetry/ does not import the pipeline).
// The URL attributes get the URL's redaction (secret-looking query values too); every other text
// the text's (anything shaped like a key, plain or percent-escaped).
import type { Attributes, AttributeValue } from '@opentelemetry/api'
import type { NodeSDK } from '@opentelemetry/sdk-node'
import type { SpanRedaction } from './enabled.ts'

/** The exporter NodeSDK takes (traceExporter), and the spans it exports. */
export type SpanExporter = NonNullable<NonNullable<ConstructorParameters<typeof NodeSDK>[0]>['traceExporter']>
type ReadableSpan = Parameters<SpanExporter['export']>[0][number]

/** The attributes that hold a URL or a part of one (HTTP semantic conventions, old and stable). */
const URL_ATTRIBUTES = new Set(['url.full', 'url.path', 'url.original', 'http.target', 'http.url'])

function redactedValue (
  name: string,
  value: AttributeValue | undefined,
  redaction: SpanRedaction
): AttributeValue | undefined {
  if (typeof value === 'string') {
    // url.query is the query without its `?`: redacted as the query of a URL.
    if (name === 'url.query') return redaction.url(`?${value}`).slice(1)
    return URL_ATTRIBUTES.has(name) ? redaction.url(value) : redaction.text(value)
  }
  if (Array.isArray(value)) {
    return value.map((item: unknown) => typeof item === 'string' ? redaction.text(item) : item) as AttributeValue
  }
  return value
}

export function redactedAttributes (attributes: Attributes, redaction: SpanRedaction): Attributes {
  const out: Attributes = {}
  for (const [name, value] of Object.entries(attributes)) out[name] = redactedValue(name, value, redaction)
  return out
}

/** A copy of the span with every text redacted (the span itself has ended and is not changed). */
export function redactedSpan (span: ReadableSpan, redaction: SpanRedaction): ReadableSpan {
  const { status } = span
  return {
    name: redaction.text(span.name),
    kind: span.kind,
    spanContext: () => span.spanContext(),
    ...(span.parentSpanContext !== undefined && { parentSpanContext: span.parentSpanContext }),
    startTime: span.startTime,
    endTime: span.endTime,
    status: status.message === undefined ? status : { ...status, message: redaction.text(status.message) },
    attributes: redactedAttributes(span.attributes, redaction),
    links: span.links.map((link) => link.attributes === undefined
      ? link
      : { ...link, attributes: redactedAttributes(link.attributes, redaction) }),
    events: span.events.map((event) => ({
      ...event,
      name: redaction.text(event.name),
      ...(event.attributes !== undefined && { attributes: redactedAttributes(event.attributes, redaction) })
    })),
    duration: span.duration,
    ended: span.ended,
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount
  }
}

/** The exporter, with every span redacted before it is handed on. */
export function redactingExporter (exporter: SpanExporter, redaction: SpanRedaction): SpanExporter {
  return {
    export: (spans, done) => { exporter.export(spans.map((span) => redactedSpan(span, redaction)), done) },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve()
  }
}
