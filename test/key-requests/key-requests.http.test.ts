// A key's own request log (docs/product.md 9.13, GET /v1/keys/me/requests). Faults caught: a
// refusal logged without its rule (or with the wrong window, ban, scope or role); a filter or a
// page that leaks or skips; another key's requests visible; a body or a secret query value kept;
// a write per request instead of one per batch; the buffer lost at a graceful stop; the log read
// costing quota; recording that REQUEST_LOG=off does not turn off.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { KEEP_LAST } from '../../src/key-requests/key-requests.schema.ts'
import { APPEND_ROWS } from '../../src/key-requests/key-requests.recorder.ts'
import { PRUNE_ROWS } from '../../src/storage/sqlite/key-requests.ts'
import type { KeyRequestRecord, KeyRequestStore } from '../../src/key-requests/key-requests.store.ts'
import { keyRequestJobs, pruneKeys } from '../../src/jobs/key-requests-prune.ts'
import { DAY_MS } from '../../src/ratelimit/limiter.ts'
import { buildTestApp, listenTestApp, T0, type TestApp } from '../helpers/app.ts'

const MINUTE = 60_000
/** The flush only at stop and on read, so a test counts its batches exactly. */
const NO_TIMER = { REQUEST_LOG_FLUSH_MS: '0' }

interface Item {
  id: number
  at: string
  method: string
  route: string
  operationId: string | null
  query: string | null
  status: number
  code: string | null
  requestId: string
  latencyMs: number
  via: string | null
  refusal: Record<string, unknown> | null
}

async function log (h: TestApp, key: string, query = ''): Promise<Item[]> {
  const res = await h.call({ method: 'GET', url: `/v1/keys/me/requests${query}`, key })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.headers['cache-control'], 'no-store')
  return res.json()
}

async function byRequestId (h: TestApp, key: string, requestId: string): Promise<Item> {
  const items = await log(h, key, `?requestId=${requestId}`)
  assert.equal(items.length, 1, `one entry for ${requestId}`)
  return items[0]!
}

/** Counts the batches and rows the store is asked to write. */
function countAppends (store: KeyRequestStore): { batches: number; rows: number } {
  const seen = { batches: 0, rows: 0 }
  const original = store.append.bind(store)
  store.append = async (records: readonly KeyRequestRecord[]) => {
    seen.batches++
    seen.rows += records.length
    await original(records)
  }
  return seen
}

test('a 429 of the minute window, then the ban, are found by their Request-Id with the rule, its limit and reset', async (t) => {
  const h = await buildTestApp(t)
  const { key } = await h.makeKey('customer', 'free')
  for (let i = 0; i < 60; i++) assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  const limited = await h.call({ method: 'GET', url: '/v1/pets?limit=5', key })
  assert.equal(limited.statusCode, 429)
  const entry = await byRequestId(h, key, String(limited.headers['request-id']))
  assert.deepEqual({ ...entry, id: 0, latencyMs: 0 }, {
    id: 0,
    at: new Date(T0).toISOString(),
    method: 'GET',
    route: '/v1/pets',
    operationId: 'listPets',
    query: 'limit=5',
    status: 429,
    code: 'rate_limited',
    requestId: limited.headers['request-id'],
    latencyMs: 0,
    via: 'http',
    refusal: {
      rule: 'minute_window',
      message: limited.json().message,
      limit: 60,
      resetAt: new Date(T0 - (T0 % MINUTE) + MINUTE).toISOString()
    }
  })
  assert.ok(entry.latencyMs >= 0)

  // 19 more refusals, then the 21st of the wait period starts the ban.
  for (let i = 0; i < 19; i++) assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).json().code, 'rate_limited')
  const banned = await h.call({ method: 'GET', url: '/v1/pets', key })
  assert.equal(banned.json().code, 'api_key_banned')
  const ban = await byRequestId(h, key, String(banned.headers['request-id']))
  assert.deepEqual(ban.refusal, {
    rule: 'ban',
    message: banned.json().message,
    until: new Date(T0 + 15 * MINUTE).toISOString(),
    reason: ban.refusal?.reason
  })
  assert.equal(typeof ban.refusal?.reason, 'string')
  assert.ok(String(ban.refusal?.reason).length > 0)

  // Reading the log while banned is served, free: the windows did not move.
  const rateLimit = await h.call({ method: 'GET', url: '/v1/rate_limit', key })
  assert.equal(rateLimit.json().windows.minute.remaining, 0)
  const refused = await log(h, key, '?status=429&limit=100')
  assert.equal(refused.length, 21, 'the 20 window refusals and the ban')
  assert.equal(refused.filter((e) => e.refusal?.rule === 'minute_window').length, 20)
})

