// The key holder's own key (docs/product.md 9.11): GET /v1/keys/me, /me/usage, /me/bans and POST
// /me/rotate, for every role and only for the key the request carries; a banned key still reads
// its view and ban history, uncharged, and nothing else. Faults caught: a view of another key
// (the principal's caller, the first key of a chain, instead of the key presented), usage or
// bans that differ from the admin's views, a self-rotation that does not keep the settings, does
// not forget the old key's cache or writes no key.rotated, the ban exemption missing, wider than
// the two reads (any route, or an exhausted window, or a revoked key), or charging the windows.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

const iso = (ms: number): string => new Date(ms).toISOString()
const MINUTE = 60_000

async function keyOf (h: TestApp, payload: Record<string, unknown>): Promise<{ id: number; key: string }> {
  const res = await h.call({ method: 'POST', url: '/v1/admin/keys', payload })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

const adminView = async (h: TestApp, id: number) => {
  const res = await h.call({ method: 'GET', url: `/v1/admin/keys/${id}` })
  assert.equal(res.statusCode, 200)
  return res.json() as Record<string, unknown>
}

/** Drives a free key (60 a minute) into a ban: 60 allowed, 20 refused, the 21st refusal bans it. */
async function ban (h: TestApp, key: string): Promise<void> {
  for (let i = 0; i < 60; i++) assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  const codes: string[] = []
  for (let i = 0; i < 21; i++) codes.push((await h.call({ method: 'GET', url: '/v1/pets', key })).json().code)
  assert.deepEqual(codes, [...Array(20).fill('rate_limited'), 'api_key_banned'])
}

test('GET /v1/keys/me answers 200 with the key the request carries, as the admin view shows it, for every role; no other key is reachable', async (t) => {
  const h = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const mine = await keyOf(h, { name: 'partner shop', role: 'customer', plan: 'pro', scopes: ['catalog:read'], expiresAt: '2027-01-01T00:00:00Z' })
  const other = await keyOf(h, { name: 'another shop', role: 'customer', plan: 'free' })
  const first = await h.call({ method: 'GET', url: '/v1/keys/me', key: mine.key })
  assert.equal(first.statusCode, 200)
  assert.equal(first.headers['cache-control'], 'no-store')
  assert.deepEqual(first.json(), {
    id: mine.id, name: 'partner shop', role: 'customer', plan: 'pro', limits: { perMinute: 300, perDay: 10000 },
    prefix: mine.key.slice(0, 16), format: 'checksummed',
    createdAt: iso(T0), revokedAt: null, expiresAt: '2027-01-01T00:00:00.000Z', replaces: null, replacedBy: null,
    lastUsedAt: null, scopes: ['catalog:read'], ban: null
  })
  // The admin's view of the same key, once that read is counted as a use: the same object.
  h.clock.advance(1000)
  const again = (await h.call({ method: 'GET', url: '/v1/keys/me', key: mine.key })).json()
  assert.equal(again.lastUsedAt, iso(T0))
  assert.deepEqual(again, { ...await adminView(h, mine.id), lastUsedAt: iso(T0) })
  // Another customer sees its own key, never the first one.
  assert.equal((await h.call({ method: 'GET', url: '/v1/keys/me', key: other.key })).json().id, other.id)
  // Staff and admin read their own key too.
  for (const role of ['staff', 'admin'] as const) {
    const res = await h.call({ method: 'GET', url: '/v1/keys/me', role })
    assert.equal(res.statusCode, 200)
    assert.equal(res.json().role, role)
  }
  // There is no id to give: a query parameter is refused, another path is no operation.
  const withId = await h.call({ method: 'GET', url: `/v1/keys/me?id=${other.id}`, key: mine.key })
  assert.equal(withId.statusCode, 400)
  assert.equal(withId.json().code, 'validation_failed')
  assert.equal((await h.call({ method: 'GET', url: `/v1/keys/${other.id}`, key: mine.key })).statusCode, 404)
})

test('GET /v1/keys/me/usage answers 200 with exactly the admin usage view of the same key, and only of that key', async (t) => {
  const h = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const mine = await keyOf(h, { role: 'customer', plan: 'free' })
  const other = await keyOf(h, { role: 'customer', plan: 'free' })
  for (let i = 0; i < 3; i++) assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: mine.key })).statusCode, 200)
  assert.equal((await h.call({ method: 'POST', url: '/v1/categories', key: mine.key, payload: { name: 'x' } })).statusCode, 403)
  h.clock.advance(86_400_000)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: mine.key })).statusCode, 200)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: other.key })).statusCode, 200)

  const admin = await h.call({ method: 'GET', url: `/v1/admin/keys/${mine.id}/usage?days=7` })
  const own = await h.call({ method: 'GET', url: '/v1/keys/me/usage?days=7', key: mine.key })
  assert.equal(own.statusCode, 200)
  assert.deepEqual(own.json(), admin.json())
  // The 403 (the role) was charged: in allowed, and of it in other4xx.
  assert.deepEqual(own.json(), {
    keyId: mine.id,
    days: [
      { date: '2026-11-21', allowed: 4, limited: 0, banned: 0, mcp: 0, other4xx: 1 },
      { date: '2026-11-22', allowed: 1, limited: 0, banned: 0, mcp: 0, other4xx: 0 }
    ],
    deprecated: []
  })
  // days=1: today only, the read of the usage just made counted; days outside 1..90: 400.
  assert.deepEqual(
    (await h.call({ method: 'GET', url: '/v1/keys/me/usage?days=1', key: mine.key })).json().days,
    [{ date: '2026-11-22', allowed: 2, limited: 0, banned: 0, mcp: 0, other4xx: 0 }]
  )
  const bad = await h.call({ method: 'GET', url: '/v1/keys/me/usage?days=91', key: mine.key })
  assert.equal(bad.statusCode, 400)
  assert.equal(bad.json().code, 'validation_failed')
})

