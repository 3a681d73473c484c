// The admin operations the operator console needs (issue 23, docs/product.md section 10): a
// key's windows read without charging it, the key list's filters and search, the ban history,
// and the calls of deprecated operations per key and UTC day, written in the usage flush. Runs
// on SQLite and PostgreSQL (PETSTORE_TEST_ENGINE, like every *.http.test.ts) and both limiters.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { utcDay } from '../../src/accounts/keys.rules.ts'
import type { KeyStore } from '../../src/accounts/keys.store.ts'
import { loadSampleData } from '../../src/sample-data.ts'
import { openTestStores } from '../helpers/stores.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

const DAY = 86_400_000
const iso = (ms: number): string => new Date(ms).toISOString()

async function create (
  app: TestApp,
  payload: Record<string, unknown>
): Promise<{ id: number; key: string; prefix: string }> {
  const res = await app.call({ method: 'POST', url: '/v1/admin/keys', payload })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

const ids = (res: { json (): unknown }): number[] => (res.json() as { id: number }[]).map((k) => k.id)

// ---- GET /v1/admin/keys/{keyId}/rate_limit --------------------------------------------------

test('rate_limit shows the key\'s used and remaining requests, and reading it charges the key nothing', async (t) => {
  // Catches: consuming instead of peeking (used would grow with each read), a wrong subject
  // (a rotated key's windows are its chain's), used/remaining swapped.
  const app = await buildTestApp(t)
  const { id, key } = await create(app, { role: 'customer', plan: 'free', name: 'windows' })
  for (let i = 0; i < 3; i++) assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  const reset = {
    minute: Math.ceil((Math.floor(T0 / 60_000) + 1) * 60_000 / 1000),
    day: Math.ceil((Math.floor(T0 / DAY) + 1) * DAY / 1000)
  }
  const expected = {
    keyId: id,
    subject: `key:${id}`,
    windows: {
      minute: { limit: 60, used: 3, remaining: 57, reset: reset.minute },
      day: { limit: 1000, used: 3, remaining: 997, reset: reset.day }
    },
    ban: null
  }
  for (let i = 0; i < 3; i++) {
    const res = await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/rate_limit` })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), expected, `read ${i + 1} sees the same counts`)
  }
  // The key's own view agrees: still 57 left before its next request.
  const own = await app.call({ method: 'GET', url: '/v1/rate_limit', key })
  assert.equal(own.json().windows.minute.remaining, 57)

  // The successor of a rotated key shares its windows.
  const rotated = await app.call({ method: 'POST', url: `/v1/admin/keys/${id}/rotate`, payload: {} })
  const successor = rotated.json().id as number
  const next = (await app.call({ method: 'GET', url: `/v1/admin/keys/${successor}/rate_limit` })).json()
  assert.equal(next.subject, `key:${id}`)
  assert.equal(next.windows.day.used, 3)

  assert.equal((await app.call({ method: 'GET', url: '/v1/admin/keys/999999/rate_limit' })).json().code, 'not_found')
  const asCustomer = await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/rate_limit`, role: 'customer' })
  assert.equal(asCustomer.statusCode, 403)
})