test('a 403 names the scope a restricted key lacked, or the role a key is below', async (t) => {
  const h = await buildTestApp(t)
  const created = await h.call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'pro', scopes: ['catalog:read'] } })
  assert.equal(created.statusCode, 201, created.body)
  const restricted: string = created.json().key
  const order = await h.call({ method: 'POST', url: '/v1/store/orders', key: restricted, payload: { petId: 1, quantity: 1 } })
  assert.equal(order.json().code, 'insufficient_scope')
  assert.deepEqual((await byRequestId(h, restricted, String(order.headers['request-id']))).refusal, {
    rule: 'scope', message: order.json().message, needed: 'orders:write'
  })

  const customer = h.keys.customer
  const admin = await h.call({ method: 'GET', url: '/v1/admin/keys', key: customer })
  assert.equal(admin.json().code, 'forbidden')
  const entry = await byRequestId(h, customer, String(admin.headers['request-id']))
  assert.equal(entry.route, '/v1/admin/keys')
  assert.equal(entry.operationId, 'listApiKeys')
  assert.deepEqual(entry.refusal, { rule: 'role', message: admin.json().message, needed: 'admin' })

  // A request nobody refused has no refusal; a path no operation has is logged by its path.
  const missing = await h.call({ method: 'GET', url: '/v1/pets/999999', key: customer })
  assert.equal(missing.statusCode, 404)
  const notFound = await byRequestId(h, customer, String(missing.headers['request-id']))
  assert.deepEqual([notFound.route, notFound.code, notFound.refusal], ['/v1/pets/{petId}', 'not_found', null])
  const nowhere = await h.call({ method: 'GET', url: '/v1/nowhere', key: customer })
  const unrouted = await byRequestId(h, customer, String(nowhere.headers['request-id']))
  assert.deepEqual([unrouted.route, unrouted.operationId, unrouted.status], ['/v1/nowhere', null, 404])
})

test('over a real socket: newest first, filters by status, class, code and operation, pages by the Link header', async (t) => {
  const h = await listenTestApp(t)
  const key = h.keys.customer
  const headers = { 'x-api-key': key }
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${h.baseUrl}/pets?limit=${i + 1}`, { headers })
    assert.equal(res.status, 200)
    ids.push(res.headers.get('request-id')!)
  }
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${h.baseUrl}/admin/keys`, { headers })
    assert.equal(res.status, 403)
    ids.push(res.headers.get('request-id')!)
  }
  const get = async (query: string): Promise<{ items: Item[]; link: string | null }> => {
    const res = await fetch(`${h.baseUrl}/keys/me/requests${query}`, { headers })
    assert.equal(res.status, 200)
    return { items: await res.json() as Item[], link: res.headers.get('link') }
  }
  const all = await get('')
  assert.deepEqual(all.items.map((e) => e.requestId), [...ids].reverse(), 'every request, newest first')
  assert.equal(all.link, null)
  assert.deepEqual((await get('?status=403')).items.map((e) => e.requestId), ids.slice(5).reverse())
  assert.deepEqual((await get('?status=4xx&code=forbidden')).items.length, 3)
  assert.deepEqual((await get('?status=2xx')).items.map((e) => e.requestId), ids.slice(0, 5).reverse())
  assert.deepEqual((await get('?status=5xx')).items, [])
  assert.deepEqual((await get('?operationId=listPets')).items.map((e) => e.query), ['limit=5', 'limit=4', 'limit=3', 'limit=2', 'limit=1'])

  // Pages of 2 of the listPets calls, the filter kept by the Link header.
  const seen: string[] = []
  let next: string | null = `${h.baseUrl}/keys/me/requests?operationId=listPets&limit=2`
  let pages = 0
  while (next !== null) {
    const res: Response = await fetch(next, { headers })
    const items = await res.json() as Item[]
    seen.push(...items.map((e) => e.requestId))
    const link = res.headers.get('link')
    next = link === null ? null : new URL(/<([^>]+)>/.exec(link)![1]!, h.baseUrl).href
    pages++
  }
  assert.equal(pages, 3)
  assert.deepEqual(seen, ids.slice(0, 5).reverse())

  // Reading the log cost no quota and is not itself in it.
  const before = await fetch(`${h.baseUrl}/rate_limit`, { headers })
  const remaining = (await before.json() as { windows: { minute: { remaining: number } } }).windows.minute.remaining
  await get('')
  const after = await fetch(`${h.baseUrl}/rate_limit`, { headers })
  const later = await after.json() as { windows: { minute: { remaining: number } } }
  assert.equal(later.windows.minute.remaining, remaining)
  assert.equal((await get('?operationId=listMyApiKeyRequests')).items.length, 0)
  const bad = await fetch(`${h.baseUrl}/keys/me/requests?status=42x`, { headers })
  assert.equal(bad.status, 400)
  assert.equal((await get('?code=validation_failed')).items.length, 1, 'a refused read of the log is logged')
})

