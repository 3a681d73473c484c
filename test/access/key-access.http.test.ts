// Key lifecycle in the access check (docs/product.md section 9): an expired key answers
// 401 api_key_expired on every instance; the keys of a rotation are one quota identity (one
// minute and day count, one ban: those cases are in the rate-limit suite, rate-limit.suite.ts);
// a rotation applies at once on the instance that made it.
// Runs on SQLite and PostgreSQL, and on the memory and Redis limiters.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

const iso = (ms: number): string => new Date(ms).toISOString()

async function create (app: TestApp, payload: Record<string, unknown>) {
  const res = await app.call({ method: 'POST', url: '/v1/admin/keys', payload })
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as { id: number; key: string; expiresAt: string | null }
}

test('a key works until its expiresAt, then answers 401 api_key_expired naming the instant, with rate-limit headers counted on the address, on every instance', async (t) => {
  const a = await buildTestApp(t)
  // A second instance on the same database, with its own key cache and clock.
  const b = await buildTestApp(t, { stores: a.stores })
  const expiresAt = T0 + 60_000
  const { key } = await create(a, { role: 'customer', plan: 'pro', expiresAt: iso(expiresAt) })
  for (const app of [a, b]) {
    const res = await app.call({ method: 'GET', url: '/v1/pets', key })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['x-ratelimit-limit'], '300', 'counted on the key')
  }
  for (const app of [a, b]) {
    // Read again 1 s before the instant (the key cache then holds it past the instant)...
    app.clock.set(expiresAt - 1000)
    assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
    app.clock.set(expiresAt - 1)
    assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200, 'the last millisecond')
    // ...and refused from the instant on all the same.
    app.clock.set(expiresAt)
    const res = await app.call({ method: 'GET', url: '/v1/pets', key })
    assert.equal(res.statusCode, 401)
    assert.deepEqual(res.json(), {
      code: 'api_key_expired',
      message: `the API key expired at ${iso(expiresAt)}; use the key that replaced it, or ask an admin for a new one`,
      status: 401,
      requestId: res.json().requestId
    })
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="petstore"')
    assert.equal(res.headers['x-ratelimit-limit'], '60', 'counted on the address, at the free quota, like a revoked key')
    for (const h of ['x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']) assert.ok(res.headers[h] !== undefined, h)
    // Every operation, GET /rate_limit included.
    assert.equal((await app.call({ method: 'GET', url: '/v1/rate_limit', key })).json().code, 'api_key_expired')
  }
  // Past the key cache's lifetime too (read again from the database).
  a.clock.advance(10_000)
  assert.equal((await a.call({ method: 'GET', url: '/v1/categories', key })).json().code, 'api_key_expired')
})

test('a rotation with gracePeriodSeconds 0 stops the old key at once on this instance, though it was in the key cache', async (t) => {
  const app = await buildTestApp(t)
  const old = await create(app, { role: 'customer', plan: 'pro' })
  assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key: old.key })).statusCode, 200)
  const successor = (await app.call({ method: 'POST', url: `/v1/admin/keys/${old.id}/rotate`, payload: { gracePeriodSeconds: 0 } })).json()
  assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key: old.key })).json().code, 'api_key_expired')
  assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key: successor.key })).statusCode, 200)
})

