import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { createFallbackRateLimiter, describeFailure } from '../../src/ratelimit/fallback.ts'
import type { FallbackStatus } from '../../src/ratelimit/fallback.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from '../../src/ratelimit/redis.ts'
import type { Quota, RateLimiter } from '../../src/ratelimit/limiter.ts'
import { runRateLimiterContract, START } from './contract.ts'

const FREE: Quota = { perMinute: 60, perDay: 1000 }

// Over a healthy primary the wrapper must be invisible.
runRateLimiterContract('fallback over a healthy primary', async (now) => ({
  limiter: createFallbackRateLimiter({
    primary: createMemoryRateLimiter({ now }),
    fallback: createMemoryRateLimiter({ now }),
    now
  }),
  cleanup: async () => {}
}))

/** A primary that rejects every call while `down` is true, else answers from its own memory. */
function controllablePrimary (now: () => number, error: Error) {
  const inner = createMemoryRateLimiter({ now })
  const control = { down: true, calls: 0 }
  const guard = <T>(call: () => Promise<T>): Promise<T> => {
    control.calls++
    return control.down ? Promise.reject(error) : call()
  }
  const limiter: RateLimiter = {
    consume: (s, q) => guard(async () => inner.consume(s, q)),
    peek: (s, q) => guard(async () => inner.peek(s, q)),
    unban: (s) => guard(() => inner.unban(s)),
    close: () => inner.close()
  }
  return { limiter, control }
}

void test('with Redis unreachable, 20 requests are answered from memory at once and the state is degraded once', async (t) => {
  const redis = new Redis({ host: '127.0.0.1', port: 1, ...redisClientOptions() })
  redis.on('error', () => {})
  t.after(() => redis.disconnect())
  const changes: [FallbackStatus, string | undefined][] = []
  const limiter = createFallbackRateLimiter({
    primary: createRedisRateLimiter({ redis, prefix: 'test:unreachable:', now: () => START }),
    fallback: createMemoryRateLimiter({ now: () => START }),
    onStateChange: (state, reason) => changes.push([state, reason])
  })
  const started = performance.now()
  const remaining: number[] = []
  for (let i = 0; i < 20; i++) remaining.push((await limiter.consume('key:1', FREE)).minute.remaining)
  const elapsed = performance.now() - started
  assert.ok(elapsed < 1000, `20 calls took ${Math.round(elapsed)} ms`)
  assert.deepEqual(remaining, Array.from({ length: 20 }, (_, i) => 59 - i))
  const state = limiter.state()
  assert.equal(state.status, 'degraded')
  assert.ok(state.reason?.startsWith('rate limit store unavailable: '), state.reason)
  assert.deepEqual(changes, [['degraded', state.reason]])
})

void test('while degraded the primary is retried at most once a second, and its first answer restores ok', async (t) => {
  let now = START
  const clock = () => now
  const { limiter: primary, control } = controllablePrimary(clock, new Error('Connection is closed.'))
  const changes: [FallbackStatus, string | undefined][] = []
  const limiter = createFallbackRateLimiter({
    primary,
    fallback: createMemoryRateLimiter({ now: clock }),
    onStateChange: (state, reason) => changes.push([state, reason]),
    now: clock
  })
  t.after(() => limiter.close())

  for (let i = 0; i < 5; i++) await limiter.consume('key:1', FREE)
  assert.equal(control.calls, 1)
  assert.deepEqual(limiter.state(), { status: 'degraded', reason: 'rate limit store unavailable: Connection is closed.' })

  now += 999
  await limiter.consume('key:1', FREE)
  assert.equal(control.calls, 1)
  now += 1
  const stillDown = await limiter.consume('key:1', FREE)
  assert.deepEqual([control.calls, stillDown.minute.remaining], [2, 53]) // 7th request, from memory

  control.down = false
  now += 999
  await limiter.consume('key:1', FREE)
  assert.equal(control.calls, 2)
  now += 1
  const back = await limiter.consume('key:1', FREE)
  assert.deepEqual([control.calls, back.minute.remaining], [3, 59]) // the primary's own, fresh counters
  assert.deepEqual(limiter.state(), { status: 'ok' })
  assert.deepEqual(changes, [['degraded', 'rate limit store unavailable: Connection is closed.'], ['ok', undefined]])

  await limiter.consume('key:1', FREE)
  assert.equal(control.calls, 4)
  assert.equal(changes.length, 2)
})

