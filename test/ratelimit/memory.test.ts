import { test } from 'node:test'
import { runInNewContext } from 'node:vm'
import { setFlagsFromString } from 'node:v8'
import assert from 'node:assert/strict'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { runRateLimiterContract, START } from './contract.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const MINUTE = 60_000
const HOUR = 60 * MINUTE

runRateLimiterContract('memory', async (now) => ({
  limiter: createMemoryRateLimiter({ now }),
  cleanup: async () => {}
}))

void test('memory: the incremental sweep drops idle subjects once their windows and ban history are stale', async (t) => {
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
  // Each consume examines a couple of subjects, so a few hundred requests clear the old day.
  now = START + 23 * HOUR
  for (let i = 0; i < 600; i++) await limiter.consume('ip:new', quota)
  assert.equal(limiter.size(), 2)

  // Past the ban's history horizon (24 h after it ended) the banned subject goes too.
  now = START + 16 * MINUTE + 24 * HOUR
  for (let i = 0; i < 4; i++) await limiter.consume('ip:third', quota)
  assert.deepEqual(limiter.size(), 2)
  assert.equal((await limiter.consume('ip:banned', quota)).allowed, true)
})

void test('memory: a million distinct subjects keep the map at its bound and the heap flat', async (t) => {
  const maxSubjects = 20_000
  const limiter = createMemoryRateLimiter({ now: () => START, maxSubjects })
  t.after(() => limiter.close())
  const quota = { perMinute: 60, perDay: 1000 }
  const big = { perMinute: 1_000_000, perDay: 1_000_000 }
  const heapAt = (): number => { gc(); return process.memoryUsage().heapUsed }
  // A regular caller that keeps calling among the flood, and a banned one that stops calling.
  let banned
  do banned = await limiter.consume('key:banned', { perMinute: 1, perDay: 1000 })
  while (!banned.banStarted)

  let largest = 0
  let before = 0
  for (let i = 0; i < 1_000_000; i++) {
    await limiter.consume(`ip:${i}`, quota)
    if (i % 100 === 0) await limiter.consume('key:regular', big)
    if (i === 200_000) before = heapAt()
    if (limiter.size() > largest) largest = limiter.size()
  }
  const after = heapAt()
  assert.ok(largest <= maxSubjects * 1.25, `the map grew to ${largest} subjects (bound ${maxSubjects})`)
  assert.ok(after - before < 4 * 1024 * 1024, `the heap grew by ${after - before} bytes between 200k and 1M subjects`)
  // Eviction spared the subject that keeps calling (its count went on) and the active ban.
  assert.equal((await limiter.peek('key:regular', big)).minute.remaining, 1_000_000 - 10_000)
  assert.equal((await limiter.consume('key:banned', { perMinute: 1, perDay: 1000 })).code, 'api_key_banned')
})

void test('memory: peek of an unknown subject stores nothing', async (t) => {
  const limiter = createMemoryRateLimiter({ now: () => START })
  t.after(() => limiter.close())
  await limiter.peek('ip:1', { perMinute: 1, perDay: 1 })
  await limiter.unban('ip:1')
  assert.equal(limiter.size(), 0)
})
