// What the partner portal's Usage page reads (issue 50, section 2.2; docs/product.md 9.11): per
// UTC day the requests by outcome, `other4xx` inside `allowed`, so that allowed - other4xx,
// other4xx, limited and banned put each request in exactly one bar; and the key's own calls of
// deprecated operations with their successor and sunset. Faults caught: a charged 4xx counted
// only in allowed (or not in allowed, which the day window counts), a 429 counted as another 4xx,
// the count lost by the flush or the migration, another key's deprecated calls shown, a successor
// or sunset missing. Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

const iso = (ms: number): string => new Date(ms).toISOString()

async function keyOf (h: TestApp, payload: Record<string, unknown>): Promise<{ id: number; key: string }> {
  const res = await h.call({ method: 'POST', url: '/v1/admin/keys', payload })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

test('GET /v1/keys/me/usage answers 200 with a 404, a 400, a 403 in other4xx (and in allowed), a 429 in limited, and the key\'s own getPet calls with successor and sunset', async (t) => {
  const h = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  // Six requests a minute: the seventh is refused with 429 rate_limited.
  const mine = await keyOf(h, { role: 'customer', plan: 'enterprise', perMinute: 6, perDay: 1000 })
  const other = await keyOf(h, { role: 'customer', plan: 'free' })
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Dogs' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Rex', categoryId: category.json().id } })
  assert.equal(pet.statusCode, 201, pet.body)
  const petId: number = pet.json().id

  const statuses: number[] = []
  const call = async (method: 'GET' | 'POST', url: string, payload?: object): Promise<void> => {
    statuses.push((await h.call({ method, url, key: mine.key, ...(payload !== undefined && { payload }) })).statusCode)
  }
  await call('GET', '/v1/pets')
  await call('GET', `/v1/pets/${petId}`) // deprecated: GET /v1/pets?id= replaces it
  h.clock.advance(1000)
  await call('GET', '/v1/pets/999999') // deprecated too, and not found
  await call('GET', '/v1/pets?status=lost') // no such status
  await call('POST', '/v1/categories', { name: 'Cats' }) // a customer may not
  h.clock.advance(1000)
  await call('GET', `/v1/pets/${petId}`)
  await call('GET', '/v1/pets') // the seventh this minute
  assert.deepEqual(statuses, [200, 200, 404, 400, 403, 200, 429])
  // Another key's calls, of the same deprecated operation too, are never in mine.
  assert.equal((await h.call({ method: 'GET', url: `/v1/pets/${petId}`, key: other.key })).statusCode, 200)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets/424242', key: other.key })).statusCode, 404)

  h.clock.advance(60_000) // a new minute, so that the read is served
  // The admin's view of the key first (the holder's read is counted once answered): the same object.
  const admin = await h.call({ method: 'GET', url: `/v1/admin/keys/${mine.id}/usage?days=7` })
  const res = await h.call({ method: 'GET', url: '/v1/keys/me/usage?days=7', key: mine.key })
  assert.equal(res.statusCode, 200, res.body)
  const sunsetAt = h.config.getPetSunset.toISOString()
  const getPet = {
    operationId: 'getPet',
    method: 'GET',
    path: '/v1/pets/{petId}',
    deprecatedAt: '2026-11-21T00:00:00.000Z',
    sunsetAt,
    successor: { method: 'GET', path: '/v1/pets?id={petId}', operationId: 'listPets' }
  }
  assert.deepEqual(res.json(), {
    keyId: mine.id,
    // Six charged (the day window's used), three of them refused: bars 3 allowed, 3 other 4xx, 1 limited.
    days: [{ date: '2026-11-21', allowed: 6, limited: 1, banned: 0, mcp: 0, other4xx: 3 }],
    deprecated: [{ ...getPet, calls: 3, lastCallAt: iso(T0 + 2000) }]
  })
  assert.deepEqual(admin.json(), res.json())
  // The other key's lists its own calls only.
  const theirs = (await h.call({ method: 'GET', url: '/v1/keys/me/usage?days=7', key: other.key })).json()
  assert.deepEqual(theirs, {
    keyId: other.id,
    days: [{ date: '2026-11-21', allowed: 2, limited: 0, banned: 0, mcp: 0, other4xx: 1 }],
    deprecated: [{ ...getPet, calls: 2, lastCallAt: iso(T0 + 2000) }]
  })
  // The day window counts what `allowed` counts: the refused 4xx included, the 429 not.
  const limits = (await h.call({ method: 'GET', url: '/v1/rate_limit', key: mine.key })).json()
  const { limit, remaining } = limits.windows.day
  assert.equal(limit - remaining, 6 + 1, 'six, and the read of the usage')

  // Deprecated calls are listed over the days asked: a day later, days=1 has none of them.
  h.clock.advance(86_400_000)
  const today = (await h.call({ method: 'GET', url: '/v1/keys/me/usage?days=1', key: mine.key })).json()
  assert.deepEqual(today, { keyId: mine.id, days: [], deprecated: [] })
})
