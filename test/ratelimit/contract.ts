// The behaviour every rate limiter back end must show (docs/product.md section 4 and the decisions in
// src/ratelimit/limiter.ts). Run by memory.test.ts, redis.test.ts and fallback.test.ts.
// Expected values are written out as literals, not recomputed with the code under test.
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { BAN_REASON } from '../../src/ratelimit/limiter.ts'
import { rateLimitHeaders } from '../helpers/rate-limit-headers.ts'
import type { Decision, Quota, RateLimiter } from '../../src/ratelimit/limiter.ts'

export interface LimiterFixture {
  limiter: RateLimiter
  cleanup: () => Promise<void>
}

export type MakeLimiter = (now: () => number) => Promise<LimiterFixture>

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
/** Saturday 2026-11-21 12:00:30 UTC: 30 s into a minute, 12 h into a UTC day. */
export const START = Date.UTC(2026, 10, 21, 12, 0, 30)
/** 2026-11-21 12:01:00 UTC, when START's minute window resets. */
export const MINUTE_END = Date.UTC(2026, 10, 21, 12, 1, 0)
/** 2026-11-22 00:00:00 UTC, when START's day window resets. */
export const DAY_END = Date.UTC(2026, 10, 22)

export const PLANS: { plan: string; quota: Quota }[] = [
  { plan: 'free', quota: { perMinute: 60, perDay: 1000 } },
  { plan: 'pro', quota: { perMinute: 300, perDay: 10_000 } },
  { plan: 'business', quota: { perMinute: 1000, perDay: 100_000 } },
  { plan: 'enterprise (custom quota)', quota: { perMinute: 1500, perDay: 250_000 } }
]
const FREE = { perMinute: 60, perDay: 1000 }

interface Clock {
  t: number
}

async function open (ctx: TestContext, makeLimiter: MakeLimiter): Promise<{ clock: Clock; limiter: RateLimiter }> {
  const clock: Clock = { t: START }
  const { limiter, cleanup } = await makeLimiter(() => clock.t)
  ctx.after(async () => {
    await limiter.close()
    await cleanup()
  })
  return { clock, limiter }
}

async function consumeN (limiter: RateLimiter, subject: string, quota: Quota, n: number): Promise<Decision[]> {
  const out: Decision[] = []
  for (let i = 0; i < n; i++) out.push(await limiter.consume(subject, quota))
  return out
}

/** Consumes until a ban starts; the window must be one that refuses after a few requests. */
async function provokeBan (limiter: RateLimiter, subject: string, quota: Quota): Promise<Decision> {
  for (let i = 0; i < 200; i++) {
    const d = await limiter.consume(subject, quota)
    if (d.banStarted) return d
  }
  return assert.fail('no ban started after 200 requests')
}

function codes (decisions: Decision[]): string[] {
  return decisions.map((d) => d.code ?? 'allowed')
}

function repeat<T> (value: T, n: number): T[] {
  return Array.from({ length: n }, () => value)
}

