// One delivery attempt: a POST to the address url-guard.ts checked, and nowhere else. The Host
// header, TLS SNI and the certificate check use the URL's host name; only the connection is
// pinned, through a lookup that answers the checked address whatever DNS says now.
import type { IncomingMessage, RequestOptions } from 'node:http'
import { isIP, type LookupFunction } from 'node:net'
import { performance } from 'node:perf_hooks'
import { bareHostname, type ResolvedAddress } from './url-guard.ts'

// The CommonJS exports of node:http and node:https: an ES import evaluates every export, and
// node:http's WebSocket getters load undici on every start (transport/connections.ts says the same).
const { request: httpRequest } = process.getBuiltinModule('node:http')
const { request: httpsRequest } = process.getBuiltinModule('node:https')

/** The most of an answer's body that is read before the connection is closed (issue 31: 64 KiB). */
export const MAX_RESPONSE_BYTES = 65_536

export interface AttemptInput {
  url: URL
  /** One of the addresses checkWebhookUrl returned for this URL. */
  address: ResolvedAddress
  /** The webhook-* headers (and traceparent, when tracing); content-type and content-length are set here. */
  headers: Readonly<Record<string, string>>
  body: string
  /** The whole attempt (connect, headers and body of the answer) must end within this. */
  timeoutMs: number
  maxResponseBytes?: number
  /** Certificate authorities trusted instead of the system's for this attempt (tests' self-signed receivers). */
  tls?: { ca?: string | Buffer }
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

function send (input: AttemptInput): Promise<AttemptResult> {
  const started = performance.now()
  const limit = input.maxResponseBytes ?? MAX_RESPONSE_BYTES
  const body = Buffer.from(input.body)
  const options: RequestOptions = {
    method: 'POST',
    host: bareHostname(input.url),
    port: input.url.port === '' ? undefined : Number(input.url.port),
    path: input.url.pathname + input.url.search,
    headers: { ...input.headers, 'content-type': 'application/json', 'content-length': String(body.length) },
    lookup: pinnedLookup(input.address),
    // A fresh connection per attempt: a pooled socket could have been opened to another address.
    agent: false
  }

  return new Promise((resolve) => {
    let status: number | undefined
    let done = false
    const finish = (outcome: AttemptResult['outcome'], error?: string, errorType?: string): void => {
      if (done) return
      done = true
      clearTimeout(deadline)
      // Nothing more is read: a receiver that streams forever or answers slowly cannot hold us.
      req.destroy()
      const result: AttemptResult = { outcome, durationMs: Math.round(performance.now() - started) }
      if (status !== undefined) result.status = status
      if (error !== undefined) result.error = error
      if (errorType !== undefined) result.errorType = errorType
      resolve(result)
    }

    const onResponse = (res: IncomingMessage): void => {
      status = res.statusCode ?? 0
      if (status < 200 || status >= 300) {
        finish('failed', status >= 300 && status < 400 ? 'redirect not followed' : `HTTP ${status}`)
        return
      }
      // A 2xx counts once its body has come within the deadline too, or the first
      // maxResponseBytes of it: success means the receiver finished answering in time.
      let read = 0
      res.on('data', (chunk: Buffer) => {
        read += chunk.length
        if (read >= limit) finish('succeeded')
      })
      res.on('end', () => { finish('succeeded') })
      res.on('error', (err) => { finish('failed', errorText(err), errorCode(err)) })
    }

    const req = input.url.protocol === 'https:'
      ? httpsRequest({ ...options, ...(input.tls?.ca === undefined ? {} : { ca: input.tls.ca }) }, onResponse)
      : httpRequest(options, onResponse)
    const deadline = setTimeout(() => { finish('failed', `timed out after ${input.timeoutMs} ms`, 'timeout') }, input.timeoutMs)
    deadline.unref()
    req.on('error', (err) => { finish('failed', errorText(err), errorCode(err)) })
    req.end(body)
  })
}