test('POST /v1/keys/me/rotate answers 201 with a working successor (same settings); the old key works until its grace period ends, then 401; key.rotated is in the feed', async (t) => {
  const h = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const old = await keyOf(h, { name: 'till', role: 'staff', plan: 'enterprise', perMinute: 50, perDay: 5000, scopes: ['catalog:read', 'catalog:write'] })
  h.clock.advance(1000)
  const res = await h.call({ method: 'POST', url: '/v1/keys/me/rotate', key: old.key, payload: { gracePeriodSeconds: 60 } })
  assert.equal(res.statusCode, 201, res.body)
  assert.equal(res.headers['cache-control'], 'no-store')
  const successor = res.json()
  assert.match(successor.key, /^psk_/)
  assert.notEqual(successor.key, old.key)
  assert.deepEqual(successor, {
    id: successor.id, name: 'till', role: 'staff', plan: 'enterprise', limits: { perMinute: 50, perDay: 5000 },
    prefix: successor.key.slice(0, 16), format: 'checksummed',
    createdAt: iso(T0 + 1000), revokedAt: null, expiresAt: null, replaces: old.id, replacedBy: null, lastUsedAt: null,
    scopes: ['catalog:read', 'catalog:write'], ban: null, key: successor.key
  })
  // The new key works and shows what it replaced; the old one shows its successor and its end.
  const mineNew = await h.call({ method: 'GET', url: '/v1/keys/me', key: successor.key })
  assert.equal(mineNew.statusCode, 200)
  assert.equal(mineNew.json().replaces, old.id)
  assert.equal((await h.call({ method: 'POST', url: '/v1/categories', key: successor.key, payload: { name: 'Dogs' } })).statusCode, 201)
  const mineOld = await h.call({ method: 'GET', url: '/v1/keys/me', key: old.key })
  assert.equal(mineOld.statusCode, 200)
  assert.deepEqual(
    { replacedBy: mineOld.json().replacedBy, expiresAt: mineOld.json().expiresAt },
    { replacedBy: successor.id, expiresAt: iso(T0 + 1000 + 60_000) }
  )
  // A key already rotated is not rotated again: its successor is.
  const again = await h.call({ method: 'POST', url: '/v1/keys/me/rotate', key: old.key })
  assert.equal(again.statusCode, 409)
  assert.equal(again.json().code, 'api_key_not_rotatable')
  // The old key works until the grace period ends, and is 401 from that instant on.
  h.clock.set(T0 + 1000 + 59_999)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: old.key })).statusCode, 200)
  h.clock.set(T0 + 1000 + 60_000)
  const expired = await h.call({ method: 'GET', url: '/v1/keys/me', key: old.key })
  assert.equal(expired.statusCode, 401)
  assert.equal(expired.json().code, 'api_key_expired')
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: successor.key })).statusCode, 200)

  // key.rotated, with the successor's view, as an admin's rotation writes it.
  let rotated: { type: string; data: Record<string, unknown> } | undefined
  for (let i = 0; i < 100 && rotated === undefined; i++) {
    const page = (await h.call({ method: 'GET', url: '/v1/events?type=key.rotated&limit=100' })).json() as Array<{ type: string; data: Record<string, unknown> }>
    rotated = page.find((e) => e.data.id === successor.id)
    if (rotated === undefined) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const { key: _secret, ...view } = successor
  assert.deepEqual(rotated?.data, view)
})

test('POST /v1/keys/me/rotate without a body keeps the old key for a day; with 0 it stops at once on this instance', async (t) => {
  const h = await buildTestApp(t)
  const a = await keyOf(h, { role: 'customer', plan: 'pro' })
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: a.key })).statusCode, 200, 'the key is cached by the access step')
  const res = await h.call({ method: 'POST', url: '/v1/keys/me/rotate', key: a.key })
  assert.equal(res.statusCode, 201, res.body)
  assert.equal((await adminView(h, a.id)).expiresAt, iso(T0 + 86_400_000))

  const b = await keyOf(h, { role: 'customer', plan: 'pro' })
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: b.key })).statusCode, 200)
  assert.equal((await h.call({ method: 'POST', url: '/v1/keys/me/rotate', key: b.key, payload: { gracePeriodSeconds: 0 } })).statusCode, 201)
  // Not a cached principal: the change is forgotten here at once.
  const stopped = await h.call({ method: 'GET', url: '/v1/pets', key: b.key })
  assert.equal(stopped.statusCode, 401)
  assert.equal(stopped.json().code, 'api_key_expired')
  const bad = await h.call({ method: 'POST', url: '/v1/keys/me/rotate', key: res.json().key, payload: { gracePeriodSeconds: 604_801 } })
  assert.equal(bad.statusCode, 400)
  assert.equal(bad.json().code, 'validation_failed')
})

