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
// `Connection: close`. test/transport/header-block.http.test.ts compares the head, and the state it
// leaves, with Node's own for each case.
//
// `_storeHeader` and the fields it reads are Node's private internals: a release may rename them.
// So the module checks, once as it loads, that heads written here are still Node's (headShapeProblem);
// if not, every head is left to Node (correct, slower), and test/transport/node-head.test.ts fails,
// naming what changed.
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http'
import type { Socket } from 'node:net'

// node:http's CommonJS exports, not an ES import: that would evaluate every export of the module,
// and its WebSocket getters load undici (see transport/connections.ts, docs/performance.md "Memory").
const { IncomingMessage: Incoming, ServerResponse } = process.getBuiltinModule('node:http')
const { Socket: NetSocket } = process.getBuiltinModule('node:net')
type Response = InstanceType<typeof ServerResponse>

/** Node's checkIsHttpToken and checkInvalidHeaderChar. */
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/

/** Names Node treats specially (matchHeader), in lower case: these answers go to Node's path. */
const SPECIAL = new Set([
  'connection', 'proxy-connection', 'transfer-encoding', 'date', 'expect', 'trailer', 'keep-alive'
])

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
const nodeStoreHeader = (ServerResponse.prototype as unknown as Partial<NodeInternals>)._storeHeader

/** Set as the module loads (at its end). */
let fallback: string | null = null

/** Why every head is left to Node (the fallback), or null while heads are written here. */
export function headBlockFallback (): string | null {
  return fallback
}

/** For tests: every head left to Node from now on (true), or the check made again (false). */
export function forceHeadBlockFallback (on: boolean): void {
  fallback = null
  fallback = on ? 'forced by a test' : headShapeProblem()
}

let keepAlive: { timeout: number; max: number | undefined; line: string } = { timeout: -1, max: undefined, line: '' }

/** `Keep-Alive: timeout=…[, max=…]` as Node writes it, made again only when the server's settings change. */
function keepAliveLine (timeoutMs: number, max: number | undefined): string {
  if (timeoutMs !== keepAlive.timeout || max !== keepAlive.max) {
    const cap = ~~(max ?? 0) > 0 ? `, max=${max}` : ''
    keepAlive = { timeout: timeoutMs, max, line: `Keep-Alive: timeout=${Math.floor(timeoutMs / 1000)}${cap}\r\n` }
  }
  return keepAlive.line
}

/**
 * The head Node's `_storeHeader` would store for `headers`, ending in its blank line, or null
 * when Node must make it: headers not a plain object, a header removed or a body already chunked,
 * a value not a plain string or number, a name Node treats specially or refuses, a value it
 * refuses (then refused by Node, with its own error), no Content-Length (framed by Node: chunked,
 * or close).
 */
function headBlock (response: Response, firstLine: string, headers: unknown): string | null {
  const self = response as unknown as NodeInternals
  if (headers === null || typeof headers !== 'object' || Object.getPrototypeOf(headers) !== Object.prototype
    || self._removedConnection || self._removedContLen || self._removedTE || self.chunkedEncoding) return null
  const fields = headers as OutgoingHttpHeaders
  let head = firstLine
  let contentLength = false
  for (const name in fields) {
    const value = fields[name]
    if (typeof value !== 'string' && typeof value !== 'number') return null
    const known = plainNames.get(name)
    if (known === undefined) {
      const lower = name.toLowerCase()
      if (!TOKEN.test(name) || (lower !== 'content-length' && SPECIAL.has(lower))) return null
    }
    if (!contentLength && name.length === 14 && name.toLowerCase() === 'content-length') contentLength = true
    head += `${name}: ${value}\r\n`
    if (value !== known) {
      if (typeof value === 'string' && INVALID_VALUE_CHAR.test(value)) return null
      if (known !== undefined || (plainNames.size < PLAIN_NAMES_MAX && name.toLowerCase() !== 'content-length')) {
        plainNames.set(name, value)
      }
    }
  }
  if (!contentLength) return null

  if (response.sendDate) head += `Date: ${utcDate()}\r\n`
  // Node's keep-alive logic when no Connection header was given and the length is known.
  if (response.shouldKeepAlive && self.maxRequestsOnConnectionReached) return `${head}Connection: close\r\n\r\n`
  if (response.shouldKeepAlive) {
    const timeout = self._keepAliveTimeout && self._defaultKeepAlive
      ? keepAliveLine(self._keepAliveTimeout, self._maxRequestsPerSocket)
      : ''
    return `${head}Connection: keep-alive\r\n${timeout}\r\n`
  }
  self._last = true
  return `${head}Connection: close\r\n\r\n`
}

