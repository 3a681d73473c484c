// The span of each call of the Redis limiter's script (ratelimit/redis.ts), a child of the request
// that made it: database client conventions where they fit (db.system.name, db.operation.name,
// server.*), the rest in our namespace (OpenTelemetry has no rate-limit convention yet). Set into
// ratelimit/redis.ts's seam by telemetry/sdk.ts, so with tracing off none of this is loaded.
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { describeFailure } from '../ratelimit/fallback.ts'
import type { RedisCallSpan, RedisCallTracing, RedisScriptOperation } from '../ratelimit/redis.ts'

const tracer = trace.getTracer('petstore-api')

export const redisCallTracing: RedisCallTracing = {
  start (operation: RedisScriptOperation, server: { address: string; port: number }): RedisCallSpan | undefined {
    // Only under a trace: the ban sync's background calls belong to none (as pg's with no parent).
    if (trace.getSpan(context.active()) === undefined) return undefined
    const span = tracer.startSpan(`redis ratelimit ${operation}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        'db.system.name': 'redis',
        'server.address': server.address,
        'server.port': server.port,
        'petstore.ratelimit.operation': operation
      }
    })
    let commands: string | undefined
    return {
      sent (command) {
        // EVALSHA then EVAL: the server had lost the script (NOSCRIPT) and it was sent again.
        commands = commands === undefined ? command : `${commands} ${command}`
        span.setAttributes({ 'db.operation.name': command, 'petstore.ratelimit.commands': commands })
      },
      end (outcome, error) {
        if (outcome !== undefined) span.setAttribute('petstore.ratelimit.outcome', outcome)
        if (error !== undefined) {
          // The reason as the fallback states it (no URL, no password), not the error's stack:
          // the fallback limiter then answers from this instance's own counters.
          const code = (error as { code?: unknown } | null)?.code
          span.setAttribute('error.type', typeof code === 'string' && code !== '' ? code : error instanceof Error ? error.name : 'Error')
          span.setStatus({ code: SpanStatusCode.ERROR, message: describeFailure(error) })
        }
        span.end()
      }
    }
  }
}
