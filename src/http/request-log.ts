// Request logging at the cost of one line per request (docs/performance.md).
//
// Fastify's default writes two lines per request ("incoming request" and "request completed") and
// builds a pino child logger for every request, which together cost more than the rest of a
// cached read. Here:
// - each request's logger is a lazy child: it becomes a real pino child only when something is
//   logged through it, and it is bound to the request id and, once known, the key id;
// - one line per request, "request completed", written when the response is finished, with the
//   request id, the key id, how it came when not plainly (`via`: `portal` for the partner portal's
//   door, `mcp` for an agent's tool call that failed on our side), the method, the URL (secrets
//   redacted, the door's as routed: /v1/…), the status, the time and, for an error, its code and
//   message;
// - refusals (429) are aggregated: the first of each window is written in full, the others of the
//   window are counted and written as one "requests refused" line when the next window begins
//   (or the app closes), so 20,000 refused calls write a handful of lines, not 20,000.
import { viaMcp } from '../shared/channel.ts'
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify'
import { pino } from 'pino'
import type { Clock } from '../shared/clock.ts'
import { RandomPool } from '../shared/random-pool.ts'
import { uuidText } from '../shared/uuid.ts'
import { viaPortal } from './instance.ts'
import { errorLogView, logArgumentView, redactText, redactUrl } from './redact.ts'
import { telemetry } from '../telemetry/hooks.ts'

type Bindings = Record<string, unknown>
type LogFn = (...args: unknown[]) => void
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

declare module 'fastify' {
  interface FastifyRequest {
    /** The code and message of the error this request was answered with (for its log line). */
    failure: { code: string; message: string } | null
  }
}

/** What a request logger needs from the request: its key id, once the access step knows it. */
interface KeyHolder { principal?: { keyId: number } | null }

/**
 * A logger that builds its pino child on first use. Bindings: the request id, and the key id of
 * `holder.principal` as it is when a line is written (the access step resolves it after the
 * logger is made). Everything Fastify and our code call on a logger is here.
 */
class LazyRequestLogger {
  readonly #parent: FastifyBaseLogger
  readonly #bindings: Bindings
  #child: FastifyBaseLogger | null = null
  #boundKeyId: number | undefined = undefined
  holder: KeyHolder | null = null

  constructor (parent: FastifyBaseLogger, bindings: Bindings) {
    this.#parent = parent
    this.#bindings = bindings
  }

