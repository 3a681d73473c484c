// Key lifecycle through HTTP (docs/product.md section 9): expiry, rotation with a grace period and
// one quota identity, usage per key and UTC day, lastUsedAt, and no database write per request.
// Runs on SQLite and PostgreSQL (PETSTORE_TEST_ENGINE) and on the memory and Redis limiters
// (PETSTORE_TEST_LIMITER).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { utcDay } from '../../src/accounts/keys.rules.ts'
import { startServer } from '../../src/server.ts'
import { systemClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { KeyStore } from '../../src/accounts/keys.store.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'
import { tempDir } from '../helpers/temp.ts'

const iso = (ms: number): string => new Date(ms).toISOString()
const DAY = 86_400_000

/** The key view fields a fresh key has. */
const FRESH = {
  format: 'checksummed', revokedAt: null, expiresAt: null, replaces: null, replacedBy: null,
  lastUsedAt: null, scopes: null, ban: null
}

async function create (app: TestApp, payload: Record<string, unknown>) {
  const res = await app.call({ method: 'POST', url: '/v1/admin/keys', payload })
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as { id: number; key: string; expiresAt: string | null }
}

// ---- expiry -------------------------------------------------------------------------------

test('POST /v1/admin/keys with a future expiresAt answers 201 and the key view shows it', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'pro', name: 'partner', expiresAt: '2026-12-01T00:00:00Z' } })
  assert.equal(res.statusCode, 201)
  const body = res.json()
  assert.deepEqual(body, {
    id: body.id, name: 'partner', role: 'customer', plan: 'pro', limits: { perMinute: 300, perDay: 10000 }, prefix: body.key.slice(0, 16),
    createdAt: iso(T0), ...FRESH, expiresAt: '2026-12-01T00:00:00.000Z', key: body.key
  })
  const view = await app.call({ method: 'GET', url: `/v1/admin/keys/${body.id}` })
  assert.equal(view.json().expiresAt, '2026-12-01T00:00:00.000Z')
})

test('POST /v1/admin/keys answers 400 validation_failed for an expiresAt now, in the past or not a date-time', async (t) => {
  const app = await buildTestApp(t)
  for (const [expiresAt, message] of [
    [iso(T0), `expiresAt must be in the future (it is ${iso(T0)}, now is ${iso(T0)})`],
    ['2020-01-01T00:00:00Z', `expiresAt must be in the future (it is 2020-01-01T00:00:00.000Z, now is ${iso(T0)})`],
    ['tomorrow', 'invalid body: /expiresAt must match format "date-time"']
  ] as const) {
    const res = await app.call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'free', expiresAt } })
    assert.equal(res.statusCode, 400, expiresAt)
    const body = res.json()
    assert.deepEqual(body, {
      code: 'validation_failed',
      message,
      status: 400,
      requestId: body.requestId,
      details: [{ path: '/expiresAt', message: body.details[0].message }]
    })
  }
})

// ---- rotation -----------------------------------------------------------------------------

test('POST /v1/admin/keys/{keyId}/rotate answers 201 with the new key once, same settings; the old key gets expiresAt and replacedBy', async (t) => {
  const app = await buildTestApp(t)
  const old = await create(app, { role: 'staff', plan: 'enterprise', perMinute: 50, perDay: 5000, name: 'till' })
  app.clock.advance(1000)
  const res = await app.call({ method: 'POST', url: `/v1/admin/keys/${old.id}/rotate`, payload: { gracePeriodSeconds: 3600 } })
  assert.equal(res.statusCode, 201)
  const body = res.json()
  assert.match(body.key, /^psk_[0-9A-Za-z]{49}$/)
  assert.notEqual(body.key, old.key)
  assert.deepEqual(body, {
    id: body.id, name: 'till', role: 'staff', plan: 'enterprise', limits: { perMinute: 50, perDay: 5000 }, prefix: body.key.slice(0, 16),
    createdAt: iso(T0 + 1000), ...FRESH, replaces: old.id, key: body.key
  })
  assert.equal(res.headers.location, `/v1/admin/keys/${body.id}`)
  assert.equal(res.headers.etag, '"1"')
  assert.equal(res.headers['cache-control'], 'no-store')
  const oldView = await app.call({ method: 'GET', url: `/v1/admin/keys/${old.id}` })
  assert.deepEqual(oldView.json(), {
    id: old.id, name: 'till', role: 'staff', plan: 'enterprise', limits: { perMinute: 50, perDay: 5000 }, prefix: old.key.slice(0, 16),
    createdAt: iso(T0), ...FRESH, expiresAt: iso(T0 + 1000 + 3_600_000), replacedBy: body.id
  })
  assert.equal(oldView.headers.etag, '"2"', 'the rotation changed the old key')
  const newView = await app.call({ method: 'GET', url: `/v1/admin/keys/${body.id}` })
  const { key: _key, ...withoutKey } = body
  assert.deepEqual(newView.json(), withoutKey, 'the plaintext key is shown once')
})

