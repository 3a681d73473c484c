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
import type { Server } from 'node:http'
import type { FastifyHttpOptions, FastifyInstance } from 'fastify'
import type { ServerLimits } from '../config.ts'
import { ERROR_CATALOGUE, type ErrorCode } from '../errors.ts'

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
export function connectionOptions (limits: ServerLimits): Pick<FastifyHttpOptions<Server>, 'http' | 'requestTimeout' | 'keepAliveTimeout' | 'return503OnClosing' | 'clientErrorHandler'> {
  return {
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: checkingInterval(limits),
      maxHeaderSize: MAX_HEADER_BYTES
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
