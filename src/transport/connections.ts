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
import { cutSlowReaders, HeaderBlockResponse } from './header-block.ts'
import { skipDumpOfBodiless } from './unread-body.ts'

// node:http's CommonJS exports: an ES import of node:http evaluates every export, and its
// WebSocket getters load undici (Node's fetch, about 2.5 MiB of heap) that the server never uses
// (docs/performance.md, "Memory").
const { createServer } = process.getBuiltinModule('node:http')

/** Node's default, pinned so that the 431 we document cannot move with a Node upgrade or flag. */
export const MAX_HEADER_BYTES = 16 * 1024

/**
 * How often Node looks for requests past their deadline, and the guard for answers past theirs
 * (guardConnections). Node's default (30 s) would let a 10 s header deadline run to 40 s; a tenth
 * of the shortest deadline keeps the overrun small, and one pass over the open connections per
 * second costs nothing measurable.
 */
export function checkingInterval (limits: Pick<ServerLimits, 'headersTimeoutMs' | 'requestTimeoutMs'>): number {
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
    // steps in front of Fastify's handler: the missing Host, and no dump of a bodiless request.
    serverFactory: (handler) => {
      const server = createServer(http, (request, response) => {
        skipDumpOfBodiless(request)
        const refused = refusalOf(request)
        if (request.headers.host === undefined && request.httpVersionMajor === 1
          && request.httpVersionMinor === 1) answerMissingHost(response)
        else if (refused === undefined) handler(request, response)
        else if (isProbe(request)) {
          // A probe through the refusal lane is served, and its connection closed after it.
          response.shouldKeepAlive = false
          handler(request, response)
        } else answerRefused(response, refused, limits)
      })
      // Any Expect but 100-continue (which Node answers itself): Node's own answer is a bare 417.
      server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
        writeError(response, 'expectation_failed', `Expect: ${String(request.headers.expect).slice(0, 64)} cannot be met; only 100-continue is supported`)
      })
      publicListeners.set(server, handler)
      cutSlowReaders(server, limits.writeTimeoutMs)
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
  writeError(response, 'validation_failed', 'an HTTP/1.1 request must carry a Host header')
}

/** The answer on a connection of the refusal lane: 503, Retry-After, connection closed. */
function answerRefused (response: ServerResponse, reason: RefusalReason, limits: Pick<ServerLimits, 'maxConnections' | 'maxConnectionsPerAddress'>): void {
  const message = reason === 'address'
    ? `this client address is at its cap of ${limits.maxConnectionsPerAddress} open connections, each with a request in flight; retry after ${REFUSAL_RETRY_AFTER_S} s, or reuse a connection`
    : `the server is at its cap of ${limits.maxConnections} open connections and none can make room; retry after ${REFUSAL_RETRY_AFTER_S} s`
  writeError(response, 'connection_limit_reached', message, { 'retry-after': String(REFUSAL_RETRY_AFTER_S) })
}

/** /healthz and /readyz, read with GET or HEAD: what a probe asks, which the refusal lane serves. */
export function isProbe (request: IncomingMessage): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false
  const path = (request.url ?? '').split('?', 1)[0]
  return path === '/healthz' || path === '/readyz'
}

/**
 * The error object written outside Fastify (before routing: nothing is charged, so no rate-limit
 * headers; or past the answer's deadline, over what Fastify has not sent), with a request id, and
 * the connection closed after it: the rest of the request, if any, is never read.
 */
export function writeError (
  response: ServerResponse,
  code: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
  requestId: string = randomUUID()
): void {
  const status = ERROR_CATALOGUE[code].status
  const body = JSON.stringify({ code, message, status, requestId })
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'request-id': requestId,
    'x-content-type-options': 'nosniff',
    connection: 'close'
  })
  response.end(body)
}

/** The public listeners (made by connectionOptions), each with Fastify's request handler. */
const publicListeners = new WeakMap<object, (request: IncomingMessage, response: ServerResponse) => void>()

/** Fastify's request handler of a public listener, for the private listener to pass requests to (ops-listener.ts). */
export function handlerOf (server: Server): ((request: IncomingMessage, response: ServerResponse) => void) | undefined {
  return publicListeners.get(server)
}

/** Whether the request arrived on a public listener (not on the private one, not through inject). */
export function arrivedOnPublicListener (request: IncomingMessage): boolean {
  const server = (request.socket as (Socket & { server?: object }) | null)?.server
  return server !== undefined && publicListeners.has(server)
}