test('the successor of a rotated customer key is the same customer: it reads and cancels the orders placed with the old key, and an Idempotency-Key retry through it replays', async (t) => {
  const app = await buildTestApp(t)
  const category = (await app.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })).json().id
  const pet = (await app.call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: category } })).json().id
  assert.equal((await app.call({ method: 'PUT', url: `/v1/store/inventory/${pet}`, payload: { quantity: 10 } })).statusCode, 200)
  const old = await create(app, { role: 'customer', plan: 'pro' })
  const headers = { 'idempotency-key': 'order-7f3a' }
  const placed = await app.call({ method: 'POST', url: '/v1/store/orders', key: old.key, headers, payload: { petId: pet, quantity: 2 } })
  assert.equal(placed.statusCode, 201)
  const order = placed.json()
  const successor = (await app.call({ method: 'POST', url: `/v1/admin/keys/${old.id}/rotate`, payload: { gracePeriodSeconds: 60 } })).json()
  // The client switches keys and retries the same create: the first result comes back.
  const retried = await app.call({ method: 'POST', url: '/v1/store/orders', key: successor.key, headers, payload: { petId: pet, quantity: 2 } })
  assert.equal(retried.statusCode, 201)
  assert.deepEqual(retried.json(), order)
  assert.deepEqual((await app.call({ method: 'GET', url: `/v1/store/orders/${order.id}`, key: successor.key })).json(), order)
  assert.deepEqual((await app.call({ method: 'GET', url: '/v1/store/orders', key: successor.key })).json(), [order])
  // Another customer still sees nothing of it.
  const other = await create(app, { role: 'customer', plan: 'pro' })
  assert.equal((await app.call({ method: 'GET', url: `/v1/store/orders/${order.id}`, key: other.key })).statusCode, 404)
  assert.equal((await app.call({ method: 'DELETE', url: `/v1/store/orders/${order.id}`, key: successor.key })).statusCode, 204)
  assert.equal((await app.call({ method: 'GET', url: `/v1/store/inventory/${pet}` })).json().quantity, 10, 'one order placed, then cancelled')
})

// Fault caught: the keys of a rotated pair are one caller for quotas, bans and orders, but a
// revocation or a role change reached only the key it named, so a leaked successor's revocation
// left the old key an admin for the rest of its grace period.
test('one caller, one fate: revoking either key of a rotated pair revokes both, and a role change on one applies to both', async (t) => {
  const app = await buildTestApp(t)
  const pair = async () => {
    const k1 = await create(app, { role: 'admin', plan: 'pro' })
    const rotated = await app.call({
      method: 'POST',
      url: `/v1/admin/keys/${k1.id}/rotate`,
      payload: { gracePeriodSeconds: 3600 }
    })
    const k2 = rotated.json() as { id: number; key: string }
    // Both in this instance's key cache before the change.
    for (const k of [k1, k2]) assert.equal((await app.call({ method: 'GET', url: '/v1/admin/keys?limit=1', key: k.key })).statusCode, 200)
    return { k1, k2 }
  }
  const stored = async (id: number) => (await app.stores.keys.getKey(id))!

  const a = await pair()
  assert.equal((await app.call({ method: 'DELETE', url: `/v1/admin/keys/${a.k2.id}` })).statusCode, 204)
  for (const k of [a.k1, a.k2]) {
    const res = await app.call({ method: 'GET', url: '/v1/pets', key: k.key })
    assert.equal(res.statusCode, 401, 'revoking K2 refuses K1 too')
    assert.notEqual((await stored(k.id)).revokedAt, null)
  }

  const b = await pair()
  assert.equal((await app.call({ method: 'DELETE', url: `/v1/admin/keys/${b.k1.id}` })).statusCode, 204)
  assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key: b.k2.key })).statusCode, 401, 'revoking K1 refuses K2 too')
  assert.notEqual((await stored(b.k2.id)).revokedAt, null)

  const c = await pair()
  const patched = await app.call({ method: 'PATCH', url: `/v1/admin/keys/${c.k2.id}`, payload: { role: 'customer', plan: 'business' } })
  assert.equal(patched.statusCode, 200, patched.body)
  const demoted = await app.call({ method: 'GET', url: '/v1/admin/keys?limit=1', key: c.k1.key })
  assert.equal(demoted.statusCode, 403, 'a role change on K2 demotes K1')
  assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key: c.k1.key })).headers['x-ratelimit-limit'], '1000', 'and gives it the plan')
  const view = (await app.call({ method: 'GET', url: `/v1/admin/keys/${c.k1.id}` })).json()
  assert.equal(view.role, 'customer')
  assert.equal(view.plan, 'business')

  // A key outside the chain is untouched.
  assert.equal((await app.call({ method: 'GET', url: '/v1/admin/keys?limit=1' })).statusCode, 200)
})