test('rate_limit shows a ban in force on the key', async (t) => {
  // Catches: reading the ban from somewhere the limiter does not hold it.
  const app = await buildTestApp(t)
  const { id, key } = await create(app, { role: 'customer', plan: 'free' })
  // 60 allowed, then 21 refusals inside the wait period: the 21st starts a ban.
  for (let i = 0; i < 60 + 21; i++) await app.app.inject({ method: 'GET', url: '/v1/pets', headers: { 'x-api-key': key } })
  const view = (await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/rate_limit` })).json()
  assert.notEqual(view.ban, null)
  assert.equal(view.ban.until, iso(T0 + 15 * 60_000))
  assert.equal(view.windows.minute.used, 60)
  assert.equal(view.windows.minute.remaining, 0)
})

// ---- GET /v1/admin/keys filters ----------------------------------------------------------------

test('the key list filters by status, role and plan, searches name and prefix, and Link keeps the filters', async (t) => {
  // Catches: a status rule that differs from keys.status.ts (the order revoked, rotated,
  // expired, banned, expiring, active), a ban on another key of the chain missed, LIKE
  // wildcards taken from the search, a next link that drops the filters.
  const app = await buildTestApp(t)
  const [customerId, staffId, adminId] = (await app.call({ method: 'GET', url: '/v1/admin/keys' })).json().map((k: { id: number }) => k.id)
  const expiring = await create(app, { role: 'customer', plan: 'pro', name: 'Expiring shop', expiresAt: iso(T0 + 3 * DAY) })
  const later = await create(app, { role: 'customer', plan: 'pro', name: 'Later 100%_shop', expiresAt: iso(T0 + 30 * DAY) })
  const expired = await create(app, { role: 'staff', plan: 'free', name: 'Old', expiresAt: iso(T0 + 60_000) })
  const revoked = await create(app, { role: 'customer', plan: 'free', name: 'Gone' })
  assert.equal((await app.call({ method: 'DELETE', url: `/v1/admin/keys/${revoked.id}` })).statusCode, 204)
  const old = await create(app, { role: 'customer', plan: 'business', name: 'Rotating partner' })
  const successor = (await app.call({
    method: 'POST',
    url: `/v1/admin/keys/${old.id}/rotate`,
    payload: { gracePeriodSeconds: 3600 }
  })).json() as { id: number }
  const banned = await create(app, { role: 'customer', plan: 'free', name: 'Noisy' })
  // A ban recorded through the key's chain: the successor of a banned key is banned too.
  await app.stores.keys.recordBan({
    keyId: banned.id,
    subject: `key:${banned.id}`,
    startedAt: T0,
    endsAt: T0 + 15 * 60_000 + 120_000,
    reason: 'test'
  })
  const lifted = await create(app, { role: 'customer', plan: 'free', name: 'Pardoned' })
  await app.stores.keys.recordBan({ keyId: lifted.id, subject: `key:${lifted.id}`, startedAt: T0, endsAt: T0 + DAY, reason: 'test' })
  assert.equal((await app.call({ method: 'DELETE', url: `/v1/admin/keys/${lifted.id}/ban` })).statusCode, 204)
  app.clock.advance(120_000) // the short-lived key has expired now

  const list = async (query: string) => {
    const res = await app.call({ method: 'GET', url: `/v1/admin/keys?${query}` })
    assert.equal(res.statusCode, 200, res.body)
    return ids(res)
  }
  assert.deepEqual(await list('status=active'), [customerId, staffId, adminId, later.id, successor.id, lifted.id])
  assert.deepEqual(await list('status=expiring'), [expiring.id])
  assert.deepEqual(await list('status=expired'), [expired.id])
  assert.deepEqual(await list('status=revoked'), [revoked.id])
  assert.deepEqual(await list('status=rotated'), [old.id])
  assert.deepEqual(await list('status=banned'), [banned.id])
  assert.deepEqual(await list('role=staff'), [staffId, expired.id])
  assert.deepEqual(await list('plan=pro'), [expiring.id, later.id])
  assert.deepEqual(await list('plan=free&role=staff'), [expired.id])
  assert.deepEqual(await list('q=PARTNER'), [old.id, successor.id], 'the name, case-insensitively')
  assert.deepEqual(await list('q=100%25_'), [later.id], '% and _ are literal')
  assert.deepEqual(await list('q=_'), [later.id])
  assert.deepEqual(await list(`q=${encodeURIComponent(banned.prefix.slice(0, 10))}`), [banned.id], 'the start of the prefix')
  assert.deepEqual(await list(`q=${encodeURIComponent(banned.prefix.slice(0, 10).toLowerCase())}&status=revoked`), [])

  // Paging through Link: the next link keeps status and the cursor moves on.
  const first = await app.call({ method: 'GET', url: '/v1/admin/keys?status=active&limit=4' })
  assert.deepEqual(ids(first), [customerId, staffId, adminId, later.id])
  const link = /^<([^>]+)>; rel="next"$/.exec(first.headers.link as string)
  assert.ok(link !== null, String(first.headers.link))
  assert.match(link[1]!, /status=active/)
  const second = await app.call({ method: 'GET', url: `/v1/admin/keys${link[1]!.slice(link[1]!.indexOf('?'))}` })
  assert.deepEqual(ids(second), [successor.id, lifted.id])
  assert.equal(second.headers.link, undefined)

  // Refused: an unknown status, an empty search, a control character.
  for (const query of ['status=asleep', 'q=', 'q=%01', 'role=root']) {
    const res = await app.call({ method: 'GET', url: `/v1/admin/keys?${query}` })
    assert.equal(res.statusCode, 400, query)
    assert.equal(res.json().code, 'validation_failed')
  }
})

// ---- GET /v1/admin/keys/{keyId}/bans -----------------------------------------------------------

test('bans lists the chain\'s bans, latest first, with their lifts', async (t) => {
  // Catches: a history limited to the key itself (a rotated key's ban is its chain's), lifted
  // bans dropped.
  const app = await buildTestApp(t)
  const { id } = await create(app, { role: 'customer', plan: 'free' })
  await app.stores.keys.recordBan({ keyId: id, subject: `key:${id}`, startedAt: T0, endsAt: T0 + 15 * 60_000, reason: 'first' })
  app.clock.advance(60_000)
  assert.equal((await app.call({ method: 'DELETE', url: `/v1/admin/keys/${id}/ban` })).statusCode, 204)
  const successor = (await app.call({ method: 'POST', url: `/v1/admin/keys/${id}/rotate`, payload: {} })).json().id as number
  await app.stores.keys.recordBan({
    keyId: successor,
    subject: `key:${id}`,
    startedAt: T0 + 3_600_000,
    endsAt: T0 + 3_600_000 + 30 * 60_000,
    reason: 'second'
  })
  const res = await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/bans` })
  assert.equal(res.statusCode, 200, res.body)
  assert.deepEqual(res.json(), {
    keyId: id,
    bans: [
      {
        keyId: successor,
        startedAt: iso(T0 + 3_600_000),
        until: iso(T0 + 3_600_000 + 30 * 60_000),
        liftedAt: null,
        reason: 'second'
      },
      { keyId: id, startedAt: iso(T0), until: iso(T0 + 15 * 60_000), liftedAt: iso(T0 + 60_000), reason: 'first' }
    ]
  })
  assert.deepEqual((await app.call({ method: 'GET', url: `/v1/admin/keys/${successor}/bans` })).json().bans.length, 2)
  assert.equal((await app.call({ method: 'GET', url: '/v1/admin/keys/999999/bans' })).statusCode, 404)
})