/**
 * Writes the error object straight to the socket (there is no request or reply object at this
 * stage), then closes the connection: after a parse error or a timeout, nothing more on it can be
 * trusted to be framed correctly. Nothing is written when the client is gone, or when an answer
 * to the request has already begun (a second status line would corrupt it).
 */
function answerClientError (
  app: FastifyInstance,
  limits: ServerLimits,
  error: Error & { code?: string },
  socket: Socket
): void {
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
  const internals = socket as SocketInternals
  return internals._httpMessage?.headersSent === true || internals.parser?.incoming?._dumped === true
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }

/**
 * What the connection guard tells the log: a connection refused for a cap (answered 503 unless it
 * asks for a probe), and a request cut at its deadline.
 */
export interface ConnectionEvents {
  /**
   * A new connection was refused: its address holds its share and none of its connections is idle,
   * or the process holds MAX_CONNECTIONS and none can make room.
   */
  onRefused (reason: RefusalReason, address: string): void
  /**
   * A request from `address` was still unanswered REQUEST_TIMEOUT_MS after it arrived: it was
   * answered `503 service_unavailable` and its connection closed.
   */
  onOverdue (address: string): void
}

export type RefusalReason = 'address' | 'total'

/**
 * Per connection: its address (the limiter's subject of it); when it last began a request, as
 * the guard's count of connections and requests then (only the order matters); and until when
 * (performance.now()) it has to send its first request before it may count as idle, 0 once it
 * has begun one.
 */
interface Tracked { readonly socket: Socket; readonly address: string; lastActive: number; firstRequestDue: number }

const TRACKED = Symbol('petstore.connection')
/** On a connection admitted past a cap only to be answered (the refusal lane): why. */
const REFUSED = Symbol('petstore.refused')

type GuardedSocket = Socket & { [TRACKED]?: Tracked; [REFUSED]?: RefusalReason }

/**
 * A connection refused for a cap is not dropped unanswered: it waits in this lane, outside both
 * caps, for its request, which gets `503 connection_limit_reached` with Retry-After (nginx's
 * limit_conn does the same), or is served when it asks for /healthz or /readyz, so that probes
 * answer while the caps are full. The lane is small and short-lived: past its size the
 * connection that has waited longest is dropped, and a connection in it is dropped after
 * REFUSAL_LANE_MS, request or not, so a flood of connections costs a bounded number of
 * descriptors however fast it arrives.
 */
export function refusalLaneSize (limits: Pick<ServerLimits, 'maxConnections'>): number {
  return Math.max(16, Math.ceil(limits.maxConnections / 20))
}

export const REFUSAL_LANE_MS = 2000

/** The answer to a refused connection: seconds before it is worth trying again. */
export const REFUSAL_RETRY_AFTER_S = 1

/**
 * How long a new connection has to send its first request before the caps may count it as idle
 * and close it to make room. A client writes its request as soon as it is connected, but a burst
 * of connections can reach the server before any of their requests is read: closing those to
 * make room for the rest cut requests already sent, unanswered (issue 48 item 9: 50 of 150
 * simultaneous requests from one address got a socket hang up). A second covers a loaded client
 * and server many times over; a connection still silent after it is a spare one (a pool's, a
 * browser's preconnection), and closing it cuts nothing. One that never speaks is cut at the
 * header deadline anyway (HEADERS_TIMEOUT_MS, 408); until then it holds its address's slot, so
 * that address's next connection is answered 503 rather than made room for.
 */
export const FIRST_REQUEST_GRACE_MS = 1000

/** The answer to a request cut at its deadline: seconds before a retry, as for any `service_unavailable`. */
export const OVERDUE_RETRY_AFTER_S = 5