test('a banned key reads GET /v1/keys/me and /me/bans with 200, uncharged, while every other operation is 429 api_key_banned', async (t) => {
  const h = await buildTestApp(t, { deps: { usageFlushMs: 0 } })
  const { id, key } = await keyOf(h, { role: 'customer', plan: 'free' })
  await ban(h, key)
  // Two minutes into the 15-minute ban: a new minute window, which nothing has charged yet.
  h.clock.advance(2 * MINUTE)
  const windows = async () => (await h.call({ method: 'GET', url: `/v1/admin/keys/${id}/rate_limit` })).json().windows
  const before = await windows()
  assert.equal(before.minute.used, 0)

  const me = await h.call({ method: 'GET', url: '/v1/keys/me', key })
  assert.equal(me.statusCode, 200, me.body)
  const until = me.json().ban?.until as string
  assert.deepEqual(me.json().ban, { until, reason: 'kept calling while rate limited: 21 requests before Retry-After had passed' })
  assert.equal(Date.parse(until), T0 + 15 * MINUTE, 'the ban started in the first minute and lasts 15 minutes')
  assert.equal(me.headers['retry-after'], String((15 - 2) * 60), 'Retry-After says how long the ban still lasts')
  assert.equal(me.headers['x-ratelimit-remaining'], '60')
  const bans = await h.call({ method: 'GET', url: '/v1/keys/me/bans', key })
  assert.equal(bans.statusCode, 200)
  assert.deepEqual(bans.json(), {
    keyId: id,
    bans: [{ keyId: id, startedAt: iso(T0), until, liftedAt: null, reason: me.json().ban.reason }]
  })
  assert.deepEqual(bans.json(), (await h.call({ method: 'GET', url: `/v1/admin/keys/${id}/bans` })).json())
  // HEAD answers as GET does.
  assert.equal((await h.app.inject({ method: 'HEAD', url: '/v1/keys/me', headers: { 'x-api-key': key } })).statusCode, 200)

  // Everything else, the key holder's other operations included, is refused.
  for (const [method, url] of [['GET', '/v1/pets'], ['GET', '/v1/keys/me/usage'], ['POST', '/v1/keys/me/rotate']] as const) {
    const res = await h.call({ method, url, key })
    assert.equal(res.statusCode, 429, `${method} ${url}`)
    assert.equal(res.json().code, 'api_key_banned')
  }
  // The reads charged nothing: the windows are as they were, and the rate-limit status agrees.
  assert.deepEqual(await windows(), before)
  const status = (await h.call({ method: 'GET', url: '/v1/rate_limit', key })).json()
  assert.equal(status.windows.minute.remaining, 60)
  assert.equal(status.ban.until, until)
  // Charged nothing, they are not counted as allowed (nor is GET /rate_limit): allowed is what the
  // windows were charged. The refusals count as banned.
  const usage = (await h.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=1` })).json()
  assert.deepEqual(usage.days, [{ date: '2026-11-21', allowed: 60, limited: 20, banned: 1 + 3, mcp: 0, other4xx: 0 }])

  // Once the ban is over the reads are charged again, as any request.
  h.clock.set(T0 + 15 * MINUTE)
  assert.equal((await h.call({ method: 'GET', url: '/v1/keys/me', key })).json().ban, null)
  assert.equal((await windows()).minute.used, 1)
})

test('the exemption is for bans only: an exhausted minute is 429 rate_limited on /keys/me, a revoked key 401 even while banned', async (t) => {
  const h = await buildTestApp(t)
  const { id, key } = await keyOf(h, { role: 'customer', plan: 'free' })
  for (let i = 0; i < 60; i++) assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  const limited = await h.call({ method: 'GET', url: '/v1/keys/me', key })
  assert.equal(limited.statusCode, 429)
  assert.equal(limited.json().code, 'rate_limited')
  for (let i = 0; i < 20; i++) await h.call({ method: 'GET', url: '/v1/pets', key })
  assert.equal((await h.call({ method: 'GET', url: '/v1/keys/me/bans', key })).statusCode, 200, 'banned now: the ban history is readable')

  assert.equal((await h.call({ method: 'DELETE', url: `/v1/admin/keys/${id}` })).statusCode, 204)
  for (const url of ['/v1/keys/me', '/v1/keys/me/bans']) {
    const res = await h.call({ method: 'GET', url, key })
    assert.equal(res.statusCode, 401, url)
    assert.equal(res.json().code, 'unauthenticated')
  }
})
