// A change made through the admin API bites at once on the instance that made it, and on the
// others at once through Redis, else within the 2 s key cache (docs/product.md section 3).
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { createRedisKeyEvents } from '../../src/infra.ts'
import { localKeyEvents } from '../../src/access/key-events.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { buildTestApp } from '../helpers/app.ts'
import { connectTestRedis, testRedisReason } from '../helpers/limiter.ts'
import { requireService } from '../helpers/services.ts'

test('a revocation through the API is 401 on the very next request of the same instance, with no time passing', async (t) => {
  const { call, makeKey } = await buildTestApp(t)
  const { id, key } = await makeKey('customer')
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200) // cached now
  assert.equal((await call({ method: 'DELETE', url: `/v1/admin/keys/${id}` })).statusCode, 204)
  const refused = await call({ method: 'GET', url: '/v1/pets', key })
  assert.equal(refused.statusCode, 401)
  assert.equal(refused.json().message, 'the API key is not valid (unknown or revoked)')
})

test('a role or plan change through the API applies to the very next request of the same instance', async (t) => {
  const { call, makeKey } = await buildTestApp(t)
  const { id, key } = await makeKey('customer', 'free')
  assert.equal((await call({ method: 'POST', url: '/v1/categories', key, payload: { name: 'Dogs' } })).statusCode, 403)
  assert.equal((await call({ method: 'PATCH', url: `/v1/admin/keys/${id}`, payload: { role: 'staff', plan: 'pro' } })).statusCode, 200)
  const created = await call({ method: 'POST', url: '/v1/categories', key, payload: { name: 'Dogs' } })
  assert.equal(created.statusCode, 201)
  assert.equal(created.headers['x-ratelimit-limit'], '300', 'the pro quota, at once')
})

test('another instance without Redis: the change bites within the 2 s key cache, not later', async (t) => {
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const a = await buildTestApp(t, { stores })
  const b = await buildTestApp(t, { stores, deps: { keyEvents: localKeyEvents() } })
  const { id, key } = await a.makeKey('customer')
  assert.equal((await b.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  assert.equal((await a.call({ method: 'DELETE', url: `/v1/admin/keys/${id}` })).statusCode, 204)
  assert.equal((await b.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200, 'B still holds it')
  b.clock.advance(2001)
  assert.equal((await b.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 401)
})

test('another instance with Redis: a revocation and a role change reach it at once, through pub/sub', async (t) => {
  if (!requireService(t, await testRedisReason())) return
  const channel = `test:${randomUUID()}:keys:changed`
  const clients = [await connectTestRedis(), await connectTestRedis()]
  const events = clients.map((client) => createRedisKeyEvents(client, channel))
  t.after(async () => {
    for (const e of events) await e.close()
    for (const c of clients) c.disconnect()
  })
  await Promise.all(events.map((e) => e.ready))
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const a = await buildTestApp(t, { stores, deps: { keyEvents: events[0]! } })
  const b = await buildTestApp(t, { stores, deps: { keyEvents: events[1]! } })
  const heard = (): Promise<number> => new Promise((resolve) => { events[1]!.subscribe(resolve) })

  const { id, key } = await a.makeKey('customer')
  assert.equal((await b.call({ method: 'POST', url: '/v1/categories', key, payload: { name: 'Dogs' } })).statusCode, 403) // cached on B
  let message = heard()
  assert.equal((await a.call({ method: 'PATCH', url: `/v1/admin/keys/${id}`, payload: { role: 'staff' } })).statusCode, 200)
  assert.equal(await message, id)
  assert.equal((await b.call({ method: 'POST', url: '/v1/categories', key, payload: { name: 'Cats' } })).statusCode, 201, 'no clock advance on B')

  message = heard()
  assert.equal((await a.call({ method: 'DELETE', url: `/v1/admin/keys/${id}` })).statusCode, 204)
  assert.equal(await message, id)
  assert.equal((await b.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 401, 'no clock advance on B')
})