test('another key\'s requests are never visible, not even by their Request-Id', async (t) => {
  const h = await buildTestApp(t)
  const other = await h.makeKey('customer')
  const mine = await h.call({ method: 'GET', url: '/v1/pets', key: h.keys.customer })
  const theirs = await h.call({ method: 'GET', url: '/v1/pets', key: other.key })
  assert.deepEqual((await log(h, other.key)).map((e) => e.requestId), [theirs.headers['request-id']])
  assert.deepEqual(await log(h, other.key, `?requestId=${String(mine.headers['request-id'])}`), [])
  assert.deepEqual((await log(h, h.keys.customer)).map((e) => e.requestId), [mine.headers['request-id']])
  // An admin sees its own log, not the others'.
  assert.deepEqual(await log(h, h.keys.admin), [])
})

test('no body is kept, and a query value that may carry a secret is redacted', async (t) => {
  const h = await buildTestApp(t)
  const created = await h.call({
    method: 'POST', url: '/v1/categories', key: h.keys.staff, payload: { name: 'body-text-never-kept' }
  })
  assert.equal(created.statusCode, 201, created.body)
  const secret = await h.call({ method: 'GET', url: '/v1/pets?password=hunter2&name=rex', key: h.keys.staff })
  assert.equal(secret.statusCode, 400)
  const items = await log(h, h.keys.staff)
  assert.deepEqual(items.map((e) => [e.method, e.route, e.query, e.status]), [
    ['GET', '/v1/pets', 'password=[redacted]&name=rex', 400],
    ['POST', '/v1/categories', null, 201]
  ])
  const stored = JSON.stringify(await h.stores.keyRequests.list(await keyIdOf(h, h.keys.staff), {}, null, 100))
  assert.ok(!stored.includes('body-text-never-kept'), 'the body is nowhere in the stored rows')
  assert.ok(!stored.includes('hunter2'), 'the secret is nowhere in the stored rows')
})

async function keyIdOf (h: TestApp, key: string): Promise<number> {
  return (await h.call({ method: 'GET', url: '/v1/keys/me', key })).json().id
}

test('recording is one write per batch, not per request; a graceful stop writes what is pending', async (t) => {
  const h = await buildTestApp(t, { env: NO_TIMER })
  const seen = countAppends(h.stores.keyRequests)
  const keyId = await keyIdOf(h, h.keys.customer)
  for (let i = 0; i < 50; i++) await h.call({ method: 'GET', url: '/v1/pets', key: h.keys.customer })
  assert.equal(seen.batches, 0, 'nothing written while answering')
  assert.equal((await log(h, h.keys.customer, '?limit=100')).length, 51, 'GET /keys/me and the 50 reads')
  assert.deepEqual(seen, { batches: 1, rows: 51 }, 'one batch of 51 rows, written before the read')

  for (let i = 0; i < 7; i++) await h.call({ method: 'GET', url: '/v1/pets', key: h.keys.customer })
  await h.app.close()
  assert.deepEqual(seen, { batches: 2, rows: 58 }, 'the stop flushed the 7 pending requests in one batch')
  assert.equal((await h.stores.keyRequests.list(keyId, {}, null, 100)).length, 58)
})

