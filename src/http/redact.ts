// Secrets in URLs. Keys travel in headers only (docs/product.md section 3); a key sent in the
// query string is refused (http/access.ts), and whatever secret-looking value a URL carries is
// cut out of every URL that is logged.

/** Query parameters that carry an API key: a request that has one is refused with 400. */
export const KEY_PARAMETERS: ReadonlySet<string> = new Set([
  'api_key', 'apikey', 'api-key', 'key', 'x-api-key', 'access_token', 'token', 'auth', 'authorization', 'bearer'
])

/** Parameters whose value is never logged: the key parameters and other usual secret names. */
const SECRET_PARAMETER = /^(?:api[-_]?key|x-api-key|key|access[-_]?token|refresh[-_]?token|id[-_]?token|token|auth|authorization|bearer|password|passwd|pwd|secret|client[-_]?secret|signature|sig|session|sessionid)$/i

/**
 * Anything shaped like one of our keys (checksummed: base62; legacy: base64url), wherever it sits
 * in a URL (a path segment too), whatever its case.
 */
const KEY_TEXT = /psk_[A-Za-z0-9_-]+/gi
const KEY_PREFIX = /psk_/i
/** A part of a URL between delimiters: a percent-encoded key hides in one of these. */
const ENCODED_PART = /[^/?&=;]*%[^/?&=;]*/g

export const REDACTED = '[redacted]'

/** What a query parameter's name is, as a flag set: one of KEY_PARAMETERS, and a secret's name. */
const KEY_NAME = 1
const SECRET_NAME = 2

// The flags of the names seen, by the name as sent: clients send the same few names (`id`,
// `limit`, `cursor`…), and decoding and comparing each on every request took about 2% of a
// `GET /v1/pets?id=` (docs/performance.md). Bounded: at most NAMES_MAX names of at most
// NAME_MAX_LENGTH characters (longer ones are not kept), emptied when full, so a client inventing
// names only makes the lookups miss, as if there were no cache.
const NAMES = new Map<string, number>()
const NAMES_MAX = 256
const NAME_MAX_LENGTH = 64

/** How many names the cache holds (at most NAMES_MAX): for the test that it stays bounded. */
export function cachedNameCount (): number {
  return NAMES.size
}

function nameFlags (raw: string): number {
  let flags = NAMES.get(raw)
  if (flags === undefined) {
    const name = decodeName(raw)
    flags = (KEY_PARAMETERS.has(name) ? KEY_NAME : 0) | (SECRET_PARAMETER.test(name) ? SECRET_NAME : 0)
    if (raw.length <= NAME_MAX_LENGTH) {
      if (NAMES.size >= NAMES_MAX) NAMES.clear()
      NAMES.set(raw, flags)
    }
  }
  return flags
}

/**
 * Calls `visit` with the start and end of each parameter's name in the query starting at `at`,
 * and whether a value follows, until it answers true (then true). One pass over the query: each
 * `&` and `=` is found once (a name without `=` does not search the rest of the URL again).
 */
function someName (url: string, at: number, visit: (start: number, end: number, valued: boolean) => boolean): boolean {
  let equals = -2 // the next '=' at or after `at`; -1: none left
  while (at <= url.length) {
    let end = url.indexOf('&', at)
    if (end === -1) end = url.length
    if (equals !== -1 && equals < at) equals = url.indexOf('=', at)
    const valued = equals !== -1 && equals < end
    if (visit(at, valued ? equals : end, valued)) return true
    at = end + 1
  }
  return false
}

/**
 * The name of the first query parameter of `url` that carries a key, or null. Names are
 * compared decoded and case-folded, so `?API%5FKEY=` is caught too.
 */
export function keyParameterOf (url: string): string | null {
  const start = url.indexOf('?')
  if (start === -1) return null
  let found: string | null = null
  someName(url, start + 1, (from, to) => {
    const raw = url.slice(from, to)
    if ((nameFlags(raw) & KEY_NAME) === 0) return false
    found = decodeName(raw)
    return true
  })
  return found
}

/**
 * The URL as it may be logged: the values of secret-looking query parameters, and any text
 * shaped like a key, replaced by [redacted]. Cheap when there is nothing to do.
 */
