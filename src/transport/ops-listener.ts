// The private listener: /metrics, /healthz and /readyz on an address of their own (METRICS_HOST,
// METRICS_PORT; loopback by default), apart from the API's public listener. /metrics names key
// ids and traffic, and costs milliseconds of CPU a scrape: the public listener refuses it
// (ops/metrics.ts), and this one serves nothing else but the probes. Requests go to the same
// Fastify app as the public ones (the same handlers, request ids, log lines and counts).
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { handlerOf, MAX_HEADER_BYTES, writeError } from './connections.ts'

// node:http's CommonJS exports (see connections.ts: an ES import loads undici).
const { createServer } = process.getBuiltinModule('node:http')

const OPS_PATHS = new Set(['/metrics', '/healthz', '/readyz'])

/** Its own small limits: it has a handful of clients (Prometheus, an orchestrator's probes). */
const OPS_LIMITS = { maxConnections: 32, headersTimeoutMs: 5000, requestTimeoutMs: 5000, keepAliveTimeoutMs: 65_000 }

export interface OpsListener {
  url: string
  close (): Promise<void>
}

/** Listens on host:port and passes GET and HEAD of the three paths to the app of `publicServer`. */
export async function listenOps (publicServer: Server, host: string, port: number): Promise<OpsListener> {
  const handler = handlerOf(publicServer)
  if (handler === undefined) throw new Error('the public listener was not made by connectionOptions')
  const server = createServer({
    headersTimeout: OPS_LIMITS.headersTimeoutMs,
    requestTimeout: OPS_LIMITS.requestTimeoutMs,
    maxHeaderSize: MAX_HEADER_BYTES
  }, (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '').split('?', 1)[0] ?? ''
    if ((request.method === 'GET' || request.method === 'HEAD') && OPS_PATHS.has(path)) handler(request, response)
    else writeError(response, 'not_found', `this listener serves GET /metrics, /healthz and /readyz only; the API is on the public listener`)
  })
  server.maxConnections = OPS_LIMITS.maxConnections
  server.keepAliveTimeout = OPS_LIMITS.keepAliveTimeoutMs
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen({ host, port }, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address()
  const bound = typeof address === 'object' && address !== null ? address.port : port
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  }
}
