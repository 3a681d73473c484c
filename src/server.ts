// The process: configuration -> infrastructure -> app -> listen, and a graceful stop on SIGTERM.
import type { Server } from 'node:http'
import { Server as NetServer } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { pino, type DestinationStream, type Logger } from 'pino'
import { buildApp } from './app.ts'
import { DEFAULT_METRICS_PORT, describeDatabase, type Config } from './config.ts'
import { guardConnections, reportRefusals } from './transport/connections.ts'
import { closeConnectionsAfterAnswer } from './transport/header-block.ts'
import { listenOps, type OpsListener } from './transport/ops-listener.ts'
import { createMetrics } from './ops/metrics.ts'
import { errorLogView, requestLogView } from './http/redact.ts'
import { openInfra, type Infra } from './infra.ts'
import { BAN_SYNC_INTERVAL_MS } from './access/ban-sync.ts'
import { systemClock } from './shared/clock.ts'

export const LOG_BUFFER_BYTES = 4096
export const LOG_FLUSH_MS = 100

/**
 * JSON lines on stdout (or `destination`: tests capture them). Buffered: lines go out in writes
 * of 4 KiB (about 15 request lines) and at least every 100 ms, so a request does not pay a write
 * of its own (docs/performance.md; an asynchronous write per line cost more, in thread-pool
 * hand-offs, than the line itself). What is left is written when the process exits, a crash
 * included; a SIGKILL loses at most the last 100 ms of lines.
 */
export function createLogger (config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  return pino({
    level: config.logLevel,
    // Keys travel in headers; they must never reach a log line.
    redact: {
      paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'headers["x-api-key"]', 'headers.authorization', 'key'],
      censor: '[redacted]'
    },
    // A key sent in the URL is refused, but the URL is logged first: its secrets are cut out.
    // No key through an error's message or stack either, whoever logs it.
    serializers: { req: requestLogView, err: errorLogView }
  }, destination ?? bufferedStdout())
}

const buffered = new Set<LineBatch>()

function bufferedStdout (): LineBatch {
  const stream = new LineBatch(pino.destination({ dest: 1, sync: true, minLength: 0 }))
  if (buffered.size === 0) {
    process.once('exit', () => {
      for (const s of buffered) {
        try { s.flushSync() } catch { /* stdout is gone: nothing more can be written */ }
      }
    })
  }
  buffered.add(stream)
  return stream
}

/**
 * Lines gathered into chunks of about LOG_BUFFER_BYTES, written at once (a line waits at most
 * LOG_FLUSH_MS) by sonic-boom, which handles partial writes and a full pipe. Sonic-boom's own
 * buffer measures the bytes of all it holds at each write (up to 4 KiB flattened and scanned for
 * every line: about a microsecond of each request, docs/performance.md); here a line is a push.
 */
class LineBatch implements DestinationStream {
  readonly #out: ReturnType<typeof pino.destination>
  #lines: string[] = []
  #chars = 0
  #deadline: NodeJS.Timeout | undefined

  constructor (out: ReturnType<typeof pino.destination>) {
    this.#out = out
  }