export function runRateLimiterContract (name: string, makeLimiter: MakeLimiter): void {
  void describe(`${name}: rate limiter contract`, () => {
    void describe('quota windows', () => {
      for (const { plan, quota } of PLANS) {
        void test(`${plan} (${quota.perMinute}/min) allows exactly ${quota.perMinute} requests in a minute, then answers rate_limited with Retry-After 30`, async (ctx) => {
          const { limiter } = await open(ctx, makeLimiter)
          for (let i = 1; i <= quota.perMinute; i++) {
            const d = await limiter.consume('key:1', quota)
            if (!d.allowed || d.minute.remaining !== quota.perMinute - i || d.day.remaining !== quota.perDay - i) {
              assert.fail(`request ${i}: allowed=${d.allowed} minute.remaining=${d.minute.remaining} day.remaining=${d.day.remaining}`)
            }
          }
          assert.deepEqual(await limiter.consume('key:1', quota), {
            allowed: false,
            code: 'rate_limited',
            minute: { limit: quota.perMinute, remaining: 0, resetAt: MINUTE_END },
            day: { limit: quota.perDay, remaining: quota.perDay - quota.perMinute, resetAt: DAY_END },
            retryAfterSeconds: 30,
            ban: null,
            banStarted: false
          })
        })
      }

      void test('the day window refuses while the minute window has room, and charges neither', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 5, perDay: 12 }
        assert.deepEqual(codes(await consumeN(limiter, 'k', quota, 5)), repeat('allowed', 5))
        clock.t = Date.UTC(2026, 10, 21, 12, 1, 5)
        assert.deepEqual(codes(await consumeN(limiter, 'k', quota, 5)), repeat('allowed', 5))
        clock.t = Date.UTC(2026, 10, 21, 12, 2, 5)
        assert.deepEqual(codes(await consumeN(limiter, 'k', quota, 2)), repeat('allowed', 2))
        const expected = {
          allowed: false,
          code: 'rate_limited',
          minute: { limit: 5, remaining: 3, resetAt: Date.UTC(2026, 10, 21, 12, 3, 0) },
          day: { limit: 12, remaining: 0, resetAt: DAY_END },
          retryAfterSeconds: 43_075, // 12:02:05 to midnight
          ban: null,
          banStarted: false
        }
        assert.deepEqual(await limiter.consume('k', quota), expected)
        // Still 3 left in the minute: the refused request took nothing from it.
        assert.deepEqual(await limiter.consume('k', quota), expected)
      })

      void test('a request refused by the minute window takes nothing from the day window', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 3, perDay: 10 }
        const allowed = await consumeN(limiter, 'k', quota, 3)
        assert.deepEqual(allowed.map((d) => [d.minute.remaining, d.day.remaining]), [[2, 9], [1, 8], [0, 7]])
        const refused = await consumeN(limiter, 'k', quota, 5)
        assert.deepEqual(refused.map((d) => [d.code, d.minute.remaining, d.day.remaining]), repeat(['rate_limited', 0, 7], 5))
        clock.t = MINUTE_END
        const next = await limiter.consume('k', quota)
        assert.deepEqual([next.allowed, next.minute.remaining, next.day.remaining], [true, 2, 6])
      })

      void test('the minute window resets at its boundary: refused 1 ms before (Retry-After 1), allowed at it', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 2, perDay: 100 }
        await consumeN(limiter, 'k', quota, 2)
        clock.t = MINUTE_END - 1
        const before = await limiter.consume('k', quota)
        assert.deepEqual(
          [before.code, before.retryAfterSeconds, before.minute],
          ['rate_limited', 1, { limit: 2, remaining: 0, resetAt: MINUTE_END }]
        )
        clock.t = MINUTE_END
        assert.deepEqual(await limiter.consume('k', quota), {
          allowed: true,
          code: null,
          minute: { limit: 2, remaining: 1, resetAt: MINUTE_END + MINUTE },
          day: { limit: 100, remaining: 97, resetAt: DAY_END },
          retryAfterSeconds: 0,
          ban: null,
          banStarted: false
        })
      })

      void test('the day window resets at UTC midnight', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 100, perDay: 3 }
        clock.t = Date.UTC(2026, 10, 21, 23, 59, 0)
        await consumeN(limiter, 'k', quota, 3)
        const refused = await limiter.consume('k', quota)
        assert.deepEqual(
          [refused.code, refused.retryAfterSeconds, refused.day],
          ['rate_limited', 60, { limit: 3, remaining: 0, resetAt: DAY_END }]
        )
        clock.t = DAY_END - 1
        assert.equal((await limiter.consume('k', quota)).retryAfterSeconds, 1)
        clock.t = DAY_END
        assert.deepEqual(await limiter.consume('k', quota), {
          allowed: true,
          code: null,
          minute: { limit: 100, remaining: 99, resetAt: DAY_END + MINUTE },
          day: { limit: 3, remaining: 2, resetAt: Date.UTC(2026, 10, 23) },
          retryAfterSeconds: 0,
          ban: null,
          banStarted: false
        })
      })

      void test('Retry-After is rounded up to whole seconds and waits for the later window when both are exhausted', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        clock.t = START + 600
        await consumeN(limiter, 'minute-only', { perMinute: 1, perDay: 100 }, 1)
        assert.equal((await limiter.consume('minute-only', { perMinute: 1, perDay: 100 })).retryAfterSeconds, 30) // 29.4 s
        await consumeN(limiter, 'both', { perMinute: 2, perDay: 2 }, 2)
        const both = await limiter.consume('both', { perMinute: 2, perDay: 2 })
        assert.deepEqual(
          [both.minute.remaining, both.day.remaining, both.retryAfterSeconds],
          [0, 0, 43_170] // 43 169.4 s to midnight
        )
      })

      void test('different subjects are counted and banned independently, braces in subjects included', async (ctx) => {
        const { limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 1, perDay: 100 }
        await provokeBan(limiter, 'key:{a}', quota)
        assert.equal((await limiter.consume('key:{a}', quota)).code, 'api_key_banned')
        for (const other of ['key:%7Ba%7D', 'key:a', 'key:{a}}', 'key:{b}']) {
          const d = await limiter.consume(other, quota)
          assert.deepEqual([other, d.allowed, d.minute.remaining, d.day.remaining], [other, true, 0, 99])
        }
      })
    })

    void describe('headers', () => {
      void test('an allowed request describes the minute window when it binds, and both windows in the draft fields', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        clock.t = Date.UTC(2026, 10, 21, 12, 0, 42)
        const d = (await consumeN(limiter, 'k', FREE, 18)).at(-1)
        assert.ok(d)
        assert.deepEqual(rateLimitHeaders(d, FREE, clock.t), {
          'X-RateLimit-Limit': '60',
          'X-RateLimit-Remaining': '42',
          'X-RateLimit-Reset': '1795262460',
          'RateLimit-Policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
          RateLimit: '"minute";r=42;t=18, "day";r=982;t=43158'
        })
      })

      void test('the day window binds when it has fewer requests left', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 60, perDay: 100 }
        await consumeN(limiter, 'k', quota, 50)
        clock.t = Date.UTC(2026, 10, 21, 12, 1, 10)
        const d = await limiter.consume('k', quota)
        assert.deepEqual(rateLimitHeaders(d, quota, clock.t), {
          'X-RateLimit-Limit': '100',
          'X-RateLimit-Remaining': '49',
          'X-RateLimit-Reset': '1795305600',
          'RateLimit-Policy': '"minute";q=60;w=60, "day";q=100;w=86400',
          RateLimit: '"minute";r=59;t=50, "day";r=49;t=43130'
        })
      })

      void test('a refused request adds Retry-After', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        clock.t = Date.UTC(2026, 10, 21, 12, 0, 42)
        await consumeN(limiter, 'k', FREE, 60)
        const d = await limiter.consume('k', FREE)
        assert.deepEqual(rateLimitHeaders(d, FREE, clock.t), {
          'X-RateLimit-Limit': '60',
          'X-RateLimit-Remaining': '0',
          'X-RateLimit-Reset': '1795262460',
          'RateLimit-Policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
          RateLimit: '"minute";r=0;t=18, "day";r=940;t=43158',
          'Retry-After': '18'
        })
      })
    })

    void describe('bans', () => {
      void test('the 21st request before the first 429\'s Retry-After is answered api_key_banned and starts a 15 minute ban', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        await consumeN(limiter, 'k', FREE, 60)
        const refused: Decision[] = []
        for (let i = 0; i < 20; i++) {
          refused.push(await limiter.consume('k', FREE))
          clock.t += SECOND
        }
        assert.deepEqual(refused.map((d) => [d.code, d.retryAfterSeconds, d.ban, d.banStarted]),
          Array.from({ length: 20 }, (_, i) => ['rate_limited', 30 - i, null, false]))
        const banStart = START + 20 * SECOND
        const ban = { until: banStart + 15 * MINUTE, reason: BAN_REASON, startedAt: banStart, level: 1 }
        assert.deepEqual(await limiter.consume('k', FREE), {
          allowed: false,
          code: 'api_key_banned',
          minute: { limit: 60, remaining: 0, resetAt: MINUTE_END },
          day: { limit: 1000, remaining: 940, resetAt: DAY_END },
          retryAfterSeconds: 900,
          ban,
          banStarted: true
        })
        const after: Decision[] = []
        for (let i = 1; i <= 10; i++) {
          clock.t = banStart + i * SECOND
          after.push(await limiter.consume('k', FREE))
        }
        assert.deepEqual(after.map((d) => [d.code, d.retryAfterSeconds, d.ban, d.banStarted]),
          Array.from({ length: 10 }, (_, i) => ['api_key_banned', 899 - i, ban, false]))
        // A new minute has room, but the ban charges nothing and is not extended by requests.
        clock.t = MINUTE_END + 5 * SECOND
        const banned = await limiter.consume('k', FREE)
        assert.deepEqual([banned.code, banned.minute.remaining, banned.day.remaining, banned.ban], ['api_key_banned', 60, 940, ban])
      })

      void test('a ban ends at its until: 1 ms before it still refuses with Retry-After 1, at it the quota applies again', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        await consumeN(limiter, 'k', FREE, 60)
        const started = await provokeBan(limiter, 'k', FREE)
        const until = START + 15 * MINUTE
        assert.equal(started.ban?.until, until)
        clock.t = until - 1
        const last = await limiter.consume('k', FREE)
        assert.deepEqual([last.code, last.retryAfterSeconds, last.banStarted], ['api_key_banned', 1, false])
        clock.t = until
        assert.deepEqual(await limiter.consume('k', FREE), {
          allowed: true,
          code: null,
          minute: { limit: 60, remaining: 59, resetAt: until + 30 * SECOND },
          day: { limit: 1000, remaining: 939, resetAt: DAY_END },
          retryAfterSeconds: 0,
          ban: null,
          banStarted: false
        })
      })

      void test('no ban when the wait period ends first: counting restarts at the next 429', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 2, perDay: 1000 }
        const first = await consumeN(limiter, 'k', quota, 2 + 15)
        assert.deepEqual(codes(first), [...repeat('allowed', 2), ...repeat('rate_limited', 15)])
        clock.t = MINUTE_END // the first 429's retry instant: the period is over
        const second = await consumeN(limiter, 'k', quota, 2 + 20)
        assert.deepEqual(codes(second), [...repeat('allowed', 2), ...repeat('rate_limited', 20)])
        const banned = await limiter.consume('k', quota)
        assert.deepEqual([banned.code, banned.banStarted, banned.ban?.startedAt], ['api_key_banned', true, MINUTE_END])
      })

      void test('requests in the gap between a window reset and the rounded-up Retry-After still count toward the ban', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 2, perDay: 1000 }
        clock.t = START + 500 // Retry-After ceil(29.5) = 30 s: the period ends at 12:01:00.500
        for (const subject of ['early', 'on-time']) {
          const d = await consumeN(limiter, subject, quota, 2 + 19)
          assert.deepEqual(codes(d), [...repeat('allowed', 2), ...repeat('rate_limited', 19)])
        }
        clock.t = MINUTE_END + 200
        const early = await consumeN(limiter, 'early', quota, 2)
        assert.deepEqual(early.map((d) => [d.code ?? 'allowed', d.minute.remaining, d.banStarted]), [['allowed', 1, false], ['api_key_banned', 1, true]])
        clock.t = MINUTE_END + 500
        assert.deepEqual(codes(await consumeN(limiter, 'on-time', quota, 3)), ['allowed', 'allowed', 'rate_limited'])
      })

      void test('when the day window refuses, the wait period lasts until midnight: 21 requests spread over hours still ban', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 100, perDay: 3 }
        await consumeN(limiter, 'k', quota, 3)
        const refused: Decision[] = []
        for (let i = 0; i < 20; i++) {
          refused.push(await limiter.consume('k', quota))
          clock.t += 10 * MINUTE
        }
        assert.deepEqual(codes(refused), repeat('rate_limited', 20))
        const banned = await limiter.consume('k', quota)
        assert.deepEqual([banned.code, banned.banStarted, banned.ban?.startedAt], ['api_key_banned', true, START + 200 * MINUTE])
      })

      void test('bans escalate 15m, 30m, 1h ... while each starts within 24 h of the previous one, capped at 24 h', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 1, perDay: 1_000_000 }
        const minutes = [15, 30, 60, 120, 240, 480, 960, 1440]
        const seen: number[][] = []
        for (const _ of minutes) {
          const d = await provokeBan(limiter, 'k', quota)
          assert.ok(d.ban)
          seen.push([
            d.ban.level,
            (d.ban.until - d.ban.startedAt) / MINUTE,
            d.retryAfterSeconds / 60,
            d.ban.startedAt === clock.t ? 1 : 0
          ])
          clock.t = d.ban.until
        }
        assert.deepEqual(seen, minutes.map((m, i) => [i + 1, m, m, 1]))
        // The 24 h ban started exactly 24 h before its end, so the next ban is a first offence.
        const fresh = await provokeBan(limiter, 'k', quota)
        assert.deepEqual([fresh.ban?.level, fresh.retryAfterSeconds], [1, 900])
      })

      void test('escalation restarts when the previous ban started more than 24 h before', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 1, perDay: 1_000_000 }
        await provokeBan(limiter, 'within', quota)
        await provokeBan(limiter, 'beyond', quota)
        clock.t = START + 24 * HOUR - 1
        const within = await provokeBan(limiter, 'within', quota)
        assert.deepEqual([within.ban?.level, within.retryAfterSeconds], [2, 1800])
        clock.t = START + 24 * HOUR
        const beyond = await provokeBan(limiter, 'beyond', quota)
        assert.deepEqual([beyond.ban?.level, beyond.retryAfterSeconds], [1, 900])
      })

      void test('unban lifts a ban at once and restarts strike counting, but a re-offender still escalates', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        await consumeN(limiter, 'k', FREE, 60)
        await provokeBan(limiter, 'k', FREE)
        clock.t += 10 * SECOND
        await limiter.unban('k')
        const lifted = await consumeN(limiter, 'k', FREE, 20)
        // The minute window is still exhausted, so the quota answers; the 20 strikes are new.
        assert.deepEqual(lifted.map((d) => [d.code, d.ban]), repeat(['rate_limited', null], 20))
        const again = await limiter.consume('k', FREE)
        assert.deepEqual([again.code, again.banStarted, again.ban?.level, again.retryAfterSeconds], ['api_key_banned', true, 2, 1800])
      })

      void test('unban of a subject that is not banned only restarts strike counting', async (ctx) => {
        const { limiter } = await open(ctx, makeLimiter)
        await limiter.unban('never-seen')
        const quota = { perMinute: 1, perDay: 100 }
        assert.deepEqual(codes(await consumeN(limiter, 'k', quota, 16)), ['allowed', ...repeat('rate_limited', 15)])
        await limiter.unban('k')
        assert.deepEqual(codes(await consumeN(limiter, 'k', quota, 20)), repeat('rate_limited', 20))
        assert.equal((await limiter.consume('k', quota)).banStarted, true)
      })

      void test('a lifted 24 h ban followed by another offence stays at 24 h (level 8)', async (ctx) => {
        const { clock, limiter } = await open(ctx, makeLimiter)
        const quota = { perMinute: 1, perDay: 1_000_000 }
        for (let level = 1; level <= 8; level++) {
          const d = await provokeBan(limiter, 'k', quota)
          assert.equal(d.ban?.level, level)
          clock.t += HOUR
          await limiter.unban('k')
        }
        const capped = await provokeBan(limiter, 'k', quota)
        assert.deepEqual([capped.ban?.level, capped.retryAfterSeconds], [8, 86_400])
      })
    })

    void describe('peek', () => {
      void test('peek charges nothing', async (ctx) => {
        const { limiter } = await open(ctx, makeLimiter)
        const fresh = {
          allowed: true,
          code: null,
          minute: { limit: 60, remaining: 60, resetAt: MINUTE_END },
          day: { limit: 1000, remaining: 1000, resetAt: DAY_END },
          retryAfterSeconds: 0,
          ban: null,
          banStarted: false
        }
        for (let i = 0; i < 100; i++) assert.deepEqual(await limiter.peek('k', FREE), fresh)
        await consumeN(limiter, 'k', FREE, 3)
        const peeked = await limiter.peek('k', FREE)
        assert.deepEqual([peeked.allowed, peeked.minute.remaining, peeked.day.remaining], [true, 57, 997])
        assert.equal((await limiter.consume('k', FREE)).minute.remaining, 56)
      })

      void test('peek reports a refusal and the coming ban, but counts no strike and starts no ban', async (ctx) => {
        const { limiter } = await open(ctx, makeLimiter)
        await consumeN(limiter, 'k', FREE, 60)
        const refusal = await limiter.peek('k', FREE)
        assert.deepEqual([refusal.allowed, refusal.code, refusal.retryAfterSeconds], [false, 'rate_limited', 30])
        for (let i = 0; i < 30; i++) assert.equal((await limiter.peek('k', FREE)).code, 'rate_limited')
        assert.deepEqual(codes(await consumeN(limiter, 'k', FREE, 20)), repeat('rate_limited', 20))
        const coming = {
          allowed: false,
          code: 'api_key_banned',
          minute: { limit: 60, remaining: 0, resetAt: MINUTE_END },
          day: { limit: 1000, remaining: 940, resetAt: DAY_END },
          retryAfterSeconds: 900,
          ban: null,
          banStarted: false
        }
        assert.deepEqual(await limiter.peek('k', FREE), coming)
        assert.deepEqual(await limiter.peek('k', FREE), coming)
        const started = await limiter.consume('k', FREE)
        assert.equal(started.banStarted, true)
        assert.deepEqual(await limiter.peek('k', FREE), { ...started, banStarted: false })
      })
    })
  })
}
