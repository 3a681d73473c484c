// The process: configuration -> infrastructure -> app -> listen, and a graceful stop on SIGTERM.
import type { FastifyInstance } from 'fastify'
import { pino, type DestinationStream, type Logger } from 'pino'
import { buildApp } from './app.ts'
import { describeDatabase, type Config } from './config.ts'
import { createMetrics } from './http/metrics.ts'
import { openInfra, type Infra } from './infra.ts'
import { createBanSync } from './keys/ban-sync.ts'
import { systemClock } from './shared/clock.ts'

/** JSON lines on stdout (or `destination`: tests capture them). */
export function createLogger (config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  return pino({
    level: config.logLevel,
    // Keys travel in headers; they must never reach a log line.
    redact: { paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'headers["x-api-key"]', 'headers.authorization', 'key'], censor: '[redacted]' }
  }, destination)
}

export interface RunningServer {
  app: FastifyInstance
  infra: Infra
  url: string
  close (): Promise<void>
}

export async function startServer (config: Config, options: { logger?: Logger; beforeListen?: (infra: Infra) => Promise<void> } = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config)
  const clock = systemClock
  const metrics = createMetrics()
  const infra = await openInfra(config, {
    clock,
    onLimiterState: (state, reason) => {
      metrics.onLimiterState(state, reason)
      if (state === 'degraded') logger.warn({ reason }, 'rate limits degraded: Redis is unreachable, using per-instance counters')
      else logger.info('rate limits: Redis is back, counters are shared again')
    }
  })
  await options.beforeListen?.(infra)
  const app = await buildApp({ config, stores: infra.stores, limiter: infra.limiter, clock, logger, readiness: infra.readiness, metrics, events: metrics.events })
  // While stopping, responses to the requests in flight close their connection. A keep-alive
  // connection (a load balancer's) would otherwise keep the stop waiting for up to Fastify's
  // keepAliveTimeout (72 s), past any orchestrator's grace period.
  let draining = false
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining) reply.header('connection', 'close')
    done(null, payload)
  })
  const banSync = createBanSync(infra.stores.keys, infra.limiter, { startAt: clock.now(), onError: (error) => logger.warn({ err: error }, 'ban sync failed') })
  banSync.start()
  await app.listen({ host: config.host, port: config.port })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : config.port
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`
  logger.info({ url, database: describeDatabase(config.database), redis: config.redisUrl !== null }, 'listening')

  let closing: Promise<void> | null = null
  return {
    app,
    infra,
    url,
    close () {
      // Stop accepting, let requests in flight finish, then close the stores.
      closing ??= (async () => {
        banSync.stop()
        draining = true
        await app.close()
        await infra.close()
      })()
      return closing
    }
  }
}