export function redactUrl (url: string): string {
  const start = url.indexOf('?')
  let out = url
  if (start !== -1
    && someName(url, start + 1, (from, to, valued) => valued && (nameFlags(url.slice(from, to)) & SECRET_NAME) !== 0)) {
    const pairs = url.slice(start + 1).split('&')
    for (let i = 0; i < pairs.length; i++) {
      const pair = pairs[i]!
      const end = pair.indexOf('=')
      if (end !== -1 && (nameFlags(pair.slice(0, end)) & SECRET_NAME) !== 0) pairs[i] = `${pair.slice(0, end)}=${REDACTED}`
    }
    out = `${url.slice(0, start)}?${pairs.join('&')}`
  }
  if (KEY_PREFIX.test(out)) out = out.replace(KEY_TEXT, REDACTED)
  // A key spelt with escapes (`%70sk_…`, `psk%5F…`, or encoded again and again) is a key too: a
  // part of the URL that decodes to one is cut out whole.
  return out.includes('%')
    ? out.replace(ENCODED_PART, (part) => KEY_PREFIX.test(percentDecoded(part)) ? REDACTED : part)
    : out
}

/** A run of characters an API key may be spelt with, percent-escaped or not, holding at least one escape. */
const ENCODED_WORD = /[A-Za-z0-9_.~+%-]*%[A-Za-z0-9_.~+%-]*/g

/**
 * Any text as it may be logged or echoed (an error's message, a log line's reason, a field name
 * in a 400): anything shaped like a key, spelt plainly or percent-escaped at any depth, replaced
 * by [redacted]. Only the characters a key is made of (and escapes) are cut, so the text around
 * it (JSON, quotes, a sentence) stays as it was. Cheap when there is nothing to do.
 */
export function redactText (text: string): string {
  let out = text
  if (KEY_PREFIX.test(out)) out = out.replace(KEY_TEXT, REDACTED)
  return out.includes('%')
    ? out.replace(ENCODED_WORD, (word) => KEY_PREFIX.test(percentDecoded(word)) ? REDACTED : word)
    : out
}

/**
 * `text` with its percent escapes decoded, byte by byte (enough to find ASCII key text, and never
 * an error on a malformed escape), and decoded again until nothing is left to decode: however
 * many times a key was encoded, it comes out. In one pass over the text: each escape is decoded
 * as soon as its last digit arrives, and what that gives may complete an escape before it
 * (`%2570` gives `%70`, then `p`). Each decoding shortens the text, so the work is bounded by
 * its length (not by the depth: `%252525…` once took a pass per level).
 */
function percentDecoded (text: string): string {
  const out: number[] = []
  for (let i = 0; i < text.length; i++) {
    out.push(text.charCodeAt(i))
    let n = out.length
    while (n >= 3 && out[n - 3] === 37 && isHex(out[n - 2]!) && isHex(out[n - 1]!)) {
      const code = Number.parseInt(String.fromCharCode(out[n - 2]!, out[n - 1]!), 16)
      out.length = n - 3
      out.push(code)
      n = out.length
    }
  }
  let decoded = ''
  for (let i = 0; i < out.length; i += 4096) decoded += String.fromCharCode(...out.slice(i, i + 4096))
  return decoded
}

const isHex = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102)

function decodeName (raw: string): string {
  let name = raw.replace(/\+/g, ' ')
  if (name.includes('%')) {
    try {
      name = decodeURIComponent(name)
    } catch {
      // A malformed escape: compare the name as sent.
    }
  }
  return name.trim().toLowerCase()
}

/** What a log line says about a request (pino's `req`): Fastify's own fields, the URL redacted. */
export function requestLogView (req: {
  method: string
  url: string
  host?: string
  ip?: string
  headers?: Record<string, unknown>
  socket?: { remotePort?: number } | null
}): Record<string, unknown> {
  return {
    method: req.method,
    url: redactUrl(req.url),
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort
  }
}

/**
 * An error as a log line may show it (pino's `err`): its type, message, stack, code and cause,
 * with every text redacted (redactText). An error's message can quote what a client sent (a
 * field name, a value, a URL), and a key among it.
 */
export function errorLogView (error: unknown): unknown {
  if (!(error instanceof Error)) return typeof error === 'string' ? redactText(error) : error
  const view: Record<string, unknown> = { type: error.name, message: redactText(error.message) }
  if (typeof error.stack === 'string') view.stack = redactText(error.stack)
  const code = (error as { code?: unknown }).code
  if (code !== undefined) view.code = typeof code === 'string' ? redactText(code) : code
  if (error.cause !== undefined) view.cause = errorLogView(error.cause)
  return view
}

/**
 * What a logging call passes (a message, an object of fields), with every text redacted: strings,
 * the fields' strings, and errors (errorLogView). One level of fields deep, as our lines are.
 */
export function logArgumentView (value: unknown): unknown {
  if (typeof value === 'string') return redactText(value)
  if (value instanceof Error) return errorLogView(value)
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  const view: Record<string, unknown> = {}
  for (const [name, field] of Object.entries(value)) {
    view[name] = typeof field === 'string' ? redactText(field) : field instanceof Error ? errorLogView(field) : field
  }
  return view
}
