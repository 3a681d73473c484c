// The access hook on odd request targets (src/http/access.ts): a path with an empty segment is
// 404 under any key but a 429 stays a 429; a target that never reaches routing
// (answerMalformedUrl) is a bare 400 outside /v1 and charged under it; and a limiter that throws
// or rejects gives the error's own answer, never a hang. Written against the survivors of
// `npm run mutate -- access` (docs/testing.md); every operation in every spelling over a socket
// is access-routes.test.ts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { AppError } from '../../src/errors.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Quota } from '../../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { buildTestApp } from '../helpers/app.ts'
import { unknownKey } from './key-reads.ts'

test('a path with an empty segment under /v1 is 404 not_found, charged, with or without a valid key, and without WWW-Authenticate', async (t) => {
  const { app, keys } = await buildTestApp(t)
  for (const [url, key] of [['/v1/pets/', null], ['/v1//pets', null], ['/v1/pets/', keys.customer], ['/v1/admin/keys/', keys.customer], ['/v1/admin/keys/', keys.admin]] as const) {
    const res = await app.inject({ method: 'GET', url, headers: key === null ? {} : { 'x-api-key': key } })
    assert.equal(res.statusCode, 404, `${url} ${key === null ? 'without a key' : 'with a key'}`)
    assert.deepEqual(res.json(), { code: 'not_found', message: 'no operation at this path: paths have no empty segment (no trailing or doubled slash); see /openapi.json', status: 404, requestId: res.headers['request-id'] })
    assert.equal(res.headers['www-authenticate'], undefined)
    assert.ok(res.headers['x-ratelimit-remaining'] !== undefined)
  }
  assert.equal((await app.inject({ method: 'GET', url: '/v1/pets' })).headers['www-authenticate'], 'Bearer realm="petstore"', 'the canonical path is 401 with the challenge')
})

test('an exhausted address gets 429 on a path with an empty segment too', async (t) => {
  const { app } = await buildTestApp(t)
  for (let i = 0; i < 60; i++) await app.inject({ method: 'GET', url: '/v1/pets' })
  const res = await app.inject({ method: 'GET', url: '/v1/pets/' })
  assert.equal(res.statusCode, 429)
  assert.equal(res.json().code, 'rate_limited')
})

test('a 404 and a 405 under /v1 are charged to the caller; only OPTIONS without a route role is a free preflight', async (t) => {
  const { app, keys } = await buildTestApp(t, { plan: 'free' })
  const remaining = async (method: 'GET' | 'PATCH' | 'OPTIONS', url: string) => {
    const res = await app.inject({ method, url, headers: { 'x-api-key': keys.customer } })
    return res.headers['x-ratelimit-remaining']
  }
  assert.equal(await remaining('GET', '/v1/no/such/path'), '59')
  assert.equal(await remaining('PATCH', '/v1/pets'), '58')
  assert.equal(await remaining('OPTIONS', '/v1/pets'), '60', 'a preflight describes the address, uncharged')
  assert.equal(await remaining('GET', '/v1/no/such/path'), '57')
})

test('a route that declares a role is checked even outside /v1', async (t) => {
  const clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 30))
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const app = await buildApp({
    config: loadConfig({ DATABASE_URL: 'sqlite::memory:' }),
    stores,
    limiter: createMemoryRateLimiter({ now: clock.now }),
    clock
  })
  t.after(() => app.close())
  app.get('/outside', { config: { role: 'admin' } }, async () => ({ secret: true }))
  await app.ready()
  const res = await app.inject({ method: 'GET', url: '/outside' })
  assert.equal(res.statusCode, 401)
  assert.equal(res.json().code, 'unauthenticated')
})

test('only a 401 carries the challenge: a 403 and a 400 for a key in the URL do not', async (t) => {
  const { app, keys } = await buildTestApp(t)
  const forbidden = await app.inject({ method: 'POST', url: '/v1/categories', headers: { 'x-api-key': keys.customer }, payload: { name: 'Dogs' } })
  assert.equal(forbidden.statusCode, 403)
  assert.equal(forbidden.headers['www-authenticate'], undefined)
  const inQuery = await app.inject({ method: 'GET', url: `/v1/pets?api_key=${keys.customer}`, headers: { 'x-api-key': keys.customer } })
  assert.equal(inQuery.statusCode, 400)
  assert.equal(inQuery.headers['www-authenticate'], undefined)
})