/**
 * Fair connection limits (docs/product.md 9.7). Node's `maxConnections` alone let one address
 * open all of them and idle, locking every other client out, probes included, for as long as the
 * keep-alive timeout. Here, as each connection arrives:
 * - an address (an IPv6 address by its /64, like anonymous rate limits) holds at most
 *   `maxConnectionsPerAddress`: past it, its own connection that has been idle longest is closed
 *   to make room, or, if none of its connections is idle, the new one is refused (answered 503
 *   once its request arrives);
 * - at `maxConnections`, the connection of any address that has been idle longest is closed to
 *   make room; when none is idle, a connection that is waiting on its own client (its answer
 *   not taken, its body still arriving, or its first request not arrived yet) is closed, taken
 *   from the address that holds the most connections, at least two more than the newcomer's
 *   address: busy connections cannot lock other addresses out (issue 30: eleven addresses of
 *   slow readers did), and an address never loses a connection to make room for one as big as
 *   itself. Only when no connection can make room is the new one refused.
 * Idle means no request in flight nor on its way: no answer is pending on it (a keep-alive
 * connection between requests, or one whose next request's headers have not all arrived: that
 * request has not begun, and the header deadline would cut it anyway), and, for a new
 * connection, FIRST_REQUEST_GRACE_MS have passed without a request. Closing one of those never
 * cuts an answer. A connection whose request the server is working on is never closed here.
 *
 * Nor does a request stay in flight past its deadline (issue 48 item 1): a route that never
 * answers (a bug, a backing service that never replies) held its connection, and its slot in
 * both caps, for ever; 11 addresses x 100 such requests held all 1,000 connections, and every
 * other address was refused. A request unanswered REQUEST_TIMEOUT_MS after it arrived is
 * answered `503 service_unavailable` and its connection closed, which frees the slot
 * (overdueAnswers).
 *
 * The cost per request is three property writes and a test (the 'request' listener: no clock is
 * read), per connection one clock read; the search for a connection to close runs only when a
 * cap is reached, over the connections held; the deadline's sweep, once per check interval (a
 * second with the defaults) while a request is in flight, visits the open connections
 * (overdueAnswers).
 */
export function guardConnections (
  server: Server,
  limits: Pick<ServerLimits, 'maxConnections' | 'maxConnectionsPerAddress' | 'headersTimeoutMs' | 'requestTimeoutMs'>,
  events: ConnectionEvents
): void {
  const open = new Set<Tracked>()
  /** Connections and requests seen so far: each one's `lastActive`. */
  let activity = 0
  const byAddress = new Map<string, Set<Tracked>>()
  const lane = new Set<GuardedSocket>()
  const laneSize = refusalLaneSize(limits)
  const overdue = overdueAnswers(limits, events, open)
  // The caps are enforced here, after the closing of idle connections: Node's own cap would drop
  // a newcomer before this listener could make room. Its backstop stays, far above ours, for
  // sockets closed here whose close event Node has not processed yet.
  server.maxConnections = limits.maxConnections * 2 + laneSize

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
  const refuse = (socket: GuardedSocket, reason: RefusalReason, address: string): void => {
    events.onRefused(reason, address)
    if (lane.size >= laneSize) {
      const oldest = lane.values().next().value
      if (oldest !== undefined) {
        lane.delete(oldest)
        oldest.destroy()
      }
    }
    socket[REFUSED] = reason
    lane.add(socket)
    const deadline = setTimeout(() => socket.destroy(), REFUSAL_LANE_MS)
    deadline.unref()
    socket.once('close', () => {
      clearTimeout(deadline)
      lane.delete(socket)
    })
  }

  server.on('connection', (socket: GuardedSocket) => {
    const remote = socket.remoteAddress
    if (remote === undefined || socket.destroyed) return // gone already
    const address = subjectOfAddress(remote)
    const now = performance.now()
    const held = byAddress.get(address)
    if (held !== undefined && held.size >= limits.maxConnectionsPerAddress) {
      const idle = longestIdle(held, now)
      if (idle === null) {
        refuse(socket, 'address', address)
        return
      }
      evict(idle)
    }
    if (open.size >= limits.maxConnections) {
      const room = longestIdle(open, now) ?? longestWaitingOfLargest(byAddress, byAddress.get(address)?.size ?? 0, now)
      if (room === null) {
        refuse(socket, 'total', address)
        return
      }
      evict(room)
    }
    const tracked: Tracked = { socket, address, lastActive: ++activity, firstRequestDue: now + FIRST_REQUEST_GRACE_MS }
    socket[TRACKED] = tracked
    open.add(tracked)
    const mine = byAddress.get(address)
    if (mine === undefined) byAddress.set(address, new Set([tracked]))
    else mine.add(tracked)
    socket.once('close', () => forget(tracked))
  })

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const tracked = (request.socket as GuardedSocket)[TRACKED]
    if (tracked === undefined) return
    tracked.lastActive = ++activity
    tracked.firstRequestDue = 0
    overdue.stamp(response)
  })
}

/** On a response of a guarded connection: how many sweeps had run when its request arrived. */
const ARRIVED = Symbol('petstore.arrived')

type StampedResponse = ServerResponse & { [ARRIVED]?: number }

