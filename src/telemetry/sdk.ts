// Tracing when it is on: the OpenTelemetry SDK for Node, configured by the standard OTEL_*
// variables (exporter endpoint, protocol, headers, sampler, batch delay, service name), exporting
// traces only. Imported by telemetry/enabled.ts only when tracing is on: with tracing off, no
// OpenTelemetry module is ever loaded (test/telemetry/tracing-off.test.ts).
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { context, ROOT_CONTEXT, trace, type Context, type Span } from '@opentelemetry/api'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { NodeSDK } from '@opentelemetry/sdk-node'
import { redisTracing } from '../ratelimit/redis.ts'
import type { Env } from './enabled.ts'
import { telemetry, type WriteTrace } from './hooks.ts'
import { redisCallTracing } from './redis-span.ts'
import { installRequestSpan, traceIdOf } from './request-span.ts'
import { webhookTracing } from './webhook-span.ts'

/** The service name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. */
export const DEFAULT_SERVICE_NAME = 'petstore-api'

const tracer = trace.getTracer('petstore-api')

export function startTracing (env: Env): { shutdown (): Promise<void> } {
  const named = (env.OTEL_SERVICE_NAME ?? '') !== '' || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '')
  const sdk = new NodeSDK({
    ...(!named && { serviceName: DEFAULT_SERVICE_NAME }),
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