test('a malformed URL under /v1 sent with a valid key is charged to that key, and is 400 even when the key cannot be read', async (t) => {
  const { app, keys, stores } = await buildTestApp(t, { plan: 'free' })
  const first = await app.inject({ method: 'GET', url: '/v1/pets/%E0%A4%A', headers: { 'x-api-key': keys.customer } })
  const second = await app.inject({ method: 'GET', url: '/v1/pets/%E0%A4%A', headers: { 'x-api-key': keys.customer } })
  assert.deepEqual([first.statusCode, second.statusCode], [400, 400])
  assert.deepEqual([first.headers['x-ratelimit-remaining'], second.headers['x-ratelimit-remaining']], ['59', '58'])
  stores.keys.findKeyByHash = async () => { throw new AppError('service_unavailable', 'the database is unavailable') }
  const out = await app.inject({ method: 'GET', url: '/v1/pets/%E0%A4%A', headers: { 'x-api-key': unknownKey('u') } })
  assert.equal(out.statusCode, 400)
  assert.equal(out.json().code, 'validation_failed')
})

const MALFORMED = 'the request URL is malformed (bad percent-encoding or an over-long path segment)'

test('a malformed URL outside /v1 is 400 with a request id and no rate-limit headers; under /v1 it is charged', async (t) => {
  const { app } = await buildTestApp(t)
  const outside = await app.inject({ method: 'GET', url: '/docs/%E0%A4%A' })
  assert.equal(outside.statusCode, 400)
  assert.deepEqual([outside.json().code, outside.json().message], ['validation_failed', MALFORMED])
  assert.equal(outside.headers['x-ratelimit-limit'], undefined)
  assert.match(String(outside.headers['request-id']), /^[0-9a-f-]{36}$/)
  const inside = await app.inject({ method: 'GET', url: '/v1/pets/%E0%A4%A' })
  assert.equal(inside.statusCode, 400)
  assert.deepEqual([inside.json().code, inside.json().message], ['validation_failed', MALFORMED])
  assert.equal(inside.headers['x-ratelimit-remaining'], '59')
  assert.match(String(inside.headers['request-id']), /^[0-9a-f-]{36}$/)
})

test('a malformed URL under /v1 from an exhausted address is 429 rate_limited with Retry-After', async (t) => {
  const { app } = await buildTestApp(t)
  for (let i = 0; i < 60; i++) await app.inject({ method: 'GET', url: '/v1/pets' })
  const res = await app.inject({ method: 'GET', url: '/v1/pets/%E0%A4%A' })
  assert.equal(res.statusCode, 429)
  assert.equal(res.json().code, 'rate_limited')
  assert.equal(res.headers['retry-after'], '30')
  assert.equal(res.headers['x-ratelimit-remaining'], '0')
})

for (const how of ['throws', 'rejects'] as const) {
  test(`a limiter that ${how} answers the error itself, for a malformed URL and for a request the hook charges`, async (t) => {
    const outage = new AppError('service_unavailable', 'the rate limiter is unavailable')
    const { app } = await buildTestApp(t, {
      limiter: (now) => {
        const memory = createMemoryRateLimiter({ now })
        const consume = how === 'throws'
          ? (_s: string, _q: Quota): never => { throw outage }
          : async (_s: string, _q: Quota): Promise<never> => { throw outage }
        const peek = async (_s: string, _q: Quota): Promise<never> => { throw outage }
        return { ...memory, consume, ...(how === 'rejects' && { peek }) }
      }
    })
    const malformed = await app.inject({ method: 'GET', url: '/v1/pets/%E0%A4%A' })
    assert.equal(malformed.statusCode, 503)
    assert.equal(malformed.json().code, 'service_unavailable')
    const res = await app.inject({ method: 'GET', url: '/v1/pets' })
    assert.equal(res.statusCode, 503)
    assert.equal(res.json().code, 'service_unavailable')
  })
}
