// One delivery attempt: a POST to the address url-guard.ts checked, and nowhere else. The Host
// header, TLS SNI and the certificate check use the URL's host name; only the connection is
// pinned, through a lookup that answers the checked address whatever DNS says now. What was sent
// and what the endpoint answered come back with the outcome, for the attempt's record (issue 50):
// the answer is untrusted, so only a bounded part of it is kept, as text, never interpreted.
import type { Agent, IncomingMessage, RequestOptions } from 'node:http'
import { isIP, type LookupFunction, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { bareHostname, type ResolvedAddress } from './url-guard.ts'

// The CommonJS exports of node:http and node:https: an ES import evaluates every export, and
// node:http's WebSocket getters load undici on every start (transport/connections.ts says the same).
const { request: httpRequest, Agent: HttpAgent } = process.getBuiltinModule('node:http')
const { request: httpsRequest, Agent: HttpsAgent } = process.getBuiltinModule('node:https')

/**
 * Kept-alive connections (issue 51 item 2): one agent per endpoint origin and address the check
 * approved, so a pooled socket is only ever reused for the same origin and the same address (the
 * agent's own pool key has no address: two addresses of one name would share it). At most
 * MAX_AGENTS agents, the least recently used dropped past it; an idle connection is closed after
 * IDLE_SOCKET_MS, below the 5 s after which Node's own servers close theirs.
 */
export const MAX_AGENTS = 256
export const IDLE_SOCKET_MS = 4000
const agents = new Map<string, Agent>()

function agentFor (url: URL, address: ResolvedAddress): Agent {
  const key = `${url.protocol}//${url.host} ${address.address}`
  let agent = agents.get(key)
  if (agent !== undefined) {
    // The most recently used last, so the first is the one to drop.
    agents.delete(key)
    agents.set(key, agent)
    return agent
  }
  const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, maxFreeSockets: 16 }
  agent = url.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options)
  agents.set(key, agent)
  if (agents.size > MAX_AGENTS) {
    const [oldest, dropped] = agents.entries().next().value!
    agents.delete(oldest)
    // Its idle connections go now; one in use is closed when its attempt ends (an agent's 'free').
    for (const sockets of Object.values(dropped.freeSockets)) for (const socket of sockets ?? []) socket.destroy()
    dropped.on('free', (socket: Socket) => { socket.destroy() })
  }
  return agent
}

/** The most of an answer's body that is read before the connection is closed (issue 31: 64 KiB). */
export const MAX_RESPONSE_BYTES = 65_536
/**
 * The most of an answer's body kept with its attempt (issue 50: the first 4 KiB), in bytes of
 * UTF-8 as stored. A failing answer is read no further than this; a 2xx on, to MAX_RESPONSE_BYTES.
 */
export const RESPONSE_BODY_KEPT_BYTES = 4096
/** At most this many of an answer's headers are kept, each name and value cut to the lengths below. */
export const MAX_KEPT_HEADERS = 64
const MAX_HEADER_NAME = 256
const MAX_HEADER_VALUE = 1024
/**
 * What an attempt sent and got (its request and response) is kept this long, then pruned
 * (jobs/attempt-prune.ts); the attempt's line stays until its event goes (EVENT_RETENTION_DAYS).
 */
export const ATTEMPT_DETAILS_KEPT_DAYS = 7
export const ATTEMPT_DETAILS_KEPT_MS = ATTEMPT_DETAILS_KEPT_DAYS * 24 * 3_600_000
/** Who is calling, for the receiver's logs and firewalls. */
export const USER_AGENT = 'Petstore-Webhooks/1.0'

/** A header as sent or received: name and value, in their order (a name can come twice). */
export type HeaderPair = [name: string, value: string]

export interface AttemptInput {
  url: URL
  /** One of the addresses checkWebhookUrl returned for this URL. */
  address: ResolvedAddress
  /**
   * The webhook-* headers (and traceparent, when tracing); content-type, content-length and
   * user-agent are set here.
   */
  headers: Readonly<Record<string, string>>
  body: string
  /** The whole attempt (connect, headers and body of the answer) must end within this. */
  timeoutMs: number
  maxResponseBytes?: number
  /** Certificate authorities trusted instead of the system's for this attempt (tests' self-signed receivers). */
  tls?: { ca?: string | Buffer }
}

/** What the endpoint answered, as kept: bounded, and text whatever the bytes were. */
export interface AttemptResponse {
  status: number
  /** At most MAX_KEPT_HEADERS, as received (names in their case), each cut to a bounded length. */
  headers: HeaderPair[]
  /** The first RESPONSE_BODY_KEPT_BYTES of the body as UTF-8 text (invalid bytes and NUL replaced by U+FFFD). */
  body: string
  /** Whether the body went on past what is kept, or was cut (the deadline, a reset) before its end. */
  truncated: boolean
}

