// "Charged" is decided once, by the access service, and carried on the request: the near-limit
// count reads it. A request answered from a peek (GET /v1/rate_limit with a valid key, a CORS
// preflight) left the windows as they were, so it is not counted as near the limit, however few
// requests the window has left; a charged request with as few left is.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

const nearLimit = async (app: Awaited<ReturnType<typeof buildTestApp>>): Promise<number> => {
  const text = (await app.app.inject({ method: 'GET', url: '/metrics' })).body
  const match = /^ratelimit_near_limit_total\{window="minute"\} (\d+)$/m.exec(text)
  return match === null ? 0 : Number(match[1])
}

test('GET /v1/rate_limit with a valid key peeks: not counted near the limit; a charged request with as few left is', async (t) => {
  const app = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const { key } = await app.makeKey('customer', 'enterprise', { perMinute: 20, perDay: 1000 })
  // 20 a minute: near the limit is fewer than 2 left; the 19th request leaves 1, and is counted.
  for (let i = 0; i < 19; i++) assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  assert.equal(await nearLimit(app), 1)
  // These see 1 left too, but only peek.
  for (let i = 0; i < 3; i++) {
    const rate = await app.call({ method: 'GET', url: '/v1/rate_limit', key })
    assert.equal(rate.statusCode, 200)
    assert.equal(rate.headers['x-ratelimit-remaining'], '1')
  }
  assert.equal(await nearLimit(app), 1, 'GET /v1/rate_limit with a valid key is not charged')
  // The 20th request is charged and leaves 0: near the limit.
  assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  assert.equal(await nearLimit(app), 2)
})

test('a preflight from an address with few requests left is not counted near the limit', async (t) => {
  const app = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  // Without a key the address is charged at the free quotas (60 a minute): the 55th leaves 5,
  // under 6, and is counted.
  for (let i = 0; i < 55; i++) assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key: null })).statusCode, 401)
  const before = await nearLimit(app)
  assert.equal(before, 1)
  const preflight = await app.call({ method: 'OPTIONS', url: '/v1/pets', key: null, headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } })
  assert.equal(preflight.statusCode, 204)
  assert.equal(preflight.headers['x-ratelimit-remaining'], '5')
  assert.equal(await nearLimit(app), before, 'a preflight is not charged')
})
