// Two app instances on one Redis share a key's quota exactly: their combined calls hit the
// limit at the quota, and a ban made through one holds on the other.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'
import { openRedisTestLimiter, testRedisReason } from '../helpers/limiter.ts'
import { serviceGate } from '../helpers/services.ts'

const redis = serviceGate(await testRedisReason())

test('two app instances on one Redis: 30 + 30 interleaved calls on a 50/min key give exactly 50 successes, and a ban holds on both', { skip: redis.skip }, async (t) => {
  redis.check()
  const prefix = `test:${randomUUID()}:`
  const a = await buildTestApp(t, { limiter: (now) => openRedisTestLimiter(now, prefix) })
  // The second instance shares the database (the keys) and the Redis prefix, not the process state.
  const b = await buildTestApp(t, { stores: a.stores, limiter: () => openRedisTestLimiter(a.clock.now, prefix) })
  const { key } = await a.makeKey('customer', 'enterprise', { perMinute: 50, perDay: 10_000 })
  const results: number[] = []
  for (let i = 0; i < 30; i++) {
    results.push((await a.call({ method: 'GET', url: '/v1/pets', key })).statusCode)
    results.push((await b.call({ method: 'GET', url: '/v1/pets', key })).statusCode)
  }
  assert.equal(results.filter((s) => s === 200).length, 50)
  assert.equal(results.filter((s) => s === 429).length, 10)
  assert.deepEqual(results.slice(0, 50), Array(50).fill(200))
  // 10 refusals so far; 10 more alternate between instances, and the 21st refusal is the ban.
  const codes: string[] = []
  for (let i = 0; i < 11; i++) codes.push((await (i % 2 === 0 ? b : a).call({ method: 'GET', url: '/v1/pets', key })).json().code)
  assert.deepEqual(codes, [...Array(10).fill('rate_limited'), 'api_key_banned'])
  const onA = await a.call({ method: 'GET', url: '/v1/categories', key })
  assert.equal(onA.json().code, 'api_key_banned')
})