  write (line: string): void {
    if (this.#lines.length === 0) this.#deadline = setTimeout(() => { this.#pass() }, LOG_FLUSH_MS).unref()
    this.#lines.push(line)
    this.#chars += line.length
    if (this.#chars >= LOG_BUFFER_BYTES) this.#pass()
  }

  flushSync (): void {
    this.#pass()
    this.#out.flushSync()
  }

  #pass (): void {
    if (this.#lines.length === 0) return
    clearTimeout(this.#deadline)
    const chunk = this.#lines.join('')
    this.#lines = []
    this.#chars = 0
    this.#out.write(chunk)
  }
}

export interface RunningServer {
  app: FastifyInstance
  infra: Infra
  url: string
  /** The private listener of /metrics and the probes (transport/ops-listener.ts). */
  metricsUrl: string
  close (): Promise<void>
}

/**
 * The port of the private listener: METRICS_PORT, else the default, or any free one when the
 * API's port is any free one (tests, several processes on a machine).
 */
function metricsPort (config: Config): number {
  return config.metrics.port ?? (config.port === 0 ? 0 : DEFAULT_METRICS_PORT)
}

export async function startServer (
  config: Config,
  options: { logger?: Logger; beforeListen?: (infra: Infra) => Promise<void> } = {}
): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config)
  const clock = systemClock
  const metrics = createMetrics()
  const infra = await openInfra(config, {
    clock,
    onDatabaseWait: (reason, waitedMs) => { logger.warn({ reason, waitedMs }, 'the database is not reachable yet; retrying') },
    onLimiterState: (state, reason) => {
      metrics.onLimiterState(state, reason)
      if (state === 'degraded') logger.warn({ reason }, 'rate limits degraded: Redis is unreachable, using per-instance counters')
      else logger.info('rate limits: Redis is back, counters are shared again')
    }
  })
  // The WAL's size at each scrape (SQLite), beside Node's nodejs_eventloop_lag_p99_seconds.
  const walSize = infra.stores.walBytes?.bind(infra.stores)
  if (walSize !== undefined) metrics.trackWal(walSize)
  // Everything opened so far is closed again when a later step fails (the port is in use, the
  // sample data cannot be loaded, the bans cannot be read): a failed start leaves no database
  // connection, WAL file, Redis client or timer behind (issue 18 item 7).
  let app: FastifyInstance | undefined
  let ops: OpsListener | undefined
  let url: string
  try {
    await options.beforeListen?.(infra)
    // The background jobs (jobs/jobs.ts) start when the app is ready, within listen() below. With
    // in-process counters a restart would pardon every banned caller: the ban sync's first job
    // loads the bans in force from the database then, before the first request, and a start that
    // cannot read them fails (jobs/ban-sync.ts).
    app = await buildApp({
      config,
      stores: infra.stores,
      limiter: infra.limiter,
      clock,
      logger,
      readiness: infra.readiness,
      metrics,
      events: metrics.events,
      keyEvents: infra.keyEvents,
      banSyncMs: BAN_SYNC_INTERVAL_MS
    })
    // While stopping, responses to the requests in flight close their connection. A keep-alive
    // connection (a load balancer's) would otherwise stay open after its last answer, and the stop
    // would have to cut it, racing the next request the client may already have sent.
    // Node writes that header itself for a response that does not keep its connection: the
    // server is marked, not every response checked in a hook (transport/header-block.ts).
    // Past the caps (per process, and per client address) the connection idle longest is closed to
    // make room, or the new one when none is idle: a flood of idle or slow connections costs at most
    // this many descriptors and buffers, one address cannot hold them all, and the timeouts
    // (transport/connections.ts) free them.
    guardConnections(app.server, config.server, reportRefusals(logger, config.server))
    await app.listen({ host: config.host, port: config.port })
    const address = app.server.address()
    const port = typeof address === 'object' && address !== null ? address.port : config.port
    url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`
    // /metrics, and the probes, on their own listener (loopback by default): never public.
    ops = await listenOps(app.server, config.metrics.host, metricsPort(config))
    const database = describeDatabase(config.database)
    logger.info({ url, metricsUrl: ops.url, database, redis: config.redisUrl !== null }, 'listening')
  } catch (error) {
    try {
      await ops?.close()
    } catch (closeError) {
      logger.warn({ err: closeError }, 'closing the metrics listener after a failed start failed')
    }
    try {
      await app?.close()
    } catch (closeError) {
      logger.warn({ err: closeError }, 'closing the app after a failed start failed')
    }
    try {
      await infra.close()
    } catch (closeError) {
      logger.warn({ err: closeError }, 'closing the stores after a failed start failed')
    }
    throw error
  }
  const running = app
  const opsListener = ops

  let closing: Promise<void> | null = null
  return {
    app: running,
    infra,
    url,
    metricsUrl: opsListener.url,
    close () {
      // Stop accepting, let requests in flight finish (within the grace period), then close the
      // app (its jobs stop there, the usage flushed) and the stores.
      closing ??= (async () => {
        // Nothing is scraped or probed during the drain: an orchestrator sees the instance go.
        await opsListener.close()
        closeConnectionsAfterAnswer(running.server)
        const graceMs = config.server.shutdownGraceMs
        const { open, cut } = await drain(running.server, graceMs, () => {
          logger.info('stopping: no new connections; finishing the requests in flight')
        })
        if (cut > 0) logger.warn({ cut, graceMs }, 'grace period over: connections with requests still in flight were closed')
        else logger.info({ connections: open }, 'every request in flight was answered')
        // Closing the stores is bounded too: a database that stopped answering must not hold
        // the stop past what an orchestrator allows (it would SIGKILL the process anyway).
        let timer: NodeJS.Timeout | undefined
        const bound = new Promise<never>((_resolve, reject) => {
          const late = new Error(`the stores did not close within ${STORES_CLOSE_MS} ms of the drain`)
          timer = setTimeout(() => reject(late), STORES_CLOSE_MS)
        })
        try {
          await Promise.race([(async () => { await running.close(); await infra.close() })(), bound])
        } finally {
          clearTimeout(timer)
        }
      })()
      return closing
    }
  }
}

/**
 * A keep-alive connection that is idle when the stop begins gets this long for a request its
 * client may already have sent: closing it at once would lose that request (the client sees a
 * reset, and does not retry a POST). Any request that arrives is served, and its answer closes
 * the connection.
 */
export const DRAIN_LAST_CALL_MS = 500

/** After the drain, how long closing the app and the stores (flushes included) may take. */
export const STORES_CLOSE_MS = 5000

/**
 * Stops accepting connections and resolves once every open one has closed: idle ones after
 * DRAIN_LAST_CALL_MS, busy ones after their answer (which says `Connection: close`), and any
 * still open when graceMs has passed, cut. Node's http `server.close()` is not used: it closes
 * idle keep-alive connections at once, racing requests already on their way, and it stops the
 * checks of the request deadlines, which a slow client could use to hold the stop to its end.
 */
async function drain (server: Server, graceMs: number, onStop: () => void): Promise<{ open: number; cut: number }> {
  const open = await new Promise<number>((resolve) => { server.getConnections((_error, count) => resolve(count)) })
  const closed = new Promise<void>((resolve) => { NetServer.prototype.close.call(server, () => resolve()) })
  onStop()
  let sweep: NodeJS.Timeout | undefined
  const lastCall = setTimeout(() => {
    server.closeIdleConnections()
    // An answer that was already being sent when the stop began may leave its connection open
    // and idle afterwards: sweep until none is left.
    // Not background work: part of the stop, cleared when the drain ends (within the grace period).
    // eslint-disable-next-line local/no-repeating-timer -- the drain's own loop, bounded by its deadline
    sweep = setInterval(() => server.closeIdleConnections(), 100)
  }, Math.min(DRAIN_LAST_CALL_MS, graceMs))
  let cut = 0
  const deadline = setTimeout(() => {
    server.getConnections((_error, count) => {
      cut = count
      server.closeAllConnections()
    })
  }, graceMs)
  await closed
  clearTimeout(lastCall)
  clearInterval(sweep)
  clearTimeout(deadline)
  return { open, cut }
}
