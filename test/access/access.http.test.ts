// API keys, roles and plan rate limits through HTTP (docs/product.md sections 3 and 4).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AppError } from '../../src/errors.ts'
import { buildTestApp, T0 } from '../helpers/app.ts'

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
    413: await call({ method: 'POST', url: '/v1/categories', key: keys.staff, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'x'.repeat(70_000) }) }),
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

test('free plan: the 61st request in a minute is 429 rate_limited with exact headers and Retry-After', async (t) => {
  const { call, keys, clock } = await buildTestApp(t, { plan: 'free' })
  const minuteEnd = Math.ceil((T0 + 1) / 60_000) * 60_000 // T0 is 12:00:30, so 12:01:00
  for (let i = 1; i <= 60; i++) {
    const res = await call({ method: 'GET', url: '/v1/pets', key: keys.customer })
    assert.equal(res.statusCode, 200, `request ${i}`)
    assert.equal(res.headers['x-ratelimit-limit'], '60')
    assert.equal(res.headers['x-ratelimit-remaining'], String(60 - i))
    assert.equal(res.headers['x-ratelimit-reset'], String(minuteEnd / 1000))
  }
  const refused = await call({ method: 'GET', url: '/v1/pets', key: keys.customer })
  assert.equal(refused.statusCode, 429)
  assert.equal(refused.json().code, 'rate_limited')
  assert.equal(refused.headers['retry-after'], '30')
  assert.equal(refused.headers['x-ratelimit-remaining'], '0')
  assert.equal(refused.headers['ratelimit-policy'], '"minute";q=60;w=60, "day";q=1000;w=86400')
  assert.equal(refused.headers.ratelimit, '"minute";r=0;t=30, "day";r=940;t=43170')
  clock.set(minuteEnd)
  const next = await call({ method: 'GET', url: '/v1/pets', key: keys.customer })
  assert.equal(next.statusCode, 200)
  assert.equal(next.headers['x-ratelimit-remaining'], '59')
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

test('GET /v1/rate_limit costs nothing and reports plan, role, both windows and the ban', async (t) => {
  const { call, keys } = await buildTestApp(t, { plan: 'pro' })
  await call({ method: 'GET', url: '/v1/pets', key: keys.customer })
  const a = await call({ method: 'GET', url: '/v1/rate_limit', key: keys.customer })
  const b = await call({ method: 'GET', url: '/v1/rate_limit', key: keys.customer })
  assert.equal(a.statusCode, 200)
  assert.deepEqual(a.json(), {
    plan: 'pro', role: 'customer',
    windows: { minute: { limit: 300, remaining: 299, reset: Date.UTC(2026, 10, 21, 12, 1) / 1000 }, day: { limit: 10000, remaining: 9999, reset: Date.UTC(2026, 10, 22) / 1000 } },
    ban: null
  })
  assert.deepEqual(b.json(), a.json())
})

test('a key that keeps calling after 429 is banned on the 21st refused request, recorded, and lifted by an admin', async (t) => {
  const { call, makeKey, stores, clock } = await buildTestApp(t)
  const { id, key } = await makeKey('customer', 'free')
  for (let i = 0; i < 60; i++) await call({ method: 'GET', url: '/v1/pets', key })
  const codes: string[] = []
  for (let i = 1; i <= 21; i++) codes.push((await call({ method: 'GET', url: '/v1/pets', key })).json().code)
  assert.deepEqual(codes, [...Array(20).fill('rate_limited'), 'api_key_banned'])
  const banned = await call({ method: 'GET', url: '/v1/categories', key })
  assert.equal(banned.statusCode, 429)
  assert.equal(banned.json().code, 'api_key_banned')
  assert.equal(banned.headers['retry-after'], String(15 * 60))
  const record = await stores.keys.activeBan(id, clock.now())
  assert.ok(record !== null)
  assert.equal(record.endsAt - record.startedAt, 15 * 60 * 1000)
  const status = await call({ method: 'GET', url: '/v1/rate_limit', key })
  assert.equal(status.statusCode, 200)
  assert.equal(status.json().ban.until, new Date(record.endsAt).toISOString())
  const view = await call({ method: 'GET', url: `/v1/admin/keys/${id}` })
  assert.equal(view.json().ban.until, new Date(record.endsAt).toISOString())

  assert.equal((await call({ method: 'DELETE', url: `/v1/admin/keys/${id}/ban` })).statusCode, 204)
  assert.equal(await stores.keys.activeBan(id, clock.now()), null)
  // The ban is gone at once; the minute window is still spent, so the answer is rate_limited.
  const after = await call({ method: 'GET', url: '/v1/pets', key })
  assert.equal(after.json().code, 'rate_limited')
  clock.advance(60_000)
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
})

// Fault caught: a failed ban record turned the 429 into a 503, and the ban's record was lost.
test('a ban whose record in the database fails still answers 429 api_key_banned, stays in force, and is recorded on a later request', async (t) => {
  const { call, makeKey, stores, clock } = await buildTestApp(t)
  const { id, key } = await makeKey('customer', 'free')
  const record = stores.keys.recordBan.bind(stores.keys)
  let failing = true
  stores.keys.recordBan = async (ban) => {
    if (failing) throw new AppError('service_unavailable', 'the database is unavailable')
    return record(ban)
  }
  for (let i = 0; i < 60; i++) await call({ method: 'GET', url: '/v1/pets', key })
  const codes: string[] = []
  for (let i = 1; i <= 21; i++) codes.push((await call({ method: 'GET', url: '/v1/pets', key })).json().code)
  assert.deepEqual(codes, [...Array(20).fill('rate_limited'), 'api_key_banned'])
  assert.equal(await stores.keys.activeBan(id, clock.now()), null, 'not recorded yet')
  clock.advance(61_000) // the minute window reset: only the ban refuses now
  const banned = await call({ method: 'GET', url: '/v1/pets', key })
  assert.equal(banned.json().code, 'api_key_banned')

  failing = false
  clock.advance(5000) // the retry interval: the next charged request records it
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).json().code, 'api_key_banned')
  let recorded = await stores.keys.activeBan(id, clock.now())
  for (let i = 0; i < 100 && recorded === null; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    recorded = await stores.keys.activeBan(id, clock.now())
  }
  assert.ok(recorded !== null, 'the ban is recorded once the database answers')
  assert.equal(recorded.endsAt - recorded.startedAt, 15 * 60 * 1000)
})

test('the plaintext key is stored nowhere: only its hash is in the database', async (t) => {
  const { call, stores } = await buildTestApp(t)
  const created = await call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'free', name: 'mobile app' } })
  assert.equal(created.statusCode, 201)
  const body = created.json()
  assert.match(body.key, /^psk_[A-Za-z0-9_-]{43}$/)
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

test('an enterprise key gets exactly its custom quota', async (t) => {
  const { call, makeKey } = await buildTestApp(t)
  const { key } = await makeKey('customer', 'enterprise', { perMinute: 3, perDay: 100 })
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await call({ method: 'GET', url: '/v1/pets', key })).statusCode)
  assert.deepEqual(statuses, [200, 200, 200, 429])
})