test('POST /v1/admin/keys/{keyId}/rotate without a body (or with {}) gives the default grace period of a day', async (t) => {
  const app = await buildTestApp(t)
  const a = await create(app, { role: 'customer', plan: 'free' })
  const b = await create(app, { role: 'customer', plan: 'free' })
  const bare = await app.call({ method: 'POST', url: `/v1/admin/keys/${a.id}/rotate` })
  assert.equal(bare.statusCode, 201, bare.body)
  const empty = await app.call({ method: 'POST', url: `/v1/admin/keys/${b.id}/rotate`, payload: {} })
  assert.equal(empty.statusCode, 201)
  for (const id of [a.id, b.id]) assert.equal((await app.call({ method: 'GET', url: `/v1/admin/keys/${id}` })).json().expiresAt, iso(T0 + DAY))
})

test('POST /v1/admin/keys/{keyId}/rotate answers 400 validation_failed for a grace period outside 0..604800 or not whole', async (t) => {
  const app = await buildTestApp(t)
  const a = await create(app, { role: 'customer', plan: 'free' })
  for (const gracePeriodSeconds of [-1, 604_801, 1.5, '60']) {
    const res = await app.call({ method: 'POST', url: `/v1/admin/keys/${a.id}/rotate`, payload: { gracePeriodSeconds } })
    assert.equal(res.statusCode, 400, String(gracePeriodSeconds))
    assert.equal(res.json().code, 'validation_failed')
    assert.equal(res.json().details[0].path, '/gracePeriodSeconds')
  }
  const unknownField = await app.call({ method: 'POST', url: `/v1/admin/keys/${a.id}/rotate`, payload: { grace: 60 } })
  assert.equal(unknownField.statusCode, 400)
  const week = await app.call({ method: 'POST', url: `/v1/admin/keys/${a.id}/rotate`, payload: { gracePeriodSeconds: 604_800 } })
  assert.equal(week.statusCode, 201)
})

test('rotating a revoked, an expired or an already rotated key answers 409 api_key_not_rotatable; an unknown key 404', async (t) => {
  const app = await buildTestApp(t)
  const revoked = await create(app, { role: 'customer', plan: 'free' })
  assert.equal((await app.call({ method: 'DELETE', url: `/v1/admin/keys/${revoked.id}` })).statusCode, 204)
  const expiring = await create(app, { role: 'customer', plan: 'free', expiresAt: iso(T0 + 60_000) })
  const rotated = await create(app, { role: 'customer', plan: 'free' })
  const successor = (await app.call({ method: 'POST', url: `/v1/admin/keys/${rotated.id}/rotate`, payload: { gracePeriodSeconds: 60 } })).json()
  app.clock.advance(60_000)
  const cases = [
    [revoked.id, `key ${revoked.id} was revoked at ${iso(T0)}; only a live key can be rotated`],
    [expiring.id, `key ${expiring.id} expired at ${iso(T0 + 60_000)}; only a live key can be rotated`],
    [rotated.id, `key ${rotated.id} expired at ${iso(T0 + 60_000)}; only a live key can be rotated`]
  ] as const
  for (const [id, message] of cases) {
    const res = await app.call({ method: 'POST', url: `/v1/admin/keys/${id}/rotate`, payload: {} })
    assert.equal(res.statusCode, 409)
    assert.deepEqual(res.json(), { code: 'api_key_not_rotatable', message, status: 409, requestId: res.json().requestId })
  }
  // Within its grace period a rotated key is still live, but it already has a successor.
  const again = await create(app, { role: 'customer', plan: 'free' })
  const next = (await app.call({ method: 'POST', url: `/v1/admin/keys/${again.id}/rotate`, payload: { gracePeriodSeconds: 600 } })).json()
  const twice = await app.call({ method: 'POST', url: `/v1/admin/keys/${again.id}/rotate`, payload: {} })
  assert.equal(twice.statusCode, 409)
  assert.equal(twice.json().message, `key ${again.id} was already rotated: key ${next.id} replaces it; rotate key ${next.id} instead`)
  // The successor itself can be rotated.
  assert.equal((await app.call({ method: 'POST', url: `/v1/admin/keys/${successor.id}/rotate`, payload: {} })).statusCode, 201)
  const missing = await app.call({ method: 'POST', url: '/v1/admin/keys/999999/rotate', payload: {} })
  assert.equal(missing.statusCode, 404)
  assert.equal(missing.json().code, 'not_found')
})

