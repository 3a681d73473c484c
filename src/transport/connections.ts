// The connection level, before Fastify sees a request: Node's timeouts and header size, and
// Node's own error answers (a malformed request, a timeout, oversized headers), which must be the
// API's error object like every other answer (docs/product.md sections 5 and 9).
//
// Node's defaults leave a server open to slow clients: Fastify turns the whole-request timeout
// off (0), and Node checks its timeouts only every 30 s. A client that trickles a body one byte
// at a time, or never finishes its headers, held a connection (a file descriptor and its buffers)
// for as long as it liked. Here every stage has a deadline, checked often enough to be one.
import { randomUUID } from 'node:crypto'
import type { Socket } from 'node:net'
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http'
import type { FastifyHttpOptions, FastifyInstance } from 'fastify'
import type { ServerLimits } from '../config.ts'
import { ERROR_CATALOGUE, type ErrorCode } from '../errors.ts'
import { subjectOfAddress } from '../access/client-subject.ts'
import { HeaderBlockResponse } from './header-block.ts'

// node:http's CommonJS exports: an ES import of node:http evaluates every export, and its
// WebSocket getters load undici (Node's fetch, about 2.5 MiB of heap) that the server never uses
// (docs/performance.md, "Memory").
const { createServer } = process.getBuiltinModule('node:http')

/** Node's default, pinned so that the 431 we document cannot move with a Node upgrade or flag. */
export const MAX_HEADER_BYTES = 16 * 1024

/**
 * How often Node looks for requests past their deadline. Node's default (30 s) would let a
 * 10 s header deadline run to 40 s; a tenth of the shortest deadline keeps the overrun small, and
 * one pass over the open connections per second costs nothing measurable.
 */
function checkingInterval (limits: ServerLimits): number {
  return Math.max(10, Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 10)))
}

/** The Fastify options that set the connection limits and answer Node's client errors. */
export function connectionOptions (limits: ServerLimits): Pick<FastifyHttpOptions<Server>, 'http' | 'requestTimeout' | 'keepAliveTimeout' | 'return503OnClosing' | 'clientErrorHandler' | 'serverFactory'> {
  const http: ServerOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: checkingInterval(limits),
    maxHeaderSize: MAX_HEADER_BYTES,
    // Node's own answer to an HTTP/1.1 request without Host is an empty chunked 400, with no
    // error object and no nosniff: the server below answers it instead.
    requireHostHeader: false,
    // Answers whose head Node would build one header at a time are written in one pass
    // (transport/header-block.ts); the bytes are the same.
    ServerResponse: HeaderBlockResponse
  }
  return {
    http,
    // The server Fastify would make (its getServerInstance: the same options and settings), with
    // one step in front of Fastify's handler: the missing Host.
    serverFactory: (handler) => {
      const server = createServer(http, (request, response) => {
        if (request.headers.host === undefined && request.httpVersionMajor === 1 && request.httpVersionMinor === 1) answerMissingHost(response)
        else handler(request, response)
      })
      server.keepAliveTimeout = limits.keepAliveTimeoutMs
      server.requestTimeout = limits.requestTimeoutMs
      server.setTimeout(0)
      return server
    },
    // Fastify sets these two on the server itself, over the `http` values.
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // While stopping, a request that still arrives on an open connection is served (and its
    // answer closes the connection: server.ts) rather than refused with Fastify's own 503 body.
    return503OnClosing: false,
    clientErrorHandler (this: FastifyInstance, error, socket) { answerClientError(this, limits, error, socket) }
  }
}

/** What Node reports, and the code, status and message the client gets instead of Node's text. */
function classify (error: Error & { code?: string }, limits: ServerLimits): { code: ErrorCode; message: string } {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return { code: 'request_timeout', message: `the request did not arrive in time: its headers are allowed ${limits.headersTimeoutMs} ms, the whole request ${limits.requestTimeoutMs} ms` }
  }
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return { code: 'headers_too_large', message: `the request line and headers are larger than ${MAX_HEADER_BYTES / 1024} KiB` }
  }
  // Every other parser error: a malformed request line or header, conflicting framing
  // (Content-Length with Transfer-Encoding), a bad chunk. Node's reason stays in the log.
  return { code: 'validation_failed', message: 'the request is not well-formed HTTP/1.1' }
}

