// The server half of `npm run bench`. bench/run.ts starts this file as a child process
// (process.execPath, so the same Node), so the load generator and the server never share an
// event loop or a core's worth of JavaScript. Two modes:
//
//   node bench/server.ts bare                 node:http answering a small fixed JSON body
//   node bench/server.ts petstore '<json>'    the Petstore API, composed as `petstore serve` does
//
// Either way it listens on 127.0.0.1, port 0, and tells the parent the port over IPC
// ({ type: 'ready', port }). It stops when the parent sends 'stop' or goes away.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { openInfra } from '../src/infra.ts'
import { createBanSync } from '../src/keys/ban-sync.ts'
import { createLogger } from '../src/server.ts'
import { systemClock } from '../src/shared/clock.ts'

/** What bench/run.ts passes to a petstore child, as JSON in argv[3]. */
export interface PetstoreChildSettings {
  /** The environment loadConfig reads (DATABASE_URL, REDIS_URL, LOG_LEVEL …), as a literal. */
  env: Record<string, string>
  /** Key prefix of the rate-limit counters in Redis, unique to this run. */
  redisPrefix: string
}

export type ChildMessage =
  | { type: 'ready'; port: number }
  | { type: 'limiter'; state: 'ok' | 'degraded'; reason?: string }

/** The baseline's whole answer: small and fixed, with the headers a JSON API sends anyway. */
export const BARE_BODY = Buffer.from(JSON.stringify({ id: 1, name: 'Rex', categoryId: 1, status: 'available' }))

function send (message: ChildMessage): void {
  process.send?.(message)
}

async function bare (): Promise<() => Promise<void>> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': BARE_BODY.length })
    response.end(BARE_BODY)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  send({ type: 'ready', port: (server.address() as AddressInfo).port })
  return () => new Promise<void>((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
}

/**
 * The same composition as startServer in src/server.ts (openInfra, createLogger, buildApp, the
 * ban sync, listen), with two differences a benchmark needs: the Redis counters get a prefix of
 * their own, so they never mix with those of a server sharing that Redis, and limiter state
 * changes reach the parent, which fails the run if Redis dropped out (a "Redis" figure measured
 * on the in-process fallback would be a lie).
 */
async function petstore (settings: PetstoreChildSettings): Promise<() => Promise<void>> {
  const config = loadConfig({ ...settings.env, HOST: '127.0.0.1', PORT: '0' })
  const logger = createLogger(config)
  const clock = systemClock
  const infra = await openInfra(config, {
    clock,
    redisPrefix: settings.redisPrefix,
    onLimiterState: (state, reason) => send({ type: 'limiter', state, ...(reason !== undefined && { reason }) })
  })
  const app = await buildApp({ config, stores: infra.stores, limiter: infra.limiter, clock, logger, readiness: infra.readiness })
  const banSync = createBanSync(infra.stores.keys, infra.limiter, { startAt: clock.now(), onError: (error) => logger.warn({ err: error }, 'ban sync failed') })
  banSync.start()
  await app.listen({ host: config.host, port: config.port })
  send({ type: 'ready', port: (app.server.address() as AddressInfo).port })
  return async () => {
    banSync.stop()
    await app.close()
    await infra.close()
  }
}

async function main (): Promise<void> {
  const [mode, json] = process.argv.slice(2)
  let stop: () => Promise<void>
  if (mode === 'bare') stop = await bare()
  else if (mode === 'petstore' && json !== undefined) stop = await petstore(JSON.parse(json) as PetstoreChildSettings)
  else throw new Error('usage: node bench/server.ts bare | petstore <settings json> (started by bench/run.ts)')

  let stopping = false
  const shutdown = (): void => {
    if (stopping) return
    stopping = true
    stop().then(() => { process.exitCode = 0 }, (error: unknown) => {
      process.stderr.write(`bench server: stop failed: ${(error as Error).message}\n`)
      process.exitCode = 1
    }).finally(() => { if (process.connected) process.disconnect() })
  }
  process.on('message', (message) => { if (message === 'stop') shutdown() })
  // The parent died or closed the channel: never outlive it.
  process.on('disconnect', shutdown)
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)
}

main().catch((error: unknown) => {
  process.stderr.write(`bench server: ${(error as Error).message}\n`)
  process.exit(1)
})
