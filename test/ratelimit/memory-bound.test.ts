// The memory back end's bound under a flood of distinct subjects (kept apart from memory.test.ts:
// a million requests take seconds, and the mutation run lists this file late so that the mutants
// the fast tests kill never wait for it).
import { test } from 'node:test'
import { runInNewContext } from 'node:vm'
import { setFlagsFromString } from 'node:v8'
import assert from 'node:assert/strict'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { START } from './contract.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

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
