// Tracing when it is on: the OpenTelemetry SDK for Node, configured by the standard OTEL_*
// variables (exporter endpoint, protocol, headers, sampler, batch delay, service name), exporting
// traces only. Imported by telemetry/enabled.ts only when tracing is on: with tracing off, no
// OpenTelemetry module is ever loaded (test/telemetry/tracing-off.test.ts).
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { context, ROOT_CONTEXT, trace, type Context, type Span } from '@opentelemetry/api'
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { NodeSDK } from '@opentelemetry/sdk-node'
import { redisTracing } from '../ratelimit/redis.ts'
import type { Env, SpanRedaction } from './enabled.ts'
import { telemetry, type WriteTrace } from './hooks.ts'
import { mcpTracing } from './mcp-span.ts'
import { redactingExporter, type SpanExporter } from './redacted-export.ts'
import { redisCallTracing } from './redis-span.ts'
import { installRequestSpan, traceIdOf } from './request-span.ts'
import { webhookTracing } from './webhook-span.ts'

/** The service name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. */
export const DEFAULT_SERVICE_NAME = 'petstore-api'

const tracer = trace.getTracer('petstore-api')

/**
 * The OTLP exporter of the protocol the environment names, as NodeSDK would make it (each reads
 * its endpoint, headers and timeout from the OTEL_EXPORTER_OTLP_* variables itself). Made here,
 * not by NodeSDK, so that it can be wrapped in the redaction (redacted-export.ts).
 */
function otlpExporter (env: Env): SpanExporter {
  // As the SDK reads them: trimmed, an empty value as unset, an unknown one as the default.
  const [protocol] = [env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, env.OTEL_EXPORTER_OTLP_PROTOCOL]
    .map((value) => value?.trim() ?? '')
    .filter((value) => value !== '')
  if (protocol === 'grpc') return new GrpcExporter()
  if (protocol === 'http/json') return new JsonExporter()
  return new ProtobufExporter()
}

export function startTracing (env: Env, redaction: SpanRedaction): { shutdown (): Promise<void> } {
  const named = (env.OTEL_SERVICE_NAME ?? '') !== '' || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '')
  const sdk = new NodeSDK({
    ...(!named && { serviceName: DEFAULT_SERVICE_NAME }),
    // Batched as NodeSDK batches any exporter (the OTEL_BSP_* variables); every span redacted first.
    traceExporter: redactingExporter(otlpExporter(env), redaction),
    // Traces only: metrics are Prometheus' (/metrics), logs go to standard output.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      // The server span of each request (HTTP semantic conventions, an incoming traceparent continued).
      new HttpInstrumentation({ requireParentforOutgoingSpans: true }),
      // Names the server span after the route template; hooks get no span each (a dozen per request).
      new FastifyOtelInstrumentation({ registerOnInitialization: true, instrumentHooks: false }),
      // Queries outside any trace (the background jobs' polls and flushes) make no root spans:
      // the webhook dispatcher alone polls every 250 ms.
      new PgInstrumentation({ requireParentSpan: true })
    ]
  })
  sdk.start()
  telemetry.installApp = installRequestSpan
  telemetry.traceIdOf = traceIdOf
  telemetry.writer = sqliteWriterTracing
  telemetry.webhooks = webhookTracing
  telemetry.mcp = mcpTracing
  redisTracing.current = redisCallTracing
  return { shutdown: async () => { await sdk.shutdown() } }
}

const UNTRACED_BATCH = { end: (): void => {} }

/** Spans of SQLite's writer (storage/sqlite/writer.ts): one per write under its request, one per batch. */
const sqliteWriterTracing = {
  capture: (): WriteTrace | undefined => trace.getSpan(context.active()) === undefined ? undefined : context.active(),
  write<T> (trace: WriteTrace, fn: () => T): T {
    const span = tracer.startSpan('sqlite write', { attributes: { 'db.system.name': 'sqlite' } }, trace as Context)
    try {
      return fn()
    } catch (error) {
      span.recordException(error as Error)
      throw error
    } finally {
      span.end()
    }
  },
  startBatch (traces: readonly (WriteTrace | undefined)[]): { end (error: unknown): void } {
    const contexts = traces.filter((t): t is WriteTrace => t !== undefined) as Context[]
    // A batch of background writes only (the usage flush, the sweep) belongs to no trace.
    if (contexts.length === 0) return UNTRACED_BATCH
    const links = contexts.slice(1).flatMap((c) => {
      const s = trace.getSpan(c)
      return s === undefined ? [] : [{ context: s.spanContext() }]
    })
    const span: Span = tracer.startSpan('sqlite batch commit', {
      attributes: { 'db.system.name': 'sqlite', 'db.operation.name': 'COMMIT', 'db.operation.batch.size': traces.length },
      links
    }, contexts[0] ?? ROOT_CONTEXT)
    return {
      end (error: unknown) {
        if (error !== null && error !== undefined) span.recordException(error as Error)
        span.end()
      }
    }
  }
}