/** What the deadline's sweep reads of a guarded connection. */
interface Swept { readonly socket: Socket; readonly address: string }

/**
 * The answer's deadline. Node's own REQUEST_TIMEOUT_MS ends once the request has arrived; this
 * one runs on until the answer begins. A timer per request would cost its creation and clearing
 * on every request. Instead each request is stamped with the number of sweeps run so far (a
 * property write), and one timer, armed while a request is in flight, runs `sweep` once per check
 * interval: it visits the open connections (one property read for each with no request in
 * flight) and answers each request that arrived more than REQUEST_TIMEOUT_MS worth of sweeps ago.
 * The count of sweeps only lags the clock (a timer runs late, never early, and none runs while
 * nothing is in flight), so a request is cut no sooner than REQUEST_TIMEOUT_MS after it arrived
 * and, while the event loop keeps time, at most two check intervals later (2 s with the
 * defaults). Measured on Node 24 (a shared two-core VM): a sweep over 1,000 connections takes
 * about 70 µs when each has a request in flight, 30 µs when none has, so at one sweep a second
 * under a hundredth of a percent of a core; a stamp, tens of nanoseconds.
 *
 * Left to the other deadlines: a request whose body is still arriving (Node answers it 408 at the
 * same deadline, counted from its first byte), and an answer whose head has gone out (a second
 * status line cannot follow; from then on WRITE_TIMEOUT_MS cuts a connection on which nothing
 * moves, transport/header-block.ts).
 */
export function overdueAnswers (
  limits: Pick<ServerLimits, 'headersTimeoutMs' | 'requestTimeoutMs'>,
  events: Pick<ConnectionEvents, 'onOverdue'>,
  connections: Iterable<Swept>
): { stamp (response: ServerResponse): void; sweep (): void } {
  const interval = checkingInterval(limits)
  const allowed = Math.ceil(limits.requestTimeoutMs / interval)
  let sweeps = 0
  let timer: NodeJS.Timeout | null = null
  const arm = (): void => {
    timer = setTimeout(sweep, interval)
    timer.unref()
  }
  const sweep = (): void => {
    if (timer !== null) clearTimeout(timer)
    timer = null
    sweeps++
    let pending = false
    for (const { socket, address } of connections) {
      const response = (socket as SocketInternals)._httpMessage as StampedResponse | null | undefined
      if (response === undefined || response === null || response.headersSent) continue
      const arrived = response[ARRIVED]
      if (arrived === undefined) continue
      if (sweeps - arrived <= allowed || !response.req.complete) {
        pending = true
        continue
      }
      answerOverdue(response, limits.requestTimeoutMs)
      events.onOverdue(address)
    }
    if (pending) arm()
  }
  return {
    stamp (response) {
      (response as StampedResponse)[ARRIVED] = sweeps
      if (timer === null) arm()
    },
    sweep
  }
}

/**
 * `503 service_unavailable`, with Retry-After, the request id Fastify gave the request (when
 * known: tagRequestId) and the connection closed. The route's handler, if it ever finishes,
 * finds its answer sent (Fastify logs that and sends nothing).
 */
function answerOverdue (response: ServerResponse, timeoutMs: number): void {
  try {
    writeError(
      response,
      'service_unavailable',
      `the server did not answer within ${timeoutMs} ms; the request may still take effect: `
      + `retry after ${OVERDUE_RETRY_AFTER_S} s, a create with the same Idempotency-Key`,
      { 'retry-after': String(OVERDUE_RETRY_AFTER_S) },
      (response.req as TaggedRequest)[REQUEST_ID]
    )
  } catch {
    // Nothing here should throw (no head has gone out), but this runs on a timer, where a throw
    // would end the process: the connection is cut instead, which frees its slot all the same.
    response.socket?.destroy()
  }
}

const REQUEST_ID = Symbol('petstore.requestId')

type TaggedRequest = IncomingMessage & { [REQUEST_ID]?: string }

/**
 * Records on the raw request the id Fastify gives it (the instance's genReqId), so that an answer
 * written outside Fastify, the deadline's, carries the id of the request's log line; returns it.
 */
export function tagRequestId (request: IncomingMessage, id: string): string {
  (request as TaggedRequest)[REQUEST_ID] = id
  return id
}

/** Why the connection of `request` was refused, when it was admitted only to be answered (the refusal lane). */
function refusalOf (request: IncomingMessage): RefusalReason | undefined {
  return (request.socket as GuardedSocket)[REFUSED]
}

