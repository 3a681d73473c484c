// The response head written in one pass (docs/performance.md, "Where the time of a read goes").
//
// Fastify hands Node every answer's headers as one object (`writeHead(status, headers)`), and
// Node's `_storeHeader` then validates each name and value with its own regular expression and
// sorts it through a switch of special names, one call chain per header: with the 19 headers of
// a read, about a tenth of the server's CPU per request. This response class writes the same
// bytes for the common answer (every header a plain string or number, a Content-Length, none of
// the headers Node treats specially) at the cost of one check of all names (each distinct name
// is checked once per process) and one regular expression per value not equal to the last value
// of its name found valid (one over all values, concatenated, cost more: the concatenation, then
// its flattening); anything else
// (Connection, Transfer-Encoding, Date, Expect, Trailer, Keep-Alive, a header given twice, a
// value Node would refuse) goes to Node's own `_storeHeader`, which answers or throws exactly
// as before. The server is made with it in transport/connections.ts (`ServerResponse` option).
//
// What Node adds after the headers is reproduced as Node 24 does it (`_storeHeader` in
// lib/_http_outgoing.js): `Date`, then `Connection: keep-alive` and `Keep-Alive: timeout=…` or
// `Connection: close`. test/http/header-block.test.ts compares the head, and the state it leaves,
// with Node's own for each case.
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http'
import type { Socket } from 'node:net'

// node:http's CommonJS exports, not an ES import: that would evaluate every export of the module,
// and its WebSocket getters load undici (see transport/connections.ts, docs/performance.md "Memory").
const { ServerResponse } = process.getBuiltinModule('node:http')

/** Node's checkIsHttpToken and checkInvalidHeaderChar. */
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/

/** Names Node treats specially (matchHeader), in lower case: these answers go to Node's path. */
const SPECIAL = new Set(['connection', 'proxy-connection', 'transfer-encoding', 'date', 'expect', 'trailer', 'keep-alive'])

/**
 * Names already found to be valid tokens, and not special (lower case as Fastify keeps them),
 * each with the last value of it found valid: a value equal to it (most are the same string
 * object, a route's constant) needs no second check. At most PLAIN_NAMES_MAX names, so at most
 * as many values are kept.
 */
const plainNames = new Map<string, string | number>()
const PLAIN_NAMES_MAX = 1000

let dateText = ''

function forgetDate (): void { dateText = '' }

/**
 * Node's utcDate(): the current second as an IMF-fixdate, made once per second and forgotten
 * when the second ends (a one-shot timer that keeps no process alive), so an answer reads no clock.
 */
function utcDate (): string {
  if (dateText === '') {
    const now = new Date()
    dateText = now.toUTCString()
    setTimeout(forgetDate, 1000 - now.getMilliseconds()).unref()
  }
  return dateText
}

/** The fields of Node's OutgoingMessage and ServerResponse that _storeHeader reads and sets. */
interface NodeInternals {
  _header: string | null
  _headerSent: boolean
  _last: boolean
  _removedConnection: boolean
  _removedContLen: boolean
  _removedTE: boolean
  _keepAliveTimeout: number
  _defaultKeepAlive: boolean
  _maxRequestsPerSocket: number | undefined
  maxRequestsOnConnectionReached: boolean
  chunkedEncoding: boolean
  useChunkedEncodingByDefault: boolean
  agent: unknown
  _storeHeader (firstLine: string, headers: unknown): void
}

/** Servers whose answers close their connection from now on (a stopping server: server.ts). */
const closing = new WeakSet<object>()

/**
 * From now on, every answer of `server` not yet begun says `Connection: close` and closes its
 * connection once sent, as Node does for a response whose shouldKeepAlive is false.
 */
export function closeConnectionsAfterAnswer (server: object): void {
  closing.add(server)
  anyClosing = true
}
let anyClosing = false

/** Per server: how long a client may take to take each part of an answer (WRITE_TIMEOUT_MS). */
const writeDeadlines = new WeakMap<object, number>()

