// During a database outage every /v1 answer still carries the rate-limit headers: a key read
// before the outage is charged to its own quota for up to 5 minutes (stale-if-error), any other
// request to the client address (docs/product.md section 4).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { buildTestApp } from '../helpers/app.ts'
import { TEST_DATABASE_URL } from '../helpers/stores.ts'
import { cleanupStack, requireServices, schemaDatabaseUrl, tcpProxy } from '../scale/helpers.ts'

test('PostgreSQL cut: 503s carry the rate-limit headers, charged to the key it knew, else to the address', { timeout: 30_000 }, async (t) => {
  if (!await requireServices(t, ['postgres'])) return
  const cleanup = cleanupStack(t)
  const proxy = await tcpProxy(cleanup, TEST_DATABASE_URL)
  const db = await schemaDatabaseUrl(t)
  const stores = await createPostgresStores(db.url(proxy.via(TEST_DATABASE_URL)), { poolMax: 2 })
  cleanup(() => stores.close())
  const { call, makeKey, clock } = await buildTestApp(t, { stores })
  const { key } = await makeKey('customer', 'enterprise', { perMinute: 500, perDay: 5000 })
  const { key: unseen } = await makeKey('customer', 'enterprise', { perMinute: 500, perDay: 5000 })
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)

  proxy.setUp(false)
  clock.advance(2001) // past the key cache: the key must be read again, and cannot be
  const expectAnswer = async (
    options: Parameters<typeof call>[0],
    status: number,
    limit: string,
    remaining: string
  ) => {
    const res = await call(options)
    assert.equal(res.statusCode, status, `${options.method} ${options.url}: ${res.body}`)
    assert.equal(res.headers['x-ratelimit-limit'], limit)
    assert.equal(res.headers['x-ratelimit-remaining'], remaining)
    assert.ok(res.headers.ratelimit !== undefined && res.headers['ratelimit-policy'] !== undefined)
    return res
  }
  const down = await expectAnswer({ method: 'GET', url: '/v1/pets', key }, 503, '500', '498')
  assert.equal(down.json().code, 'service_unavailable')
  await expectAnswer({ method: 'POST', url: '/v1/store/orders', key, payload: { petId: 1, quantity: 1 } }, 503, '500', '497')
  // A key never read here: its quota is unknown, so the address pays, at the free quota.
  await expectAnswer({ method: 'GET', url: '/v1/pets', key: unseen }, 503, '60', '59')
  await expectAnswer({ method: 'GET', url: '/v1/pets', key: null }, 401, '60', '58')
  // The last known principal serves 5 minutes, no longer.
  clock.advance(5 * 60_000)
  await expectAnswer({ method: 'GET', url: '/v1/pets', key }, 503, '60', '59')

  proxy.setUp(true)
  const back = await call({ method: 'GET', url: '/v1/pets', key })
  assert.equal(back.statusCode, 200)
  assert.equal(back.headers['x-ratelimit-limit'], '500')
})