test('REQUEST_LOG=off records nothing and runs no step; the list still answers', async (t) => {
  const h = await buildTestApp(t, { env: { REQUEST_LOG: 'off' } })
  const seen = countAppends(h.stores.keyRequests)
  for (let i = 0; i < 5; i++) await h.call({ method: 'GET', url: '/v1/pets', key: h.keys.customer })
  assert.deepEqual(await log(h, h.keys.customer), [])
  await h.app.close()
  assert.deepEqual(seen, { batches: 0, rows: 0 })
})

test('an MCP tool call is logged as the key\'s request, marked via mcp', async (t) => {
  const h = await buildTestApp(t)
  const key = h.keys.customer
  const call = await h.app.inject({
    method: 'POST', url: '/mcp',
    headers: { 'x-api-key': key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'listPets', arguments: { limit: 2 } } }
  })
  assert.equal(call.statusCode, 200, call.body)
  const items = await log(h, key)
  const tool = items.find((e) => e.operationId === 'listPets')
  assert.ok(tool !== undefined, JSON.stringify(items))
  assert.equal(tool.via, 'mcp')
  assert.equal(tool.query, 'limit=2')
})

test('the clock of the entries is the app\'s', async (t) => {
  const h = await buildTestApp(t)
  h.clock.advance(MINUTE)
  await h.call({ method: 'GET', url: '/v1/pets', key: h.keys.customer })
  assert.equal((await log(h, h.keys.customer))[0]!.at, new Date(T0 + MINUTE).toISOString())
})

/** A record of `keyId` at `at`; a refusal when `refused`. */
function record (keyId: number, at: number, refused: boolean): KeyRequestRecord {
  return {
    keyId, at, method: 'GET', route: '/v1/pets', operationId: 'listPets', query: null,
    status: refused ? 429 : 200, code: refused ? 'rate_limited' : null, requestId: `r-${keyId}-${at}`, latencyMs: 0.5,
    via: null,
    refusal: refused ? { rule: 'minute_window', message: 'rate limit exceeded', limit: 60, resetAt: new Date(at).toISOString() } : null
  }
}

test('the bound: past 1,000 a key\'s oldest ordinary requests and refusals older than 7 days go; its refusals of 7 days stay; another key is untouched', async (t) => {
  const h = await buildTestApp(t)
  const store = h.stores.keyRequests
  const now = T0
  const old = now - 8 * DAY_MS
  // Key 1: 5 refusals 8 days old, 5 refusals 2 days old, then 1,200 ordinary requests (newest).
  const batch: KeyRequestRecord[] = []
  for (let i = 0; i < 5; i++) batch.push(record(1, old + i, true))
  for (let i = 0; i < 5; i++) batch.push(record(1, now - 2 * DAY_MS + i, true))
  for (let i = 0; i < 1200; i++) batch.push(record(1, now - 1_000_000 + i, false))
  // Key 2: 10 ordinary requests and an old refusal, within its newest 1,000: all kept.
  for (let i = 0; i < 10; i++) batch.push(record(2, now - 1_000_000 + i, false))
  batch.push(record(2, old, true))
  batch.sort((a, b) => a.at - b.at)
  await store.append(batch)

  const deleted = await pruneKeys(store, [1, 2], now)
  assert.equal(deleted, 200 + 5, 'the 200 oldest ordinary requests and the 5 refusals past 7 days')
  const kept = await store.list(1, {}, null, 5000)
  assert.equal(kept.length, KEEP_LAST + 5)
  const refusals = kept.filter((r) => r.refusal !== null).map((r) => r.at)
  assert.deepEqual(refusals, [4, 3, 2, 1, 0].map((i) => now - 2 * DAY_MS + i))
  assert.equal(kept.filter((r) => r.refusal === null).at(-1)!.at, now - 1_000_000 + 200, 'the newest 1,000 ordinary ones')
  assert.equal((await store.list(2, {}, null, 5000)).length, 11)
  assert.equal(await pruneKeys(store, [1, 2], now), 0, 'a second prune finds nothing')

  // The stale-refusal job visits the keys holding refusals past 7 days (key 2 here) without any new write.
  const jobs = keyRequestJobs({ requestLog: null, keyRequests: store, clock: h.clock })
  assert.deepEqual(jobs.map((j) => j.name), ['request-log-stale-prune'])
  assert.deepEqual(await store.keysWithRefusalsBefore(now - 7 * DAY_MS, 10), [2])
  await jobs[0]!.run()
  assert.equal((await store.list(2, {}, null, 5000)).length, 11, 'within its newest 1,000: kept')
})