// ---- GET /v1/admin/deprecations ------------------------------------------------------------------

function countDeprecatedWrites (keys: KeyStore): { batches: number } {
  const counter = { batches: 0 }
  const record = keys.recordUsage.bind(keys)
  keys.recordUsage = async (batch) => {
    if ((batch.deprecated ?? []).length > 0) counter.batches++
    return record(batch)
  }
  return counter
}

test('calls of a deprecated operation are stored per key and UTC day in the usage flush, and listed with the sunset', async (t) => {
  // Catches: a write per request (the rows appear only at the flush, in one batch), counts set
  // instead of added, days mixed up, calls without a valid key counted for a key, the last call
  // not moving forward.
  const stores = await openTestStores(t)
  await loadSampleData(stores)
  const writes = countDeprecatedWrites(stores.keys)
  const app = await buildTestApp(t, { stores, deps: { usageFlushMs: 0 } })
  const a = await create(app, { role: 'customer', plan: 'pro', name: 'Old client' })
  const b = await create(app, { role: 'customer', plan: 'pro', name: 'Newer client' })
  const yesterday = T0 - DAY
  app.clock.set(yesterday)
  for (let i = 0; i < 2; i++) assert.equal((await app.call({ method: 'GET', url: '/v1/pets/1', key: a.key })).statusCode, 200)
  app.clock.set(T0)
  for (let i = 0; i < 3; i++) await app.call({ method: 'GET', url: '/v1/pets/1', key: a.key })
  app.clock.set(T0 + 5_000)
  await app.call({ method: 'GET', url: '/v1/pets/2', key: b.key })
  await app.call({ method: 'GET', url: '/v1/pets/1', key: null })
  await app.call({ method: 'GET', url: '/v1/pets', key: b.key })
  assert.equal(writes.batches, 0, 'nothing written per request')
  assert.deepEqual(await stores.keys.deprecatedCalls(utcDay(yesterday)), [])

  const res = await app.call({ method: 'GET', url: '/v1/admin/deprecations' })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(writes.batches, 1, 'one flush wrote them all')
  assert.deepEqual(res.json(), {
    from: utcDay(T0 - 29 * DAY),
    operations: [{
      operationId: 'getPet',
      method: 'GET',
      path: '/v1/pets/{petId}',
      deprecatedAt: '2026-11-21T00:00:00.000Z',
      sunsetAt: app.config.getPetSunset.toISOString(),
      successor: { method: 'GET', path: '/v1/pets?id={petId}', operationId: 'listPets' },
      keys: [
        {
          keyId: b.id, name: 'Newer client', prefix: b.prefix, calls: 1, lastCallAt: iso(T0 + 5_000),
          days: [{ date: utcDay(T0), calls: 1 }]
        },
        {
          keyId: a.id, name: 'Old client', prefix: a.prefix, calls: 5, lastCallAt: iso(T0),
          days: [{ date: utcDay(yesterday), calls: 2 }, { date: utcDay(T0), calls: 3 }]
        }
      ]
    }]
  })

  // Counts are added: more calls after the flush land on the same rows.
  await app.call({ method: 'GET', url: '/v1/pets/1', key: a.key })
  const again = (await app.call({ method: 'GET', url: '/v1/admin/deprecations' })).json()
  assert.equal(again.operations[0].keys.find((k: { keyId: number }) => k.keyId === a.id).calls, 6)
  const rows = await stores.keys.deprecatedCalls(utcDay(T0))
  assert.deepEqual(
    rows.filter((r) => r.keyId === a.id),
    [{ operation: 'getPet', keyId: a.id, day: utcDay(T0), calls: 4, lastCallAt: T0 + 5_000 }]
  )

  // Beyond 30 days, a day drops out of the view.
  app.clock.set(yesterday + 30 * DAY)
  const later = (await app.call({ method: 'GET', url: '/v1/admin/deprecations' })).json()
  assert.deepEqual(
    later.operations[0].keys.find((k: { keyId: number }) => k.keyId === a.id).days,
    [{ date: utcDay(T0), calls: 4 }]
  )
})
