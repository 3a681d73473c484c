// The rate-limit headers the one builder (src/http/rate-limit-headers.ts) sets for a decision,
// collected into a record under the names as docs/product.md spells them, for the limiter's tests.
import { setRateLimitHeaders } from '../../src/http/rate-limit-headers.ts'
import type { Decision, Quota } from '../../src/ratelimit/limiter.ts'

const SPELLING: Record<string, string> = {
  'x-ratelimit-limit': 'X-RateLimit-Limit',
  'x-ratelimit-remaining': 'X-RateLimit-Remaining',
  'x-ratelimit-reset': 'X-RateLimit-Reset',
  'ratelimit-policy': 'RateLimit-Policy',
  ratelimit: 'RateLimit',
  'retry-after': 'Retry-After'
}

export function rateLimitHeaders (decision: Decision, quota: Quota, now: number): Record<string, string> {
  const headers: Record<string, string> = {}
  setRateLimitHeaders({ header (name, value) { headers[SPELLING[name] ?? name] = value } }, decision, quota, now)
  return headers
}
