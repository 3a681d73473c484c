// Reading the rate-limit, pagination and lifecycle headers every response may carry.

/** `X-RateLimit-*` of a response: the window that binds first. `reset` is in Unix seconds. */
export interface RateLimitState { limit: number; remaining: number; reset: number }

export function rateLimitOf (headers: Headers): RateLimitState | null {
  const limit = integer(headers.get('x-ratelimit-limit'))
  const remaining = integer(headers.get('x-ratelimit-remaining'))
  const reset = integer(headers.get('x-ratelimit-reset'))
  return limit === null || remaining === null || reset === null ? null : { limit, remaining, reset }
}

/**
 * Seconds until the binding window resets, from the draft `RateLimit` field (`t` is relative),
 * so a client whose clock is off still waits the right time; null when it is absent.
 */
export function secondsToReset (headers: Headers, remaining: number): number | null {
  const field = headers.get('ratelimit')
  if (field === null) return null
  let best: number | null = null
  for (const item of field.split(',')) {
    const r = /;\s*r=(\d+)/.exec(item)
    const t = /;\s*t=(\d+)/.exec(item)
    if (r === null || t === null || Number(r[1]) !== remaining) continue
    best = Math.max(best ?? 0, Number(t[1]))
  }
  return best
}

/** The targets of a Link header by relation (RFC 8288), e.g. `next`, `successor-version`. */
export function linksOf (value: string | null): Map<string, string> {
  const links = new Map<string, string>()
  if (value === null) return links
  // Each parameter: spaces, a semicolon, then up to the next ; or , (spaces after the ; included).
  for (const match of value.matchAll(/<([^>]*)>((?:\s*;[^;,]+)*)/g)) {
    const rel = /;\s*rel="?([^";]+)"?/i.exec(match[2] ?? '')
    if (rel?.[1] === undefined) continue
    for (const name of rel[1].trim().split(/\s+/)) if (!links.has(name)) links.set(name, match[1] ?? '')
  }
  return links
}

/** RFC 9745 `Deprecation: @<unix seconds>`; also accepts an HTTP-date (older drafts). */
export function deprecationDate (value: string): Date | null {
  const epoch = /^@(-?\d+)$/.exec(value.trim())
  const date = epoch !== null ? new Date(Number(epoch[1]) * 1000) : new Date(value)
  return Number.isNaN(date.getTime()) ? null : date
}

function integer (value: string | null): number | null {
  if (value === null || !/^\s*-?\d+\s*$/.test(value)) return null
  return Number(value)
}