test('a prune of more rows than one part (SQLite: PRUNE_ROWS a statement) deletes them all, the oldest, and keeps the newest 1,000', async (t) => {
  const h = await buildTestApp(t)
  const store = h.stores.keyRequests
  const extra = 2 * PRUNE_ROWS + 500
  const all = Array.from({ length: KEEP_LAST + extra }, (_, i) => record(1, T0 - 5_000_000 + i, false))
  for (let from = 0; from < all.length; from += APPEND_ROWS) await store.append(all.slice(from, from + APPEND_ROWS))
  assert.equal(await pruneKeys(store, [1], T0), extra)
  const kept = await store.list(1, {}, null, 5000)
  assert.deepEqual([kept.length, kept.at(-1)!.at, kept[0]!.at], [KEEP_LAST, all[extra]!.at, all.at(-1)!.at])
})

test('the prune job holds the keys just written to the bound; a flood writes at most 1,000 per key and batch', async (t) => {
  const h = await buildTestApp(t, { env: NO_TIMER })
  const seen = countAppends(h.stores.keyRequests)
  const keyId = await keyIdOf(h, h.keys.customer)
  for (let i = 0; i < KEEP_LAST + 30; i++) await h.call({ method: 'GET', url: '/v1/pets', key: h.keys.customer })
  await h.app.close()
  assert.equal(seen.batches, KEEP_LAST / APPEND_ROWS, 'one flush, in parts of APPEND_ROWS')
  assert.equal(seen.rows, KEEP_LAST, 'the 31 oldest of the batch were never written: the bound keeps the newest 1,000')
  assert.equal((await h.stores.keyRequests.list(keyId, {}, null, 5000)).length, KEEP_LAST)
})