/** The socket internals read below: Node's answer in progress, and the request being parsed. */
type SocketInternals = Socket & {
  _httpMessage?: { headersSent?: boolean } | null
  parser?: { incoming?: { complete?: boolean; _dumped?: boolean } | null } | null
}

/**
 * Whether a request is in flight on the connection: Node has an answer attached to it (from the
 * moment the request's headers are read to the end of its answer).
 */
function inFlight (socket: Socket): boolean {
  const pending = (socket as SocketInternals)._httpMessage
  return pending !== undefined && pending !== null
}

/**
 * Whether the connection waits on its client rather than on the server: its answer has begun and
 * bytes of it wait in the socket for the client to take them, its request's body is still
 * arriving, or it is new and its first request has not arrived yet.
 */
function waitingOnClient (tracked: Tracked, now: number): boolean {
  const internals = tracked.socket as SocketInternals
  if (internals._httpMessage?.headersSent === true) return tracked.socket.writableLength > 0
  const incoming = internals.parser?.incoming
  if (incoming !== undefined && incoming !== null) return incoming.complete !== true
  return tracked.firstRequestDue > now
}

/**
 * The connection of `candidates` idle longest (the earliest last request, or connection when it
 * has sent none), or null when every one has a request in flight or is new and still within
 * FIRST_REQUEST_GRACE_MS of its first request.
 */
function longestIdle (candidates: Iterable<Tracked>, now: number): Tracked | null {
  let oldest: Tracked | null = null
  for (const tracked of candidates) {
    if (inFlight(tracked.socket) || tracked.firstRequestDue > now) continue
    if (oldest === null || tracked.lastActive < oldest.lastActive) oldest = tracked
  }
  return oldest
}

/**
 * Of the addresses holding at least two connections more than `newcomerHolds`, the one that
 * holds the most, and of its connections waiting on their client, the one whose request (or
 * connection) began earliest; null when there is none.
 */
function longestWaitingOfLargest (
  byAddress: Map<string, Set<Tracked>>,
  newcomerHolds: number,
  now: number
): Tracked | null {
  let best: Tracked | null = null
  let bestHolds = 0
  for (const held of byAddress.values()) {
    if (held.size < newcomerHolds + 2 || held.size < bestHolds) continue
    for (const tracked of held) {
      if (!waitingOnClient(tracked, now)) continue
      if (best === null || held.size > bestHolds || tracked.lastActive < best.lastActive) {
        best = tracked
        bestHolds = held.size
      }
    }
  }
  return best
}

/**
 * The guard's events in the log: the first of each kind at once, then at most one line per 10 s
 * with the count, so that a flood of connections (or of requests that never get an answer)
 * cannot flood the log too. A request cut at its deadline is an error: a route, or a service
 * behind it, did not answer.
 */
export function reportRefusals (
  log: { warn (fields: object, message: string): void; error (fields: object, message: string): void },
  limits: Pick<ServerLimits, 'maxConnections' | 'maxConnectionsPerAddress' | 'requestTimeoutMs'>
): ConnectionEvents {
  const windows = {
    total: eventWindow((refused, addresses) => log.warn(
      { refused, maxConnections: limits.maxConnections, addresses },
      'connection cap reached: new connections answered 503'
    )),
    address: eventWindow((refused, addresses) => log.warn(
      { refused, maxConnectionsPerAddress: limits.maxConnectionsPerAddress, addresses },
      'per-address connection cap reached: new connections answered 503'
    ))
  }
  const overdue = eventWindow((cut, addresses) => log.error(
    { cut, requestTimeoutMs: limits.requestTimeoutMs, addresses },
    'requests unanswered at their deadline: answered 503 service_unavailable, connections closed'
  ))
  return { onRefused (reason, address) { windows[reason](address) }, onOverdue: overdue }
}

/** Counts events; reports the first at once and the rest once per 10 s, with up to 10 addresses. */
function eventWindow (report: (count: number, addresses: string[]) => void): (address: string) => void {
  let count = 0
  let addresses = new Set<string>()
  let window: NodeJS.Timeout | null = null
  const flush = (): void => {
    report(count, [...addresses])
    count = 0
    addresses = new Set()
  }
  return (address) => {
    count++
    if (addresses.size < 10) addresses.add(address)
    if (window !== null) return
    flush()
    window = setTimeout(() => {
      window = null
      if (count > 0) flush()
    }, 10_000)
    window.unref()
  }
}
