// The access hook's rate-limit headers, built from cached strings, are exactly those the limiter's
// contract defines (ratelimit/limiter.ts rateLimitHeaders, decision 10).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyReply } from 'fastify'
import { setRateLimitHeaders } from '../../src/http/access.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { rateLimitHeaders, type Quota } from '../../src/ratelimit/limiter.ts'

test('setRateLimitHeaders sets exactly the headers of rateLimitHeaders, second after second, allowed, refused and banned', () => {
  let now = Date.UTC(2026, 10, 21, 23, 58, 57, 400)
  const limiter = createMemoryRateLimiter({ now: () => now })
  const quotas: Quota[] = [{ perMinute: 3, perDay: 5 }, { perMinute: 60, perDay: 1000 }, { perMinute: 2, perDay: 100 }]
  let compared = 0
  for (let i = 0; i < 400; i++) {
    const quota = quotas[i % quotas.length]!
    const decision = limiter.consume(`s${i % 5}`, quota)
    const set: Record<string, string> = {}
    const reply = { header (name: string, value: string) { set[name] = value; return reply } } as unknown as FastifyReply
    setRateLimitHeaders(reply, decision, quota, now)
    const expected = Object.fromEntries(Object.entries(rateLimitHeaders(decision, quota, now)).map(([k, v]) => [k.toLowerCase(), v]))
    assert.deepEqual(set, expected, `request ${i} at ${new Date(now).toISOString()}`)
    compared++
    now += 337 // crosses seconds, minutes and midnight
  }
  assert.equal(compared, 400)
})