/**
 * From now on, once an answer of `server` has its head, its connection is cut when the client
 * leaves a write untaken for `ms` (Node's socket timeout, which a write resets only once it has
 * all been handed to the kernel: a client that stops reading is cut `ms` after it stopped). Node
 * sets the keep-alive timeout over it once the answer is sent.
 */
export function cutSlowReaders (server: object, ms: number): void {
  writeDeadlines.set(server, ms)
}

/** Heads written here rather than by Node, since the process started (the tests read it). */
export const headBlocks = { written: 0 }

/** Node's own method (OutgoingMessage.prototype._storeHeader), for every other answer. */
const nodeStoreHeader = (ServerResponse.prototype as unknown as NodeInternals)._storeHeader

let keepAlive: { timeout: number; max: number | undefined; line: string } = { timeout: -1, max: undefined, line: '' }

/** `Keep-Alive: timeout=…[, max=…]` as Node writes it, made again only when the server's settings change. */
function keepAliveLine (timeoutMs: number, max: number | undefined): string {
  if (timeoutMs !== keepAlive.timeout || max !== keepAlive.max) {
    keepAlive = { timeout: timeoutMs, max, line: `Keep-Alive: timeout=${Math.floor(timeoutMs / 1000)}${~~(max ?? 0) > 0 ? `, max=${max}` : ''}\r\n` }
  }
  return keepAlive.line
}

export class HeaderBlockResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** Node's internal step of writeHead: the head as one string in `_header`, not yet sent. */
  _storeHeader (firstLine: string, headers: unknown): void {
    const self = this as unknown as NodeInternals
    const socket = this.socket as (Socket & { server?: object }) | null
    const server = socket?.server
    if (anyClosing && closing.has(server ?? this)) this.shouldKeepAlive = false
    const writeDeadline = server === undefined ? undefined : writeDeadlines.get(server)
    if (writeDeadline !== undefined) socket?.setTimeout(writeDeadline)
    if (headers === null || typeof headers !== 'object' || Object.getPrototypeOf(headers) !== Object.prototype
      || self._removedConnection || self._removedContLen || self._removedTE || self.chunkedEncoding) {
      nodeStoreHeader.call(this, firstLine, headers)
      return
    }
    const fields = headers as OutgoingHttpHeaders
    let head = firstLine
    let contentLength = false
    for (const name in fields) {
      const value = fields[name]
      if (typeof value !== 'string' && typeof value !== 'number') { nodeStoreHeader.call(this, firstLine, headers); return }
      const known = plainNames.get(name)
      if (known === undefined) {
        const lower = name.toLowerCase()
        if (!TOKEN.test(name) || (lower !== 'content-length' && SPECIAL.has(lower))) { nodeStoreHeader.call(this, firstLine, headers); return }
      }
      if (!contentLength && name.length === 14 && name.toLowerCase() === 'content-length') contentLength = true
      head += `${name}: ${value}\r\n`
      if (value !== known) {
        if (typeof value === 'string' && INVALID_VALUE_CHAR.test(value)) { nodeStoreHeader.call(this, firstLine, headers); return }
        if (known !== undefined || (plainNames.size < PLAIN_NAMES_MAX && name.toLowerCase() !== 'content-length')) plainNames.set(name, value)
      }
    }
    // An answer without Content-Length is framed by Node (chunked, or close), as a value Node
    // would refuse (above) is refused by Node, with its own error.
    if (!contentLength) { nodeStoreHeader.call(this, firstLine, headers); return }

    if (this.sendDate) head += `Date: ${utcDate()}\r\n`
    // Node's keep-alive logic when no Connection header was given and the length is known.
    if (this.shouldKeepAlive && self.maxRequestsOnConnectionReached) {
      head += 'Connection: close\r\n'
    } else if (this.shouldKeepAlive) {
      head += 'Connection: keep-alive\r\n'
      if (self._keepAliveTimeout && self._defaultKeepAlive) head += keepAliveLine(self._keepAliveTimeout, self._maxRequestsPerSocket)
    } else {
      self._last = true
      head += 'Connection: close\r\n'
    }
    self._header = head + '\r\n'
    self._headerSent = false
    headBlocks.written++
  }
}