// Fault caught: a request made with a key of ours that was refused (revoked, expired, rotated past
// its grace period) in no log, because the pipeline knew no key for it; or logged without which
// state refused it; or an unknown key's request logged under some key; or the presented key kept.
// Whose log: the refused key's own id (each key of a rotated pair has its own log, docs/product.md
// 9.13). That key can no longer read its log, and no admin route lists another key's log: the
// entries are read here through the store, after a read of another key's log flushed the recorder.
test('a revoked key\'s 401, an expired key\'s and a rotated key\'s past its grace are in that key\'s own log, rule key with its state; an unknown key\'s in none', async (t) => {
  const h = await buildTestApp(t, { env: NO_TIMER })
  const seen = countAppends(h.stores.keyRequests)
  const entries = async (keyId: number) => {
    await log(h, h.keys.admin) // flushes what this instance recorded (key-requests.service.ts)
    return h.stores.keyRequests.list(keyId, {}, null, 100)
  }

  const revoked = await h.makeKey('customer')
  h.clock.advance(1000)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/admin/keys/${revoked.id}` })).statusCode, 204)
  const first = await h.call({ method: 'GET', url: '/v1/pets?password=hunter2', key: revoked.key })
  assert.equal(first.statusCode, 401)
  // The second is refused from the refused-key cache, without a database read: logged all the same.
  const second = await h.call({ method: 'DELETE', url: '/v1/pets/1', key: revoked.key })
  assert.equal(second.statusCode, 401)
  const revokedAt = new Date(T0 + 1000).toISOString()
  const keyRule = {
    rule: 'key',
    message: `key ${revoked.id} was revoked at ${revokedAt}: every request made with it is refused`,
    state: 'revoked',
    since: revokedAt,
    replacedBy: null
  }
  assert.deepEqual((await entries(revoked.id)).map((e) => ({ ...e, id: 0, latencyMs: 0 })), [
    {
      id: 0, keyId: revoked.id, at: T0 + 1000, method: 'DELETE', route: '/v1/pets/{petId}', operationId: 'deletePet',
      query: null, status: 401, code: 'unauthenticated', requestId: second.headers['request-id'], latencyMs: 0, via: null,
      refusal: keyRule
    },
    {
      id: 0, keyId: revoked.id, at: T0 + 1000, method: 'GET', route: '/v1/pets', operationId: 'listPets',
      query: 'password=[redacted]', status: 401, code: 'unauthenticated', requestId: first.headers['request-id'],
      latencyMs: 0, via: null, refusal: keyRule
    }
  ])

  const expiring = await h.call({
    method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'pro', expiresAt: new Date(T0 + 60_000).toISOString() }
  })
  assert.equal(expiring.statusCode, 201, expiring.body)
  const expired = { id: expiring.json<{ id: number }>().id, key: expiring.json<{ key: string }>().key }
  h.clock.advance(60_000)
  const late = await h.call({ method: 'GET', url: '/v1/pets', key: expired.key })
  assert.equal(late.json().code, 'api_key_expired')
  const [lateEntry, ...none] = await entries(expired.id)
  assert.deepEqual(none, [])
  assert.deepEqual([lateEntry!.requestId, lateEntry!.status, lateEntry!.code, lateEntry!.refusal], [
    late.headers['request-id'], 401, 'api_key_expired', {
      rule: 'key',
      message: `key ${expired.id} expired at ${new Date(T0 + 60_000).toISOString()}: every request made with it is refused; ask an admin for a new key`,
      state: 'expired',
      since: new Date(T0 + 60_000).toISOString(),
      replacedBy: null
    }
  ])

  const rotating = await h.makeKey('customer')
  const rotated = await h.call({ method: 'POST', url: `/v1/admin/keys/${rotating.id}/rotate`, payload: { gracePeriodSeconds: 60 } })
  assert.equal(rotated.statusCode, 201, rotated.body)
  const successor: { id: number; key: string } = rotated.json()
  const withinGrace = await h.call({ method: 'GET', url: '/v1/pets', key: rotating.key })
  assert.equal(withinGrace.statusCode, 200)
  h.clock.advance(61_000)
  const stale = await h.call({ method: 'GET', url: '/v1/pets', key: rotating.key })
  assert.equal(stale.json().code, 'api_key_expired')
  const graceEnd = new Date(T0 + 61_000 + 60_000).toISOString()
  assert.deepEqual((await entries(rotating.id)).map((e) => [e.requestId, e.status, e.refusal]), [
    [stale.headers['request-id'], 401, {
      rule: 'key',
      message: `key ${rotating.id} was rotated and its grace period ended at ${graceEnd}: it is refused from then on; key ${successor.id} replaced it: send that key instead`,
      state: 'rotated',
      since: graceEnd,
      replacedBy: successor.id
    }],
    [withinGrace.headers['request-id'], 200, null]
  ])
  assert.deepEqual(await log(h, successor.key), [], 'the successor\'s log holds its own requests only')

  // An unknown key, well formed or not, belongs to no log: nothing more is written for it.
  const rowsBefore = seen.rows
  for (const unknown of ['psk_' + 'x'.repeat(43), 'not-a-key']) {
    assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: unknown })).statusCode, 401)
  }
  await log(h, h.keys.admin)
  assert.equal(seen.rows, rowsBefore, 'no row for an unknown key')

  await h.app.close()
  const stored = JSON.stringify([
    await h.stores.keyRequests.list(revoked.id, {}, null, 100),
    await h.stores.keyRequests.list(expired.id, {}, null, 100),
    await h.stores.keyRequests.list(rotating.id, {}, null, 100)
  ])
  for (const secret of [revoked.key, expired.key, rotating.key, 'hunter2']) assert.ok(!stored.includes(secret), 'no key, no secret kept')
})
