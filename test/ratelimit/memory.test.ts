import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { runRateLimiterContract, START } from './contract.ts'

const MINUTE = 60_000
const HOUR = 60 * MINUTE

runRateLimiterContract('memory', async (now) => ({
  limiter: createMemoryRateLimiter({ now }),
  cleanup: async () => {}
}))

void test('memory: the lazy sweep drops idle subjects once their windows and ban history are stale', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 1, perDay: 1000 }
  for (let i = 0; i < 1000; i++) await limiter.consume(`ip:${i}`, quota)
  let banned
  do banned = await limiter.consume('ip:banned', quota)
  while (!banned.banStarted)
  assert.equal(limiter.size(), 1001)

  // Next UTC day, 23 h after the ban started: every window is stale, the ban history is not.
  now = START + 23 * HOUR
  await limiter.consume('ip:new', quota)
  assert.equal(limiter.size(), 2)

  // 1 ms before the ban's history horizon (24 h after it ended) the banned subject stays.
  now = START + 15 * MINUTE + 24 * HOUR - 1
  await limiter.consume('ip:other', quota)
  assert.equal(limiter.size(), 3)
  // Past it, and a minute after the last sweep, it goes; same-day subjects stay.
  now = START + 16 * MINUTE + 24 * HOUR
  await limiter.consume('ip:third', quota)
  assert.deepEqual(limiter.size(), 3)
  assert.equal((await limiter.consume('ip:banned', quota)).allowed, true)
})

void test('memory: peek of an unknown subject stores nothing', async (t) => {
  const limiter = createMemoryRateLimiter({ now: () => START })
  t.after(() => limiter.close())
  await limiter.peek('ip:1', { perMinute: 1, perDay: 1 })
  await limiter.unban('ip:1')
  assert.equal(limiter.size(), 0)
})
