import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  banDurationMs,
  bindingWindow,
  buildDecision,
  checkQuota,
  nextBanLevel
} from '../../src/ratelimit/limiter.ts'
import type { Decision } from '../../src/ratelimit/limiter.ts'
import { getHeapSpaceStatistics } from 'node:v8'
import { setRateLimitHeaders } from '../../src/http/rate-limit-headers.ts'
import { rateLimitHeaders } from '../helpers/rate-limit-headers.ts'

function decision (minute: [number, number, number], day: [number, number, number]): Decision {
  return {
    allowed: true,
    code: null,
    minute: { limit: minute[0], remaining: minute[1], resetAt: minute[2] },
    day: { limit: day[0], remaining: day[1], resetAt: day[2] },
    retryAfterSeconds: 0,
    ban: null,
    banStarted: false
  }
}

void test('bindingWindow picks the window with fewer requests left, and the later reset on a tie', () => {
  assert.equal(bindingWindow(decision([60, 5, 60_000], [1000, 6, 86_400_000])).limit, 60)
  assert.equal(bindingWindow(decision([60, 7, 60_000], [1000, 6, 86_400_000])).limit, 1000)
  assert.equal(bindingWindow(decision([60, 0, 60_000], [1000, 0, 86_400_000])).limit, 1000)
  // Equal reset instants (the last minute of a day): either is right, the day is chosen.
  assert.equal(bindingWindow(decision([60, 3, 86_400_000], [1000, 3, 86_400_000])).limit, 1000)
})

void test('ban durations double from 15 minutes and stop at 24 hours', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7, 8, 9].map((l) => banDurationMs(l) / 60_000),
    [15, 30, 60, 120, 240, 480, 960, 1440, 1440]
  )
  assert.equal(nextBanLevel(0, 0, 1_000), 1)
  assert.equal(nextBanLevel(1, 3, 1 + 86_400_000 - 1), 4)
  assert.equal(nextBanLevel(1, 3, 1 + 86_400_000), 1)
  assert.equal(nextBanLevel(1, 8, 2), 8)
})

void test('rateLimitHeaders: a ban\'s Retry-After runs until the ban ends, and t is rounded up', () => {
  const now = 1_000_000_000_500
  const d = buildDecision(
    { outcome: 'banned', minuteCount: 60, dayCount: 300, banStartedAt: now - 60_000, banUntil: now + 840_000, banLevel: 1 },
    { perMinute: 60, perDay: 1000 },
    now
  )
  assert.deepEqual(rateLimitHeaders(d, { perMinute: 60, perDay: 1000 }, now), {
    'X-RateLimit-Limit': '60',
    'X-RateLimit-Remaining': '0',
    'X-RateLimit-Reset': '1000000020',
    'RateLimit-Policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
    RateLimit: '"minute";r=0;t=20, "day";r=700;t=80000',
    'Retry-After': '840'
  })
})

void test('buildDecision: the request that would start a ban is refused with that ban\'s Retry-After but no ban yet', () => {
  const now = 1_000_000_000_500
  assert.deepEqual(buildDecision(
    { outcome: 'would_ban', minuteCount: 5, dayCount: 5, banStartedAt: now, banUntil: now + 1_800_000, banLevel: 2 },
    { perMinute: 5, perDay: 10 },
    now
  ), {
    allowed: false,
    code: 'api_key_banned',
    minute: { limit: 5, remaining: 0, resetAt: 1_000_000_020_000 },
    day: { limit: 10, remaining: 5, resetAt: 1_000_080_000_000 },
    retryAfterSeconds: 1800,
    ban: null,
    banStarted: false
  })
})

void test('quotas that are not whole numbers >= 0 are refused before they reach a store', () => {
  assert.throws(() => checkQuota({ perMinute: 1.5, perDay: 10 }), RangeError)
  assert.throws(() => checkQuota({ perMinute: -1, perDay: 10 }), RangeError)
  assert.throws(() => checkQuota({ perMinute: 1, perDay: Number.NaN }), RangeError)
  checkQuota({ perMinute: 0, perDay: 0 })
})

void test('rateLimitHeaders: counts are written as String(n) writes them, without a string left in the old generation per request', () => {
  const now = 1_000_000_000_500
  const quota = { perMinute: 1_000_000_000, perDay: 2 ** 40 }
  for (const [minute, day] of [[0, 0], [7, 12], [999_999_998, 2 ** 40 - 1], [2 ** 31, Infinity]] as const) {
    const headers = rateLimitHeaders(
      decision([quota.perMinute, minute, 60_000], [quota.perDay, day, 86_400_000]),
      quota,
      now
    )
    assert.equal(headers['X-RateLimit-Remaining'], String(minute))
    assert.equal(headers.RateLimit, `"minute";r=${String(minute)};t=20, "day";r=${String(day)};t=80000`)
  }
  // V8's number-to-string cache puts each string it keeps in the old generation: a count that
  // changes with every request then left garbage only a full GC frees (docs/performance.md).
  const target = { header () {} }
  const oldSpace = (): number => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size
  const perCall: number[] = []
  // The first chunks compile the code (which lives in the old generation too); the median is the steady state.
  for (let chunk = 0; chunk < 7; chunk++) {
    const before = oldSpace()
    for (let i = 0; i < 10_000; i++) {
      const remaining = 900_000_000 - chunk * 10_000 - i
      setRateLimitHeaders(
        target,
        decision([quota.perMinute, remaining, 60_000], [quota.perDay, remaining + 5, 86_400_000]),
        quota,
        now
      )
    }
    perCall.push((oldSpace() - before) / 10_000)
  }
  const median = [...perCall].sort((a, b) => a - b)[3]!
  assert.ok(median < 16, `${median.toFixed(1)} bytes of old generation a call (${perCall.map((b) => b.toFixed(1)).join(', ')})`)
})