  get level (): string { return this.#parent.level }
  set level (level: string) { this.#real().level = level }

  #real (): FastifyBaseLogger {
    const keyId = this.#bindings.keyId === undefined ? this.holder?.principal?.keyId : undefined
    if (this.#child === null || keyId !== this.#boundKeyId) {
      this.#boundKeyId = keyId
      this.#child = this.#parent.child(keyId === undefined ? this.#bindings : { ...this.#bindings, keyId })
    }
    return this.#child
  }

  #log (level: Level, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return
    // No key in any line, whoever logs through the request: messages, fields and errors are
    // redacted like the URL (http/redact.ts).
    ;(this.#real()[level] as LogFn)(...args.map(logArgumentView))
  }

  fatal (...args: unknown[]): void { this.#log('fatal', args) }
  error (...args: unknown[]): void { this.#log('error', args) }
  warn (...args: unknown[]): void { this.#log('warn', args) }
  info (...args: unknown[]): void { this.#log('info', args) }
  debug (...args: unknown[]): void { this.#log('debug', args) }
  trace (...args: unknown[]): void { this.#log('trace', args) }
  silent (): void {}
  isLevelEnabled (level: string): boolean {
    const parent = this.#parent as FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean }
    return parent.isLevelEnabled === undefined || parent.isLevelEnabled(level)
  }

  /** Lazy too: a child with more bindings (the access step's keyId, say) costs nothing until used. */
  child (bindings: Bindings, options?: object): FastifyBaseLogger {
    if (options !== undefined && Object.keys(options).length > 0) return this.#real().child(bindings, options)
    const child = new LazyRequestLogger(this.#parent, { ...this.#bindings, ...bindings })
    child.holder = this.holder
    return child as unknown as FastifyBaseLogger
  }
}

/** Fastify's childLoggerFactory: a lazy child per request instead of a pino child. */
export function lazyChildLogger (logger: FastifyBaseLogger, bindings: Bindings): FastifyBaseLogger {
  return new LazyRequestLogger(logger, bindings) as unknown as FastifyBaseLogger
}

/** What a caller's own Request-Id may be: a UUID fits, and so does any short token of these characters. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/
/**
 * An API key (accounts/keys.rules.ts: `psk_` and base62, or base64url for a legacy key), whatever
 * its case: never a request id.
 */
const KEY_LIKE = /psk_/i

/**
 * The caller's `Request-Id`, kept for tracing when it looks like an id (a UUID, or 1 to 64 of
 * `A-Z a-z 0-9 . _ : -`) and nothing like a key, or null (a new id is made). The id is logged on
 * every line of the request and echoed in the answer: a key sent there by mistake, or to get it
 * into the logs, must not be (issue 19 item 7).
 */
export function acceptedRequestId (header: string | string[] | undefined): string | null {
  return typeof header === 'string' && REQUEST_ID.test(header) && !KEY_LIKE.test(header) ? header : null
}

// New request ids: random UUIDs (version 4, from a pool of crypto-strong bytes, as randomUUID
// draws them), written as one string (shared/uuid.ts).
const idRandom = new RandomPool()

/** A new random request id: a version 4 UUID in lower case. */
export function newRequestId (): string {
  const from = idRandom.take(16)
  const random = idRandom.bytes
  random[from + 6] = (random[from + 6]! & 0x0f) | 0x40 // the version, 4
  random[from + 8] = (random[from + 8]! & 0x3f) | 0x80 // the variant, RFC 9562
  return uuidText(random, from)
}

/** Links a request's lazy logger to the request, so its lines carry the key id once known. */
export function bindRequestLogger (request: FastifyRequest): void {
  const log = request.log as unknown
  if (log instanceof LazyRequestLogger) log.holder = request as KeyHolder
}

export interface RequestLogOptions {
  clock: Clock
  /** Refusals (429) are aggregated over windows this long; the first of a window is logged in full. */
  refusalWindowMs?: number
}

/**
 * Fastify's log controller: no "incoming request" line, and one completion line per request
 * (refusals aggregated). Pass as the `logController` option; call `flush()` when the app closes.
 */
export class RequestLog extends LogController {
  readonly #clock: Clock
  readonly #windowMs: number
  #root: FastifyBaseLogger | null = null
  #windowStart = -Infinity
  #refused = 0
  #refusedByCode: Record<string, number> = {}

  constructor (options: RequestLogOptions) {
    super({ disableRequestLogging: false })
    this.#clock = options.clock
    this.#windowMs = options.refusalWindowMs ?? 10_000
  }

  /** The app's logger, which writes the aggregated lines. */
  attach (logger: FastifyBaseLogger): void {
    this.#root = logger
    this.#fast = fastLineWriter(logger)
  }

  #fast: FastLineWriter | null = null

  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // A tool call is one line: the `POST /mcp` that carried it. The operation it made inside
    // (app.inject, marked by the MCP channel) adds a line only when it failed on our side.
    if (viaMcp(request.headers) && reply.statusCode < 500) return
    this.#completed(error, request, reply, reply.elapsedTime)
  }

  /**
   * The line of a request that Fastify answered outside routing (a malformed URL: see
   * observeFrameworkAnswers), which Fastify neither times nor reports to the log controller.
   */
  completedOutsideRouting (request: FastifyRequest, reply: FastifyReply, responseTime: number): void {
    this.#completed(null, request, reply, responseTime)
  }

  #completed (
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    responseTime: number
  ): void {
    const root = this.#root
    if (root === null) return
    const statusCode = reply.statusCode
    if (statusCode === 429 && error == null && this.#aggregate(request)) return
    const fast = this.#fast
    // With tracing on, the line names the request's trace (telemetry/); off, nothing is looked up.
    const traceId = telemetry.traceIdOf === null ? undefined : telemetry.traceIdOf(request)
    if (fast !== null && error == null && request.failure === null) {
      // The common line, built here as pino would build it (docs/performance.md).
      if (!fast.enabled()) return
      const keyId = request.principal?.keyId
      const via = viaOf(request)
      // The id (a UUID, or a caller's id of [A-Za-z0-9._:-]: acceptedRequestId) and the method
      // (a token: Node's parser accepts no other) never need escaping; the URL may.
      fast.write(`${fast.head()},"reqId":"${request.id}"${keyId === undefined ? '' : `,"keyId":${keyId}`}`
        + `${via === undefined ? '' : `,"via":"${via}"`},"method":"${request.method}"`
        + `,"url":${quoted(redactUrl(request.url))},"statusCode":${statusCode},"responseTime":${JSON.stringify(responseTime)}`
        + `${traceId === undefined ? '' : `,"traceId":"${traceId}"`},"msg":"request completed"${fast.end}`)
      return
    }
    // Written by the app's logger with the ids spelled out: no per-request child is built for it.
    const line: Record<string, unknown> = {
      reqId: request.id,
      keyId: request.principal?.keyId,
      method: request.method,
      url: redactUrl(request.url),
      statusCode,
      responseTime,
      traceId
    }
    const via = viaOf(request)
    if (via !== undefined) line.via = via
    const failure = request.failure
    if (failure !== null) {
      line.code = failure.code
      // A message may echo what the client sent (a field name): no key reaches the log through it.
      line.reason = redactText(failure.message)
    }
    if (error != null) {
      line.err = errorLogView(error)
      root.error(line, 'request errored')
      return
    }
    root.info(line, 'request completed')
  }

  /** Counts a refusal; true when it was absorbed into the window's count (not logged alone). */
  #aggregate (request: FastifyRequest): boolean {
    const now = this.#clock.now()
    if (now - this.#windowStart < this.#windowMs) {
      this.#refused++
      const code = request.failure?.code ?? 'rate_limited'
      this.#refusedByCode[code] = (this.#refusedByCode[code] ?? 0) + 1
      return true
    }
    this.flush()
    this.#windowStart = now
    return false
  }

  /** Writes the count of refusals not logged one by one, if any. */
  flush (): void {
    if (this.#refused === 0) return
    const since = new Date(this.#windowStart).toISOString()
    this.#root?.info({ refused: this.#refused, byCode: this.#refusedByCode, since }, 'requests refused')
    this.#refused = 0
    this.#refusedByCode = {}
  }
}

/** How a request came, for its line: an agent's tool call (MCP), the partner portal's door, or plainly (undefined). */
const viaOf = (request: FastifyRequest): 'mcp' | 'portal' | undefined =>
  viaMcp(request.headers) ? 'mcp' : viaPortal(request) ? 'portal' : undefined

type FrameworkErrorHandler = (error: Error, request: FastifyRequest, reply: FastifyReply) => void

/**
 * Fastify answers a malformed URL (bad percent-encoding, an over-long path segment) through its
 * `frameworkErrors` handler without the response hooks and without telling the log controller:
 * those requests were charged, yet appeared neither in the log nor in /metrics. This wraps the
 * handler so that `onComplete` hears of each answer once it has ended (sent, or cut), with the
 * milliseconds since the request reached the handler.
 */
export function observeFrameworkAnswers (
  handler: FrameworkErrorHandler,
  onComplete: (request: FastifyRequest, reply: FastifyReply, ms: number) => void
): FrameworkErrorHandler {
  return (error, request, reply) => {
    const started = performance.now()
    reply.raw.once('close', () => { onComplete(request, reply, performance.now() - started) })
    handler(error, request, reply)
  }
}

/** A pino logger's own parts, to write the common request line without its generic path. */
interface FastLineWriter {
  /** `{"level":30,"time":…,"pid":…,"hostname":…`: what pino puts before an info line's fields. */
  head (): string
  end: string
  /** Whether info lines are written at the logger's level now. */
  enabled (): boolean
  write (line: string): void
}

const LINE_KEYS = ['reqId', 'keyId', 'via', 'method', 'url', 'statusCode', 'responseTime', 'msg']

/**
 * The parts of `logger` that make its info lines, when the line built from them is exactly the
 * one pino would write: a pino logger whose message key is `msg`, without a mixin, a log
 * formatter, a stream-write hook, a stream that wants metadata (multistream), or a serializer or
 * redaction on the line's keys. Otherwise null, and the line goes through pino.
 */
function fastLineWriter (logger: FastifyBaseLogger): FastLineWriter | null {
  const s = pino.symbols as unknown as Record<string, symbol>
  const l = logger as unknown as Record<symbol, unknown>
  const stream = l[s.streamSym!] as { write?: (line: string) => void; [k: symbol]: unknown } | undefined
  const cache = l[s.lsCacheSym!] as Record<number, string> | undefined
  const time = l[s.timeSym!] as (() => string) | undefined
  const chindings = l[s.chindingsSym!]
  const end = l[s.endSym!]
  const serializers = (l[s.serializersSym!] ?? {}) as Record<string, unknown>
  const stringifiers = (l[s.stringifiersSym!] ?? {}) as Record<string | symbol, unknown>
  const formatters = (l[s.formattersSym!] ?? {}) as { log?: unknown }
  const hooks = (l[s.hooksSym!] ?? {}) as { streamWrite?: unknown }
  if (stream === undefined || typeof stream.write !== 'function' || stream[Symbol.for('pino.metadata')] === true) return null
  if (typeof cache?.[30] !== 'string' || typeof time !== 'function' || typeof chindings !== 'string' || typeof end !== 'string') return null
  if (l[s.messageKeySym!] !== 'msg' || l[s.mixinSym!] !== undefined
    || formatters.log !== undefined || hooks.streamWrite !== undefined) return null
  if (LINE_KEYS.some((key) => serializers[key] !== undefined || stringifiers[key] !== undefined)
    || stringifiers[s.wildcardFirstSym!] !== undefined) return null
  const head = cache[30]
  return {
    head: () => head + time.call(logger) + chindings,
    end,
    enabled: () => (logger as unknown as { isLevelEnabled (level: string): boolean }).isLevelEnabled('info'),
    write: (line) => { stream.write!(line) }
  }
}

const PLAIN = /^[\w .:/?=&%,;+@!$'()*~-]*$/

/** A JSON string: as is when nothing in it needs escaping (the usual id, method and path). */
function quoted (text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text)
}