// ---- usage and lastUsedAt -----------------------------------------------------------------

test('GET /v1/admin/keys/{keyId}/usage counts allowed, limited and banned requests exactly, per UTC day, oldest first', async (t) => {
  const app = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const { id, key } = await app.makeKey('customer', 'free')
  // Day 1: 60 allowed (charged: 2xx and 4xx, of which other4xx counts the 404, the 403 and the
  // 400; GET /rate_limit costs no quota and is not counted), and the minute's 60 are spent.
  for (let i = 0; i < 56; i++) assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  assert.equal((await app.call({ method: 'GET', url: '/v1/no/such/path', key })).statusCode, 404)
  assert.equal((await app.call({ method: 'POST', url: '/v1/categories', key, payload: { name: 'x' } })).statusCode, 403)
  assert.equal((await app.call({ method: 'GET', url: '/v1/pets?limit=0', key })).statusCode, 400)
  assert.equal((await app.call({ method: 'GET', url: '/v1/rate_limit', key })).statusCode, 200, 'free of quota, still a request of the key')
  assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  // 20 refusals, then the 21st starts a ban, and 4 more while banned.
  const codes: string[] = []
  for (let i = 0; i < 25; i++) codes.push((await app.call({ method: 'GET', url: '/v1/pets', key })).json().code)
  assert.deepEqual(codes, [...Array(20).fill('rate_limited'), ...Array(5).fill('api_key_banned')])
  // Day 3 (nothing on day 2): 7 allowed.
  app.clock.set(T0 + 2 * DAY)
  for (let i = 0; i < 7; i++) assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  // Requests without a valid key are nobody's usage.
  await app.call({ method: 'GET', url: '/v1/pets', key: key + 'x' })

  const res = await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage` })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), {
    keyId: id,
    days: [
      { date: '2026-11-21', allowed: 60, limited: 20, banned: 5, mcp: 0, other4xx: 3 },
      { date: '2026-11-23', allowed: 7, limited: 0, banned: 0, mcp: 0, other4xx: 0 }
    ],
    deprecated: []
  })
  // days=1 is today only; days=3 reaches back to the first day.
  assert.deepEqual(
    (await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=1` })).json().days,
    [{ date: '2026-11-23', allowed: 7, limited: 0, banned: 0, mcp: 0, other4xx: 0 }]
  )
  assert.equal((await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=2` })).json().days.length, 1)
  assert.equal((await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=3` })).json().days.length, 2)
  // The store holds the same figures (the read flushed this instance's counts first).
  assert.deepEqual(
    (await app.stores.keys.usage(id, '2026-11-01')).map((r) => [r.day, r.allowed, r.limited, r.banned]),
    [['2026-11-21', 60, 20, 5], ['2026-11-23', 7, 0, 0]]
  )
})

test('GET /v1/admin/keys/{keyId}/usage answers 400 for days outside 1..90 and 404 for an unknown key; a key never used has no days', async (t) => {
  const app = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const { id } = await app.makeKey('customer', 'free')
  for (const days of ['0', '91', 'x', '1.5']) {
    const res = await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=${days}` })
    assert.equal(res.statusCode, 400, days)
    assert.equal(res.json().code, 'validation_failed')
  }
  assert.equal((await app.call({ method: 'GET', url: '/v1/admin/keys/999999/usage' })).statusCode, 404)
  assert.deepEqual((await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=90` })).json(), { keyId: id, days: [], deprecated: [] })
})

