// Secrets in URLs. Keys travel in headers only (docs/product.md section 3); a key sent in the
// query string is refused (http/access.ts), and whatever secret-looking value a URL carries is
// cut out of every URL that is logged.

/** Query parameters that carry an API key: a request that has one is refused with 400. */
export const KEY_PARAMETERS: ReadonlySet<string> = new Set([
  'api_key', 'apikey', 'api-key', 'key', 'x-api-key', 'access_token', 'token', 'auth', 'authorization', 'bearer'
])

/** Parameters whose value is never logged: the key parameters and other usual secret names. */
const SECRET_PARAMETER = /^(?:api[-_]?key|x-api-key|key|access[-_]?token|refresh[-_]?token|id[-_]?token|token|auth|authorization|bearer|password|passwd|pwd|secret|client[-_]?secret|signature|sig|session|sessionid)$/i

/** Anything shaped like one of our keys, wherever it sits in a URL (a path segment too), whatever its case. */
const KEY_TEXT = /psk_[A-Za-z0-9_-]+/gi
const KEY_PREFIX = /psk_/i
/** A part of a URL between delimiters: a percent-encoded key hides in one of these. */
const ENCODED_PART = /[^/?&=;]*%[^/?&=;]*/g

export const REDACTED = '[redacted]'

/**
 * The name of the first query parameter of `url` that carries a key, or null. Names are
 * compared decoded and case-folded, so `?API%5FKEY=` is caught too.
 */
export function keyParameterOf (url: string): string | null {
  const start = url.indexOf('?')
  if (start === -1) return null
  for (const pair of url.slice(start + 1).split('&')) {
    const end = pair.indexOf('=')
    const name = decodeName(end === -1 ? pair : pair.slice(0, end))
    if (KEY_PARAMETERS.has(name)) return name
  }
  return null
}

/**
 * The URL as it may be logged: the values of secret-looking query parameters, and any text
 * shaped like a key, replaced by [redacted]. Cheap when there is nothing to do.
 */
export function redactUrl (url: string): string {
  const start = url.indexOf('?')
  let out = url
  if (start !== -1) {
    const pairs = url.slice(start + 1).split('&')
    let changed = false
    for (let i = 0; i < pairs.length; i++) {
      const pair = pairs[i]!
      const end = pair.indexOf('=')
      if (end === -1) continue
      if (SECRET_PARAMETER.test(decodeName(pair.slice(0, end)))) {
        pairs[i] = `${pair.slice(0, end)}=${REDACTED}`
        changed = true
      }
    }
    if (changed) out = `${url.slice(0, start)}?${pairs.join('&')}`
  }
  if (KEY_PREFIX.test(out)) out = out.replace(KEY_TEXT, REDACTED)
  // A key spelt with escapes (`%70sk_…`, `psk%5F…`, or encoded twice) is a key too: a part of the
  // URL that decodes to one is cut out whole.
  return out.includes('%') ? out.replace(ENCODED_PART, (part) => KEY_PREFIX.test(percentDecoded(part)) ? REDACTED : part) : out
}

/**
 * `text` with its percent escapes decoded, byte by byte (enough to find ASCII key text, and never
 * an error on a malformed escape), repeated while anything is left to decode (up to 4 times).
 */
function percentDecoded (text: string): string {
  let decoded = text
  for (let i = 0; i < 4 && decoded.includes('%'); i++) {
    const next = decoded.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    if (next === decoded) break
    decoded = next
  }
  return decoded
}

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
export function requestLogView (req: { method: string; url: string; host?: string; ip?: string; headers?: Record<string, unknown>; socket?: { remotePort?: number } | null }): Record<string, unknown> {
  return {
    method: req.method,
    url: redactUrl(req.url),
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort
  }
}
