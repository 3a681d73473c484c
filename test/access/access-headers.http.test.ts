// The rate-limit headers, built from cached strings (src/http/rate-limit-headers.ts), are exactly
// those the limiter's contract defines (decision 10), computed here the plain way from the
// decision's own windows, second after second.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setRateLimitHeaders } from '../../src/http/rate-limit-headers.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { bindingWindow, type Decision, type Quota } from '../../src/ratelimit/limiter.ts'

/** The headers of decision 10, straight from the decision's windows: the oracle. */
function expectedHeaders (decision: Decision, quota: Quota, now: number): Record<string, string> {
  const { minute, day } = decision
  const binding = bindingWindow(decision)
  const until = (at: number): number => Math.max(0, Math.ceil((at - now) / 1000))
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(binding.limit),
    'x-ratelimit-remaining': String(binding.remaining),
    'x-ratelimit-reset': String(Math.ceil(binding.resetAt / 1000)),
    'ratelimit-policy': `"minute";q=${quota.perMinute};w=60, "day";q=${quota.perDay};w=86400`,
    ratelimit: `"minute";r=${minute.remaining};t=${until(minute.resetAt)}, "day";r=${day.remaining};t=${until(day.resetAt)}`
  }
  if (!decision.allowed) headers['retry-after'] = String(decision.retryAfterSeconds)
  return headers
}

test('setRateLimitHeaders sets exactly the headers of decision 10, second after second, allowed, refused and banned', () => {
  let now = Date.UTC(2026, 10, 21, 23, 58, 57, 400)
  const limiter = createMemoryRateLimiter({ now: () => now })
  const quotas: Quota[] = [{ perMinute: 3, perDay: 5 }, { perMinute: 60, perDay: 1000 }, { perMinute: 2, perDay: 100 }]
  let compared = 0
  for (let i = 0; i < 400; i++) {
    const quota = quotas[i % quotas.length]!
    const decision = limiter.consume(`s${i % 5}`, quota)
    const set: Record<string, string> = {}
    setRateLimitHeaders({ header (name, value) { set[name] = value } }, decision, quota, now)
    assert.deepEqual(set, expectedHeaders(decision, quota, now), `request ${i} at ${new Date(now).toISOString()}`)
    compared++
    now += 337 // crosses seconds, minutes and midnight
  }
  assert.equal(compared, 400)
})