/**
 * HTTP/1.1 makes Host mandatory (RFC 9112 3.2): 400 with the error object, like every other
 * malformed request (and, like them, before any route or charge), and the connection closed.
 */
function answerMissingHost (response: ServerResponse): void {
  const requestId = randomUUID()
  const body = JSON.stringify({ code: 'validation_failed', message: 'an HTTP/1.1 request must carry a Host header', status: 400, requestId })
  response.writeHead(400, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'request-id': requestId,
    'x-content-type-options': 'nosniff',
    connection: 'close'
  })
  response.end(body)
}

/**
 * Writes the error object straight to the socket (there is no request or reply object at this
 * stage), then closes the connection: after a parse error or a timeout, nothing more on it can be
 * trusted to be framed correctly. Nothing is written when the client is gone, or when an answer
 * to the request has already begun (a second status line would corrupt it).
 */
function answerClientError (app: FastifyInstance, limits: ServerLimits, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const { code, message } = classify(error, limits)
  const requestId = randomUUID()
  app.log.debug({ reqId: requestId, err: { code: error.code, message: error.message }, code }, 'connection-level client error')
  if (socket.writable && !answered(socket)) {
    const status = ERROR_CATALOGUE[code].status
    const body = JSON.stringify({ code, message, status, requestId })
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\n`
      + 'Content-Type: application/json; charset=utf-8\r\n'
      + `Content-Length: ${Buffer.byteLength(body)}\r\n`
      + `Request-Id: ${requestId}\r\n`
      + 'X-Content-Type-Options: nosniff\r\n'
      + 'Connection: close\r\n\r\n'
      + body
    )
  }
  // end() lets the answer out before the close (an immediate destroy could reset the connection
  // and lose it); a client that does not take it within a second loses it, and the descriptor.
  socket.setTimeout(1000, () => socket.destroy())
  socket.destroySoon()
}

/**
 * Whether the request at fault already has an answer: one being sent (`_httpMessage`), or one
 * sent before its body had arrived (a 401 before the body of an unauthenticated POST: Node then
 * discards the rest of the body, `_dumped`, and the deadline can still run out). These are Node's
 * internals, read defensively: when they are absent the error object is written.
 */
function answered (socket: Socket): boolean {
  const internals = socket as Socket & { _httpMessage?: { headersSent?: boolean } | null; parser?: { incoming?: { _dumped?: boolean } | null } | null }
  return internals._httpMessage?.headersSent === true || internals.parser?.incoming?._dumped === true
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }

/** What the connection guard tells the log: a connection closed to make room, or refused. */
export interface ConnectionEvents {
  /** A new connection was closed unanswered: its address holds its share and none of its connections is idle, or the process holds MAX_CONNECTIONS and none is idle. */
  onRefused (reason: 'address' | 'total', address: string): void
}

/** Per connection: its address (the limiter's subject of it) and when it last began a request. */
interface Tracked { readonly socket: Socket; readonly address: string; lastActive: number }

const TRACKED = Symbol('petstore.connection')

/**
 * Fair connection limits (docs/product.md 9.7). Node's `maxConnections` alone let one address
 * open all of them and idle, locking every other client out, probes included, for as long as the
 * keep-alive timeout. Here, as each connection arrives:
 * - an address (an IPv6 address by its /64, like anonymous rate limits) holds at most
 *   `maxConnectionsPerAddress`: past it, its own connection that has been idle longest is closed
 *   to make room, or, if all of its connections are busy, the new one is refused;
 * - at `maxConnections`, the connection of any address that has been idle longest is closed to
 *   make room; only when none is idle is the new one refused.
 * Idle means no request in flight: no answer is pending on it (a keep-alive connection between
 * requests, a connection that has sent nothing yet, or one whose request's headers have not all
 * arrived: that request has not begun, and the header deadline would cut it anyway). Closing one
 * of those never cuts an answer. A connection with a request in flight is never closed here.
 *
 * The cost per request is one property write (the 'request' listener); the search for an idle
 * connection runs only when a cap is reached, over the connections held.
 */
export function guardConnections (server: Server, limits: Pick<ServerLimits, 'maxConnections' | 'maxConnectionsPerAddress'>, events: ConnectionEvents): void {
  const open = new Set<Tracked>()
  const byAddress = new Map<string, Set<Tracked>>()
  // The caps are enforced here, after the closing of idle connections: Node's own cap would drop
  // a newcomer before this listener could make room. Its backstop stays, far above ours, for
  // sockets closed here whose close event Node has not processed yet.
  server.maxConnections = limits.maxConnections * 2

  const forget = (tracked: Tracked): void => {
    if (!open.delete(tracked)) return
    const held = byAddress.get(tracked.address)
    held?.delete(tracked)
    if (held?.size === 0) byAddress.delete(tracked.address)
  }
  const evict = (tracked: Tracked): void => {
    forget(tracked)
    tracked.socket.destroy()
  }

  server.on('connection', (socket: Socket) => {
    const remote = socket.remoteAddress
    if (remote === undefined || socket.destroyed) return // gone already
    const address = subjectOfAddress(remote)
    const held = byAddress.get(address)
    if (held !== undefined && held.size >= limits.maxConnectionsPerAddress) {
      const idle = longestIdle(held)
      if (idle === null) {
        events.onRefused('address', address)
        socket.destroy()
        return
      }
      evict(idle)
    }
    if (open.size >= limits.maxConnections) {
      const idle = longestIdle(open)
      if (idle === null) {
        events.onRefused('total', address)
        socket.destroy()
        return
      }
      evict(idle)
    }
    const tracked: Tracked = { socket, address, lastActive: performance.now() }
    ;(socket as Socket & { [TRACKED]?: Tracked })[TRACKED] = tracked
    open.add(tracked)
    const mine = byAddress.get(address)
    if (mine === undefined) byAddress.set(address, new Set([tracked]))
    else mine.add(tracked)
    socket.once('close', () => forget(tracked))
  })

  server.on('request', (request: IncomingMessage) => {
    const tracked = (request.socket as Socket & { [TRACKED]?: Tracked })[TRACKED]
    if (tracked !== undefined) tracked.lastActive = performance.now()
  })
}

/**
 * The connection of `candidates` idle longest (the earliest last request, or connection when it
 * has sent none), or null when every one has a request in flight. In flight: Node has an answer
 * attached to the socket (`_httpMessage`, from the moment the request's headers are read to the
 * end of its answer; the same internal that answered() reads).
 */
function longestIdle (candidates: Iterable<Tracked>): Tracked | null {
  let oldest: Tracked | null = null
  for (const tracked of candidates) {
    const pending = (tracked.socket as Socket & { _httpMessage?: object | null })._httpMessage
    if (pending !== undefined && pending !== null) continue
    if (oldest === null || tracked.lastActive < oldest.lastActive) oldest = tracked
  }
  return oldest
}

/**
 * The guard's refusals in the log: the first of each kind at once, then at most one line per
 * 10 s with the count, so that a flood of connections cannot flood the log too.
 */
export function reportRefusals (log: { warn (fields: object, message: string): void }, limits: Pick<ServerLimits, 'maxConnections' | 'maxConnectionsPerAddress'>): ConnectionEvents {
  const windows = {
    total: refusalWindow((dropped) => log.warn({ dropped, maxConnections: limits.maxConnections }, 'connection cap reached: connections closed unanswered')),
    address: refusalWindow((dropped, addresses) => log.warn({ dropped, maxConnectionsPerAddress: limits.maxConnectionsPerAddress, addresses }, 'per-address connection cap reached: connections closed unanswered'))
  }
  return { onRefused (reason, address) { windows[reason](address) } }
}

/** Counts refusals; reports the first at once and the rest once per 10 s, with up to 10 addresses. */
function refusalWindow (report: (dropped: number, addresses: string[]) => void): (address: string) => void {
  let dropped = 0
  let addresses = new Set<string>()
  let window: NodeJS.Timeout | null = null
  const flush = (): void => {
    report(dropped, [...addresses])
    dropped = 0
    addresses = new Set()
  }
  return (address) => {
    dropped++
    if (addresses.size < 10) addresses.add(address)
    if (window !== null) return
    flush()
    window = setTimeout(() => {
      window = null
      if (dropped > 0) flush()
    }, 10_000)
    window.unref()
  }
}
