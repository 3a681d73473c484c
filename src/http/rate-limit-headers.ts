// The rate-limit headers of a response (docs/product.md section 4, decision 10 of
// docs/architecture.md): X-RateLimit-*, RateLimit, RateLimit-Policy and, when refused,
// Retry-After. The one builder of them, used by the access hook and by the limiter's tests. The
// strings are made once per quota and once per second: the windows reset on whole seconds, so
// the seconds until each reset depend only on the current second.
import type { Decision, Quota } from '../ratelimit/limiter.ts'
import { bindingWindow, DAY_MS, MINUTE_MS } from '../ratelimit/limiter.ts'

/** Where headers are set: a Fastify reply, or anything with its header(name, value). */
export interface HeaderTarget { header (name: string, value: string): unknown }

interface QuotaStrings { minuteLimit: string; dayLimit: string; policy: string }
const quotaStrings = new WeakMap<Quota, QuotaStrings>()
let second = -1
let minuteT = 0
let dayT = 0
let minuteReset = ''
let dayReset = ''

// The last quota's strings: most requests in a row are of one plan (a WeakMap lookup costs more).
let lastQuota: Quota | null = null
let lastStrings: QuotaStrings | null = null

function stringsOf (quota: Quota): QuotaStrings {
  if (quota === lastQuota && lastStrings !== null) return lastStrings
  let strings = quotaStrings.get(quota)
  if (strings === undefined) {
    strings = {
      minuteLimit: String(quota.perMinute),
      dayLimit: String(quota.perDay),
      policy: `"minute";q=${quota.perMinute};w=${MINUTE_MS / 1000}, "day";q=${quota.perDay};w=${DAY_MS / 1000}`
    }
    quotaStrings.set(quota, strings)
  }
  lastQuota = quota
  lastStrings = strings
  return strings
}

/**
 * A count as text, made without V8's number-to-string cache: the cache allocates each string it
 * keeps in the old generation, and a count that changes with every request (the remaining
 * requests) left one dead string there per request, freed only by a full GC (docs/performance.md,
 * "Stalls and memory"). For an integer, infinite or not, the same text as String(n).
 */
function countText (n: number): string {
  return n.toFixed(0)
}

/** Sets X-RateLimit-*, RateLimit, RateLimit-Policy and, when refused, Retry-After. */
export function setRateLimitHeaders (reply: HeaderTarget, decision: Decision, quota: Quota, now: number): void {
  const s = Math.floor(now / 1000)
  if (s !== second) {
    second = s
    const minuteEnd = (Math.floor(now / MINUTE_MS) + 1) * (MINUTE_MS / 1000)
    const dayEnd = (Math.floor(now / DAY_MS) + 1) * (DAY_MS / 1000)
    minuteT = minuteEnd - s
    dayT = dayEnd - s
    minuteReset = String(minuteEnd)
    dayReset = String(dayEnd)
  }
  const strings = stringsOf(quota)
  const { minute, day } = decision
  const minuteBinds = bindingWindow(decision) === minute
  reply.header('x-ratelimit-limit', minuteBinds ? strings.minuteLimit : strings.dayLimit)
  const minuteRemaining = countText(minute.remaining)
  const dayRemaining = countText(day.remaining)
  reply.header('x-ratelimit-remaining', minuteBinds ? minuteRemaining : dayRemaining)
  reply.header('x-ratelimit-reset', minuteBinds ? minuteReset : dayReset)
  reply.header('ratelimit-policy', strings.policy)
  reply.header('ratelimit', `"minute";r=${minuteRemaining};t=${minuteT}, "day";r=${dayRemaining};t=${dayT}`)
  if (!decision.allowed) reply.header('retry-after', String(decision.retryAfterSeconds))
}