test('lastUsedAt is null for a new key and moves with each request, in the view at once and in the database after a flush', async (t) => {
  const app = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const { id, key } = await app.makeKey('customer', 'free')
  const lastUsed = async () => (await app.call({ method: 'GET', url: `/v1/admin/keys/${id}` })).json().lastUsedAt
  assert.equal(await lastUsed(), null)
  app.clock.advance(5000)
  await app.call({ method: 'GET', url: '/v1/pets', key })
  assert.equal(await lastUsed(), iso(T0 + 5000))
  app.clock.advance(60_000)
  await app.call({ method: 'GET', url: '/v1/categories', key })
  assert.equal(await lastUsed(), iso(T0 + 65_000))
  assert.equal((await app.stores.keys.getKey(id))!.lastUsedAt, null, 'not written yet: no write per request')
  await app.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage` })
  assert.equal((await app.stores.keys.getKey(id))!.lastUsedAt, T0 + 65_000)
  const listed = (await app.call({ method: 'GET', url: '/v1/admin/keys?limit=100' })).json() as { id: number; lastUsedAt: string | null }[]
  assert.equal(listed.find((k) => k.id === id)!.lastUsedAt, iso(T0 + 65_000))
})

// ---- batched writes -----------------------------------------------------------------------

const WRITES: (keyof KeyStore)[] = ['createKey', 'updateKey', 'revokeKey', 'rotateKey', 'recordBan', 'liftBans', 'recordUsage']

/** Counts the calls of the key store's writing methods from now on. */
function countWrites (keys: KeyStore): Record<string, number> {
  const counts: Record<string, number> = {}
  const target = keys as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>
  for (const name of WRITES) {
    const original = target[name]!.bind(keys)
    counts[name] = 0
    target[name] = async (...args: unknown[]) => { counts[name]!++; return original(...args) }
  }
  return counts
}

test('a burst of 300 requests from 3 keys, 429s included, writes nothing to the database; the next flush writes them all in one call', async (t) => {
  const app = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const keys = [await app.makeKey('customer', 'free'), await app.makeKey('staff', 'pro'), await app.makeKey('customer', 'business')]
  const writes = countWrites(app.stores.keys)
  const none = Object.fromEntries(WRITES.map((name) => [name, 0]))
  // The free key sends 80: 60 allowed and 20 refused (the 21st refusal would start a ban, which
  // is recorded in the database once: docs/product.md section 4). The others send 110 each.
  const senders = [...Array(80).fill(0), ...Array(110).fill(1), ...Array(110).fill(2)] as number[]
  const statuses = await Promise.all(senders.map((k) =>
    app.call({ method: 'GET', url: '/v1/pets', key: keys[k]!.key }).then((r) => r.statusCode)))
  assert.equal(statuses.filter((s) => s === 429).length, 20)
  assert.deepEqual(writes, none)
  // One read of the usage flushes everything this instance counted, in one store call.
  const first = await app.call({ method: 'GET', url: `/v1/admin/keys/${keys[0]!.id}/usage` })
  assert.deepEqual(first.json().days, [{ date: '2026-11-21', allowed: 60, limited: 20, banned: 0, mcp: 0, other4xx: 0 }])
  assert.deepEqual(writes, { ...none, recordUsage: 1 })
  assert.deepEqual(
    await app.stores.keys.usage(keys[1]!.id, '2026-11-21'),
    [{ keyId: keys[1]!.id, day: '2026-11-21', allowed: 110, limited: 0, banned: 0, mcp: 0, other4xx: 0 }]
  )
  assert.deepEqual(
    await app.stores.keys.usage(keys[2]!.id, '2026-11-21'),
    [{ keyId: keys[2]!.id, day: '2026-11-21', allowed: 110, limited: 0, banned: 0, mcp: 0, other4xx: 0 }]
  )
})

test('usage reaches the database within one flush interval (2 s), by the timer, with no request asking for it', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] })
  const app = await buildTestApp(t)
  const { id, key } = await app.makeKey('customer', 'free')
  let flushed: () => void
  const written = new Promise<void>((resolve) => { flushed = resolve })
  const recordUsage = app.stores.keys.recordUsage.bind(app.stores.keys)
  app.stores.keys.recordUsage = async (batch) => { await recordUsage(batch); if (batch.counts.length > 0) flushed() }
  for (let i = 0; i < 3; i++) await app.call({ method: 'GET', url: '/v1/pets', key })
  assert.deepEqual(await app.stores.keys.usage(id, '2026-11-21'), [])
  t.mock.timers.tick(2000)
  await written
  assert.deepEqual(await app.stores.keys.usage(id, '2026-11-21'), [
    { keyId: id, day: '2026-11-21', allowed: 3, limited: 0, banned: 0, mcp: 0, other4xx: 0 }
  ])
  assert.equal((await app.stores.keys.getKey(id))!.lastUsedAt, T0)
})

test('closing the app (a graceful stop) flushes the usage counted since the last flush', async (t) => {
  const app = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const { id, key } = await app.makeKey('customer', 'free')
  for (let i = 0; i < 4; i++) await app.call({ method: 'GET', url: '/v1/pets', key })
  await app.app.close()
  assert.deepEqual(await app.stores.keys.usage(id, '2026-11-21'), [
    { keyId: id, day: '2026-11-21', allowed: 4, limited: 0, banned: 0, mcp: 0, other4xx: 0 }
  ])
})

test('a server stopped gracefully (startServer\'s close, as on SIGTERM) writes the usage it counted before it exits', async (t) => {
  const dir = tempDir(t, 'petstore-usage-')
  const path = join(dir, 'p.db')
  const server = await startServer(loadConfig({ DATABASE_URL: `sqlite:${path}`, PORT: '0', LOG_LEVEL: 'silent' }))
  const { record, key } = await createKeyAdmin(server.infra.stores.keys, systemClock).create({ role: 'customer', plan: 'free' })
  for (let i = 0; i < 5; i++) assert.equal((await fetch(`${server.url}/v1/pets`, { headers: { 'x-api-key': key } })).status, 200)
  assert.equal((await fetch(`${server.url}/v1/nope`, { headers: { 'x-api-key': key } })).status, 404)
  const stoppedAt = Date.now()
  await server.close()
  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  const rows = await stores.keys.usage(record.id, utcDay(stoppedAt - DAY))
  assert.equal(rows.reduce((n, r) => n + r.allowed, 0), 6)
  assert.ok((await stores.keys.getKey(record.id))!.lastUsedAt! <= stoppedAt)
})

test('two instances on one database count one key\'s usage independently and the database holds the exact sum', async (t) => {
  const a = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const b = await buildTestApp(t, { stores: a.stores, deps: { usageFlushMs: 0 } })
  const { id, key } = await a.makeKey('customer', 'pro')
  for (let i = 0; i < 7; i++) assert.equal((await a.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  b.clock.advance(30_000)
  for (let i = 0; i < 5; i++) assert.equal((await b.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  // Each instance writes its own counts when it reads usage (or on its timer, or at close).
  assert.deepEqual(
    (await a.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage` })).json().days,
    [{ date: '2026-11-21', allowed: 7, limited: 0, banned: 0, mcp: 0, other4xx: 0 }]
  )
  assert.deepEqual(
    (await b.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage` })).json().days,
    [{ date: '2026-11-21', allowed: 12, limited: 0, banned: 0, mcp: 0, other4xx: 0 }]
  )
  assert.equal((await a.stores.keys.getKey(id))!.lastUsedAt, T0 + 30_000, 'the later use, whichever instance wrote first')
})

test('a rotated pair reports its usage under each key separately', async (t) => {
  const app = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const old = await create(app, { role: 'customer', plan: 'pro' })
  const successor = (await app.call({ method: 'POST', url: `/v1/admin/keys/${old.id}/rotate`, payload: { gracePeriodSeconds: 600 } })).json()
  for (let i = 0; i < 3; i++) assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key: old.key })).statusCode, 200)
  for (let i = 0; i < 5; i++) assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key: successor.key })).statusCode, 200)
  assert.deepEqual(
    (await app.call({ method: 'GET', url: `/v1/admin/keys/${old.id}/usage` })).json().days,
    [{ date: '2026-11-21', allowed: 3, limited: 0, banned: 0, mcp: 0, other4xx: 0 }]
  )
  assert.deepEqual(
    (await app.call({ method: 'GET', url: `/v1/admin/keys/${successor.id}/usage` })).json().days,
    [{ date: '2026-11-21', allowed: 5, limited: 0, banned: 0, mcp: 0, other4xx: 0 }]
  )
})

// ---- metrics ------------------------------------------------------------------------------

test('ratelimit_near_limit_total{window} counts the allowed requests that leave less than 10% of a window', async (t) => {
  const app = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const { key } = await app.makeKey('customer', 'free')
  // 60 a minute: requests 55 to 60 leave 5 to 0, under 6; the 61st is refused, not counted.
  for (let i = 0; i < 61; i++) await app.call({ method: 'GET', url: '/v1/pets', key })
  // 40 a day, sent 10 a minute (the minute allows 30): the last 4 leave 3 to 0, under 4.
  const { key: daily } = await app.makeKey('customer', 'enterprise', { perMinute: 30, perDay: 40 })
  for (let i = 0; i < 40; i++) {
    if (i % 10 === 0) app.clock.advance(60_000)
    assert.equal((await app.call({ method: 'GET', url: '/v1/pets', key: daily })).statusCode, 200)
  }
  const text = (await app.app.inject({ method: 'GET', url: '/metrics' })).body
  assert.match(text, /^ratelimit_near_limit_total\{window="minute"\} 6$/m)
  assert.match(text, /^ratelimit_near_limit_total\{window="day"\} 4$/m)
})