export interface AttemptResult {
  outcome: 'succeeded' | 'failed'
  /** The answer's status, when one came. */
  status?: number
  /** Why it failed, in a few words fit for the deliveries list: never a stack, a header or a body. */
  error?: string
  /** A failure without an answer: the network error's code (ECONNREFUSED…) or `timeout`, for the attempt's span. */
  errorType?: string
  durationMs: number
  /** The headers sent, when a request was made (absent when the attempt was refused before connecting). */
  requestHeaders?: HeaderPair[]
  /** The answer, when its status line and headers came. */
  response?: AttemptResponse
}

// Short words for the errors a receiver's side can cause. Anything else shows its code only:
// error messages can quote certificates, host names and addresses.
const ERROR_TEXT: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed while sending',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS: self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS: self-signed certificate in chain',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS: unknown certificate authority',
  CERT_HAS_EXPIRED: 'TLS: certificate expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS: certificate does not match the host name'
}

/** A network error's code when it is one (an upper-case word), else undefined. */
function errorCode (error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code) ? code : undefined
}

function errorText (error: unknown): string {
  const code = errorCode(error)
  if (code === undefined) return 'network error'
  return ERROR_TEXT[code] ?? (code.startsWith('HPE_') ? `invalid HTTP answer (${code})` : `network error (${code})`)
}

/** A lookup that answers the checked address for any name, in the shape the caller asked for. */
function pinnedLookup ({ address, family }: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all === true) {
      (callback as (error: null, addresses: ResolvedAddress[]) => void)(null, [{ address, family }])
    } else {
      callback(null, address, family)
    }
  }
}

/**
 * POSTs the body to the URL through the given address; 2xx is success, anything else (a redirect
 * included, never followed) a failure.
 */
export async function attemptDelivery (input: AttemptInput): Promise<AttemptResult> {
  const refusal = precondition(input)
  if (refusal !== null) return { outcome: 'failed', error: refusal, durationMs: 0 }
  return await send(input)
}

function precondition ({ url, address }: AttemptInput): string | null {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'unsupported scheme'
  // A literal host is connected to as written, without a lookup: it must be the checked address.
  const host = bareHostname(url)
  if (isIP(host) !== 0 && host !== address.address) return 'address does not match the URL'
  return null
}

/** The headers of the POST, in the order they are sent. */
export function requestHeaders (headers: Readonly<Record<string, string>>, body: Buffer): HeaderPair[] {
  return [
    ...Object.entries(headers),
    ['content-type', 'application/json'],
    ['content-length', String(body.length)],
    ['user-agent', USER_AGENT]
  ]
}

// Control characters (tab aside) and NUL in a receiver's text: PostgreSQL's text holds no NUL, and
// no reader should meet a terminal escape.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g

/** At most `max` characters of `text`, controls replaced: a receiver's header name or value. */
function keptText (text: string, max: number): string {
  return (text.length > max ? text.slice(0, max) : text).replace(CONTROLS, '\ufffd')
}

/** The answer's headers as kept: the first MAX_KEPT_HEADERS, each bounded. */
function keptHeaders (raw: readonly string[]): HeaderPair[] {
  const pairs: HeaderPair[] = []
  for (let i = 0; i + 1 < raw.length && pairs.length < MAX_KEPT_HEADERS; i += 2) {
    pairs.push([keptText(raw[i]!, MAX_HEADER_NAME), keptText(raw[i + 1]!, MAX_HEADER_VALUE)])
  }
  return pairs
}

/**
 * The first bytes of a body as text of at most RESPONSE_BODY_KEPT_BYTES of UTF-8: invalid bytes
 * become U+FFFD (which takes 3 bytes), NUL too, and a character cut at the end is left out.
 */
export function keptBody (bytes: Buffer, more: boolean): { body: string; truncated: boolean } {
  let truncated = more || bytes.length > RESPONSE_BODY_KEPT_BYTES
  const head = bytes.subarray(0, RESPONSE_BODY_KEPT_BYTES)
  // stream: true leaves out an incomplete character at the end (the cut, when there is one).
  let body = new TextDecoder('utf-8').decode(head, { stream: truncated }).replaceAll('\u0000', '\ufffd')
  if (Buffer.byteLength(body) > RESPONSE_BODY_KEPT_BYTES) {
    truncated = true
    body = new TextDecoder('utf-8').decode(Buffer.from(body).subarray(0, RESPONSE_BODY_KEPT_BYTES), { stream: true })
  }
  return { body, truncated }
}

/**
 * A kept-alive connection the receiver closed as this attempt reused it (its idle timeout met our
 * request on the wire): no answer came, so the attempt is made again at once, on a new connection,
 * once, rather than left to the retry schedule. Webhooks are at least once: should the receiver
 * have taken the first, the second carries the same `webhook-id`.
 */