type Headers = OutgoingHttpHeaders | OutgoingHttpHeader[]

export class HeaderBlockResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /**
   * Node's public step that every head goes through (its implicit head calls it too). The stop's
   * `Connection: close` and the write deadline are set here, not in `_storeHeader`, so that they
   * hold on the fallback whatever Node's internals become.
   */
  override writeHead (statusCode: number, reason?: string | Headers, headers?: Headers): this {
    const socket = this.socket as (Socket & { server?: object }) | null
    const server = socket?.server
    if (anyClosing && closing.has(server ?? this)) this.shouldKeepAlive = false
    const writeDeadline = server === undefined ? undefined : writeDeadlines.get(server)
    if (writeDeadline !== undefined) socket?.setTimeout(writeDeadline)
    // Node takes the headers second or third, by the type of the second: passed on as given.
    return super.writeHead(statusCode, reason as string | undefined, headers)
  }

  /** Node's internal step of writeHead: the head as one string in `_header`, not yet sent. */
  _storeHeader (firstLine: string, headers: unknown): void {
    const head = fallback === null ? headBlock(this, firstLine, headers) : null
    if (head === null) {
      nodeStoreHeader?.call(this, firstLine, headers)
      return
    }
    const self = this as unknown as NodeInternals
    self._header = head
    self._headerSent = false
    headBlocks.written++
  }
}

interface Probe { what: string; keepAlive: boolean; capReached?: true; removed?: 'connection'; writtenHere: boolean }

/** The states the load-time check writes a head in, set as Node's server sets them on each answer. */
const PROBES: readonly Probe[] = [
  { what: 'a kept-alive connection with a timeout and a request cap', keepAlive: true, writtenHere: true },
  { what: 'the last request of a capped connection', keepAlive: true, capReached: true, writtenHere: true },
  { what: 'a connection that closes', keepAlive: false, writtenHere: true },
  { what: 'a removed Connection header', keepAlive: true, removed: 'connection', writtenHere: false }
]

/** What a stored head leaves for Node's next steps (the send, the end of the connection). */
const LEFT = ['_header', '_headerSent', '_last', 'shouldKeepAlive', 'chunkedEncoding'] as const

function probeHead (Class: typeof ServerResponse, probe: Probe): Response {
  const request = new Incoming(new NetSocket())
  request.method = 'GET'
  request.httpVersionMajor = 1
  request.httpVersionMinor = 1
  const response = new Class(request)
  const self = response as unknown as NodeInternals
  // No Date: a second ending between the two heads would tell them apart.
  response.sendDate = false
  response.shouldKeepAlive = probe.keepAlive
  self._keepAliveTimeout = 5000
  self._maxRequestsPerSocket = 100
  if (probe.capReached === true) self.maxRequestsOnConnectionReached = true
  if (probe.removed !== undefined) response.removeHeader(probe.removed)
  response.writeHead(200, { 'x-content-type-options': 'nosniff', 'content-length': '2' })
  return response
}

/**
 * Why heads written here would not be Node's, or null. Node's own response and this class write
 * the head of one answer in each state of PROBES, the state set under the names read above: a
 * field Node renamed, a head no longer made through `_storeHeader`, or any byte of difference
 * shows here, once, rather than in the answers. (The Date line is left out; its format is
 * Node's, which test/transport/header-block.http.test.ts compares.)
 */
function headShapeProblem (): string | null {
  if (typeof nodeStoreHeader !== 'function') return 'ServerResponse.prototype._storeHeader is not a function'
  const written = headBlocks.written
  try {
    for (const probe of PROBES) {
      const node = probeHead(ServerResponse, probe)
      const before = headBlocks.written
      const ours = probeHead(HeaderBlockResponse as typeof ServerResponse, probe)
      if ((headBlocks.written > before) !== probe.writtenHere) {
        return `the head for ${probe.what} was ${probe.writtenHere ? 'not ' : ''}written here: `
          + 'writeHead no longer calls _storeHeader, or a field it reads was renamed'
      }
      const [a, b] = [node, ours] as unknown as [Record<string, unknown>, Record<string, unknown>]
      const differs = LEFT.find((field) => a[field] !== b[field])
      if (differs !== undefined) return `${differs} after a head for ${probe.what} is not what Node's leaves`
    }
    return null
  } catch (error) {
    return `writing a head to compare threw: ${String(error)}`
  } finally {
    headBlocks.written = written
  }
}

fallback = headShapeProblem()
