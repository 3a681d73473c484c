// API keys, roles and plan rate limits through HTTP (docs/product.md sections 3 and 4). The
// per-key quota cases are the rate-limit suite (rate-limit.suite.ts), run here over REST and by
// test/mcp/rate-limit.mcp.http.test.ts over MCP; what only REST can show (the headers of every
// kind of answer, the client address's count) stays here.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'
import { rateLimitSuite } from './rate-limit.suite.ts'

const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']

test('a missing key is 401 unauthenticated with WWW-Authenticate; unknown and revoked keys too', async (t) => {
  const { call, makeKey, clock } = await buildTestApp(t)
  const missing = await call({ method: 'GET', url: '/v1/pets', key: null })
  assert.equal(missing.statusCode, 401)
  assert.equal(missing.json().code, 'unauthenticated')
  assert.equal(missing.headers['www-authenticate'], 'Bearer realm="petstore"')
  const unknown = await call({ method: 'GET', url: '/v1/pets', key: 'psk_not-a-key' })
  assert.equal(unknown.statusCode, 401)
  const { id, key } = await makeKey('customer')
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  assert.equal((await call({ method: 'DELETE', url: `/v1/admin/keys/${id}` })).statusCode, 204)
  clock.advance(2001) // the key cache holds a resolved key at most 2 s
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).statusCode, 401)
})

test('Authorization: Bearer KEY is accepted like X-API-Key', async (t) => {
  const { call, keys } = await buildTestApp(t)
  const res = await call({ method: 'GET', url: '/v1/pets', key: null, headers: { authorization: `Bearer ${keys.customer}` } })
  assert.equal(res.statusCode, 200)
})

// The whole route table, each operation in every spelling, with exact statuses: access-routes.test.ts.

test('every kind of response under /v1 carries the rate-limit headers, exposed to browsers (a request with an Origin)', async (t) => {
  const { call, keys, stores } = await buildTestApp(t, { plan: 'free' })
  const kinds = {
    200: await call({ method: 'GET', url: '/v1/pets', key: keys.customer, headers: { origin: 'https://shop.example' } }),
    401: await call({ method: 'GET', url: '/v1/pets', key: null }),
    403: await call({ method: 'POST', url: '/v1/pets', key: keys.customer, payload: {} }),
    404: await call({ method: 'GET', url: '/v1/no/such/path', key: keys.customer }),
    405: await call({ method: 'PATCH', url: '/v1/pets', key: keys.customer, payload: {} }),
    413: await call({
      method: 'POST',
      url: '/v1/categories',
      key: keys.staff,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(70_000) })
    }),
    415: await call({ method: 'POST', url: '/v1/categories', key: keys.staff, headers: { 'content-type': 'text/plain' }, payload: 'x' }),
    preflight: await call({ method: 'OPTIONS', url: '/v1/pets', key: null, headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key,content-type' } })
  }
  stores.pets.listPets = async () => { throw new Error('boom') }
  const failed = await call({ method: 'GET', url: '/v1/pets', key: keys.customer })
  assert.equal(failed.statusCode, 500)
  for (const [kind, res] of Object.entries({ ...kinds, 500: failed })) {
    if (kind !== 'preflight') assert.equal(String(res.statusCode), kind)
    for (const h of RATE_HEADERS) assert.ok(res.headers[h] !== undefined, `${kind}: ${h} missing`)
  }
  assert.equal(kinds.preflight.statusCode, 204)
  assert.match(String(kinds.preflight.headers['access-control-allow-headers']), /X-API-Key/i)
  const exposed = String(kinds[200].headers['access-control-expose-headers'])
  for (const h of [...RATE_HEADERS, 'retry-after', 'request-id', 'etag', 'link', 'location', 'deprecation', 'sunset', 'warning']) {
    assert.match(exposed.toLowerCase(), new RegExp(`(^|, )${h}(,|$)`), `${h} not exposed`)
  }
})

test('requests without a valid key are counted per client address at the free quotas', async (t) => {
  const { call, keys } = await buildTestApp(t)
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key: keys.customer })).statusCode, 200)
  for (let i = 0; i < 60; i++) assert.equal((await call({ method: 'GET', url: '/v1/pets', key: 'psk_guess' + i })).statusCode, 401)
  const throttled = await call({ method: 'GET', url: '/v1/pets', key: 'psk_guess-again' })
  assert.equal(throttled.statusCode, 429)
  assert.equal(throttled.json().code, 'rate_limited')
  // A valid key this instance knows is counted on its own, not on the address (rule 4.11).
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key: keys.customer })).statusCode, 200)
})

test('the plaintext key is stored nowhere: only its hash is in the database', async (t) => {
  const { call, stores } = await buildTestApp(t)
  const created = await call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'free', name: 'mobile app' } })
  assert.equal(created.statusCode, 201)
  const body = created.json()
  assert.match(body.key, /^psk_[0-9A-Za-z]{49}$/)
  assert.equal(created.headers['cache-control'], 'no-store')
  const record = await stores.keys.getKey(body.id)
  assert.ok(record !== null)
  assert.ok(!JSON.stringify(record).includes(body.key))
  assert.ok((await stores.keys.findKeyByHash(body.key)) === null, 'the key itself is not a lookup value')
  const listed = await call({ method: 'GET', url: '/v1/admin/keys' })
  assert.ok(!listed.body.includes(body.key))
})

test('admin keys API: enterprise needs both quotas, other plans refuse them; PATCH changes the plan', async (t) => {
  const { call } = await buildTestApp(t)
  const refused = await call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'free', perMinute: 5, perDay: 50 } })
  assert.equal(refused.statusCode, 400)
  const missing = await call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'enterprise', perMinute: 5 } })
  assert.equal(missing.statusCode, 400)
  const ent = await call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'staff', plan: 'enterprise', perMinute: 5, perDay: 50 } })
  assert.equal(ent.statusCode, 201)
  assert.deepEqual(ent.json().limits, { perMinute: 5, perDay: 50 })
  const patched = await call({ method: 'PATCH', url: `/v1/admin/keys/${ent.json().id}`, payload: { plan: 'business' } })
  assert.equal(patched.statusCode, 200)
  assert.deepEqual(patched.json().limits, { perMinute: 1000, perDay: 100000 })
  assert.equal((await call({ method: 'GET', url: '/v1/admin/keys/999' })).statusCode, 404)
})

rateLimitSuite('rest')