const STALE_CONNECTION = new Set(['ECONNRESET', 'EPIPE'])

function send (input: AttemptInput, pooled = true): Promise<AttemptResult> {
  const started = performance.now()
  const limit = input.maxResponseBytes ?? MAX_RESPONSE_BYTES
  const body = Buffer.from(input.body)
  const sent = requestHeaders(input.headers, body)
  const options: RequestOptions = {
    method: 'POST',
    host: bareHostname(input.url),
    port: input.url.port === '' ? undefined : Number(input.url.port),
    path: input.url.pathname + input.url.search,
    headers: Object.fromEntries(sent),
    lookup: pinnedLookup(input.address),
    // A connection kept alive for this origin and this address, or a new one to the address (see
    // agentFor). With a test's own certificate authority, always a new one.
    agent: pooled && input.tls?.ca === undefined ? agentFor(input.url, input.address) : false
  }

  return new Promise((resolve) => {
    let status: number | undefined
    let headers: HeaderPair[] = []
    // The answer's first bytes (at most RESPONSE_BODY_KEPT_BYTES + 1: one more says it went on).
    const kept: Buffer[] = []
    let keptBytes = 0
    let ended = false
    let done = false
    const finish = (outcome: AttemptResult['outcome'], error?: string, errorType?: string): void => {
      if (done) return
      done = true
      clearTimeout(deadline)
      // Nothing more is read: a receiver that streams forever or answers slowly cannot hold us. An
      // answer read to its end leaves the connection to its agent, for the endpoint's next attempt.
      if (!ended) req.destroy()
      const durationMs = Math.round(performance.now() - started)
      const result: AttemptResult = { outcome, durationMs, requestHeaders: sent }
      if (status !== undefined) {
        result.status = status
        result.response = { status, headers, ...keptBody(Buffer.concat(kept), !ended) }
      }
      if (error !== undefined) result.error = error
      if (errorType !== undefined) result.errorType = errorType
      resolve(result)
    }

    const onResponse = (res: IncomingMessage): void => {
      status = res.statusCode ?? 0
      headers = keptHeaders(res.rawHeaders)
      const failure = status < 200 || status >= 300
        ? status >= 300 && status < 400 ? 'redirect not followed' : `HTTP ${status}`
        : null
      // A failing answer is read only for what is kept of it; a 2xx counts once its body has come
      // within the deadline too, or the first maxResponseBytes of it: success means the receiver
      // finished answering in time.
      const readLimit = failure === null ? limit : RESPONSE_BODY_KEPT_BYTES + 1
      const end = (): void => { if (failure === null) finish('succeeded'); else finish('failed', failure) }
      let read = 0
      res.on('data', (chunk: Buffer) => {
        if (keptBytes <= RESPONSE_BODY_KEPT_BYTES) {
          const part = chunk.subarray(0, RESPONSE_BODY_KEPT_BYTES + 1 - keptBytes)
          kept.push(part)
          keptBytes += part.length
        }
        read += chunk.length
        if (read >= readLimit) end()
      })
      res.on('end', () => { ended = true; end() })
      res.on('error', (err) => { if (failure === null) finish('failed', errorText(err), errorCode(err)); else end() })
      // Closed before its end without an error event: a 2xx cut short is no success; of a failing
      // answer, what came is what is kept.
      res.on('close', () => {
        if (failure === null && !ended) finish('failed', 'connection closed while answering')
        else end()
      })
      if (failure !== null) deadlineError = failure
    }

    // Past the deadline a failing answer still fails for its status (its body is cut there);
    // anything else fails for the time.
    let deadlineError: string | null = null
    const req = input.url.protocol === 'https:'
      ? httpsRequest({ ...options, ...(input.tls?.ca === undefined ? {} : { ca: input.tls.ca }) }, onResponse)
      : httpRequest(options, onResponse)
    const deadline = setTimeout(() => {
      if (deadlineError !== null) finish('failed', deadlineError)
      else finish('failed', `timed out after ${input.timeoutMs} ms`, 'timeout')
    }, input.timeoutMs)
    deadline.unref()
    req.on('error', (err) => {
      if (pooled && !done && status === undefined && req.reusedSocket && STALE_CONNECTION.has(errorCode(err) ?? '')) {
        done = true
        clearTimeout(deadline)
        resolve(send(input, false))
        return
      }
      // A failing answer cut short (a reset mid-body reaches the request before the response)
      // fails for its status, as when it is closed: the deliveries list says `HTTP 500`.
      if (deadlineError !== null) finish('failed', deadlineError)
      else finish('failed', errorText(err), errorCode(err))
    })
    req.end(body)
  })
}