void test('while the once-a-second probe of the primary is pending, other requests are answered by the fallback', { timeout: 2000 }, async (t) => {
  let now = START
  const clock = () => now
  const fallback = createMemoryRateLimiter({ now: clock })
  let release: () => void = () => {}
  let calls = 0
  const primaryLimiter = createMemoryRateLimiter({ now: clock })
  const primary: RateLimiter = {
    consume: async (s, q) => {
      calls++
      if (calls === 1) throw new Error('Connection is closed.')
      await new Promise<void>((resolve) => { release = resolve }) // a slow answer
      return primaryLimiter.consume(s, q)
    },
    peek: (s, q) => primaryLimiter.peek(s, q),
    unban: (s) => primaryLimiter.unban(s),
    close: () => primaryLimiter.close()
  }
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  t.after(() => limiter.close())
  await limiter.consume('key:1', FREE)
  now += 1000
  const probe = limiter.consume('key:1', FREE)
  const others = await Promise.all([limiter.consume('key:1', FREE), limiter.consume('key:1', FREE)])
  assert.deepEqual([calls, others.map((d) => d.minute.remaining)], [2, [58, 57]])
  release()
  assert.equal((await probe).minute.remaining, 59)
  assert.equal(limiter.state().status, 'ok')
})

void test('peek falls back too, and a throwing state observer does not break answers', async () => {
  const { limiter: primary } = controllablePrimary(() => START, new Error('Command timed out'))
  const limiter = createFallbackRateLimiter({
    primary,
    fallback: createMemoryRateLimiter({ now: () => START }),
    onStateChange: () => {
      throw new Error('logger down')
    },
    now: () => START
  })
  const d = await limiter.peek('key:1', FREE)
  assert.deepEqual([d.allowed, d.minute.remaining], [true, 60])
  assert.equal(limiter.state().status, 'degraded')
})

void test('unban lifts the ban in both stores, and rejects when the primary cannot be told', async () => {
  const clock = () => START
  const { limiter: primary, control } = controllablePrimary(clock, new Error('Connection is closed.'))
  const fallback = createMemoryRateLimiter({ now: clock })
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  const quota = { perMinute: 1, perDay: 100 }
  let d
  do d = await limiter.consume('key:1', quota)
  while (!d.banStarted)

  await assert.rejects(limiter.unban('key:1'), /Connection is closed/)
  assert.equal((await fallback.peek('key:1', quota)).code, 'rate_limited') // lifted in memory anyway

  control.down = false
  do d = await primary.consume('key:2', quota)
  while (!d.banStarted)
  await limiter.unban('key:2')
  assert.equal((await primary.peek('key:2', quota)).code, 'rate_limited')
  assert.deepEqual(limiter.state(), { status: 'ok' })
})

void test('the degraded reason never carries a URL or credentials', () => {
  const err = Object.assign(new Error('connect failed to redis://default:hunter2@cache.internal:6379 after 3 tries'), { code: 'ECONNREFUSED' })
  const reason = describeFailure(err)
  assert.equal(reason, 'rate limit store unavailable: ECONNREFUSED: connect failed to after 3 tries')
  assert.equal(describeFailure(new Error('user:pw@10.0.0.1')), 'rate limit store unavailable: Error')
  assert.ok(describeFailure(new Error('x'.repeat(500))).length <= 120)
})

void test('check() probes the store without traffic: an idle instance notices an outage and returns by itself', async () => {
  let now = START
  const clock = () => now
  const { limiter: primary, control } = controllablePrimary(clock, new Error('unused'))
  control.down = false
  let storeUp = true
  let probes = 0
  const changes: FallbackStatus[] = []
  const limiter = createFallbackRateLimiter({
    primary,
    fallback: createMemoryRateLimiter({ now: clock }),
    onStateChange: (state) => changes.push(state),
    probe: async () => {
      probes++
      if (!storeUp) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    },
    now: clock
  })

  assert.deepEqual(await limiter.check(), { status: 'ok' })
  storeUp = false
  assert.deepEqual(await limiter.check(), { status: 'degraded', reason: 'rate limit store unavailable: connect ECONNREFUSED' })
  // Requests now go to the fallback without trying the primary.
  await limiter.consume('key:1', FREE)
  assert.equal(control.calls, 0)

  // While degraded, at most one probe per retry interval, whoever asks.
  storeUp = true
  now += 500
  assert.equal((await limiter.check()).status, 'degraded')
  assert.equal(probes, 2)
  now += 500
  assert.deepEqual(await limiter.check(), { status: 'ok' })
  assert.equal(probes, 3)
  assert.deepEqual(changes, ['degraded', 'ok'])
  await limiter.consume('key:1', FREE)
  assert.equal(control.calls, 1)

  // Without a probe, check() is state().
  const plain = createFallbackRateLimiter({ primary, fallback: createMemoryRateLimiter({ now: clock }), now: clock })
  assert.deepEqual(await plain.check(), { status: 'ok' })
})
