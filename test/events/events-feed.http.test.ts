// GET /v1/events and GET /v1/events/{eventId} through HTTP, on both engines: who sees what, the
// type filter, the cursor (every page links to the next, the last and empty ones included), and
// the catalogue and key events written with their change (and none with a refused one).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

interface Event { id: string; type: string; createdAt: string; data: Record<string, unknown> }

/** The target of a `Link: <…>; rel="next"` header (always present on the feed). */
function nextOf (link: unknown): string {
  assert.equal(typeof link, 'string', 'every page of the feed carries Link')
  const match = /^<(\/v1\/events\?[^>]*)>; rel="next"$/.exec(link as string)
  assert.ok(match, `a next link: ${String(link)}`)
  return match[1]!
}

interface FeedOptions { role?: 'customer' | 'staff' | 'admin'; key?: string; query?: string }

/** Every event the role sees from the start, following the links with a small page. */
async function walk (h: TestApp, options: FeedOptions): Promise<Event[]> {
  const seen: Event[] = []
  let url = `/v1/events?limit=3${options.query ?? ''}`
  for (;;) {
    const res = await h.call({
      method: 'GET',
      url,
      ...(options.key !== undefined ? { key: options.key } : { role: options.role ?? 'admin' })
    })
    assert.equal(res.statusCode, 200, res.body)
    const page = res.json() as Event[]
    seen.push(...page)
    url = nextOf(res.headers.link)
    if (page.length === 0) return seen
  }
}

/**
 * The feed once it shows at least `count` events. On PostgreSQL an event is served once every
 * transaction older than its own has ended, in the whole cluster (other tests' included), so
 * the feed may lag a moment behind the commit: it never skips, it waits.
 */
async function feed (h: TestApp, count: number, options: FeedOptions = {}): Promise<Event[]> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const events = await walk(h, options)
    if (events.length >= count || Date.now() > deadline) return events
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const types = (events: Event[]) => events.map((e) => e.type)

test('catalogue changes write their events, with the data a GET answered; refused changes write none', async (t) => {
  const h = await buildTestApp(t)
  const { call } = h
  const dogs = (await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs', description: 'Barks' } })).json()
  const hounds = (await call({ method: 'PUT', url: `/v1/categories/${dogs.id}`, payload: { name: 'Hounds' } })).json()
  const rex = (await call({ method: 'POST', url: '/v1/pets', headers: { 'idempotency-key': 'rex-1' }, payload: { name: 'Rex', categoryId: dogs.id } })).json()
  const max = (await call({ method: 'PATCH', url: `/v1/pets/${rex.id}`, payload: { name: 'Max' } })).json()
  const fido = (await call({ method: 'PUT', url: `/v1/pets/${rex.id}`, payload: { name: 'Fido', categoryId: dogs.id } })).json()
  // Refused or replayed: no event.
  assert.equal((await call({
    method: 'POST',
    url: '/v1/pets',
    headers: { 'idempotency-key': 'rex-1' },
    payload: { name: 'Rex', categoryId: dogs.id }
  })).statusCode, 201, 'a replay')
  assert.equal((await call({ method: 'PUT', url: `/v1/categories/${dogs.id}`, headers: { 'if-match': '"1"' }, payload: { name: 'Stale' } })).statusCode, 412)
  assert.equal((await call({ method: 'DELETE', url: `/v1/categories/${dogs.id}` })).statusCode, 409, 'category in use')
  assert.equal((await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Ghost', categoryId: 999 } })).json().code, 'category_not_found')
  assert.equal((await call({ method: 'PATCH', url: `/v1/pets/${rex.id}`, payload: { categoryId: 999 } })).json().code, 'category_not_found')
  assert.equal((await call({ method: 'DELETE', url: `/v1/pets/${rex.id}`, headers: { 'if-match': '"1"' } })).statusCode, 412)
  h.clock.advance(1000)
  assert.equal((await call({ method: 'DELETE', url: `/v1/pets/${rex.id}` })).statusCode, 204)
  assert.equal((await call({ method: 'DELETE', url: `/v1/categories/${dogs.id}` })).statusCode, 204)

  const events = await feed(h, 7, { role: 'staff', query: '&type=pet.*,category.*' })
  assert.deepEqual(types(events), ['category.created', 'category.updated', 'pet.created', 'pet.updated', 'pet.updated', 'pet.deleted', 'category.deleted'])
  assert.deepEqual(events.map((e) => e.data), [dogs, hounds, rex, max, fido, { id: rex.id }, { id: dogs.id }], 'data as the operation answered it')
  assert.equal(events[0]!.createdAt, new Date(T0).toISOString(), 'the instant of the change (the app clock)')
  assert.equal(events.at(-1)!.createdAt, new Date(T0 + 1000).toISOString())
  assert.equal(new Set(events.map((e) => e.id)).size, events.length)
  for (const event of events) assert.match(event.id, /^evt_[0-9a-f]{32}$/)
  // One event, as the feed gave it.
  const one = await call({ method: 'GET', url: `/v1/events/${events[2]!.id}`, role: 'staff' })
  assert.equal(one.statusCode, 200)
  assert.deepEqual(one.json(), events[2])
})

test('key administration writes key.created, key.updated, key.rotated and key.revoked with the key view, never a secret', async (t) => {
  const h = await buildTestApp(t)
  const { call } = h
  const created = await call({ method: 'POST', url: '/v1/admin/keys', payload: { name: 'Partner', role: 'customer', plan: 'pro' } })
  assert.equal(created.statusCode, 201)
  const { key: secret, ...view } = created.json()
  const id = view.id as number
  const updated = (await call({ method: 'PATCH', url: `/v1/admin/keys/${id}`, payload: { name: 'Partner EU' } })).json()
  assert.equal((await call({ method: 'PATCH', url: `/v1/admin/keys/${id}`, headers: { 'if-match': '"1"' }, payload: { name: 'stale' } })).statusCode, 412)
  const rotated = await call({ method: 'POST', url: `/v1/admin/keys/${id}/rotate`, payload: {} })
  assert.equal(rotated.statusCode, 201)
  const { key: successorSecret, ...successor } = rotated.json()
  assert.equal((await call({ method: 'DELETE', url: `/v1/admin/keys/${successor.id}` })).statusCode, 204)
  const revoked = (await call({ method: 'GET', url: `/v1/admin/keys/${successor.id}` })).json()
  const partner = (await call({ method: 'GET', url: `/v1/admin/keys/${id}` })).json()
  // Revoking again changes nothing: no second event.
  assert.equal((await call({ method: 'DELETE', url: `/v1/admin/keys/${successor.id}` })).statusCode, 204)

  const events = (await feed(h, 8, { query: '&type=key.*' })).filter((e) => e.data.id === id || e.data.id === successor.id)
  // The old key, still in its grace period, is revoked with its successor: an event of its own.
  assert.deepEqual(types(events), ['key.created', 'key.updated', 'key.rotated', 'key.revoked', 'key.revoked'])
  assert.deepEqual(events[4]!.data, { ...partner, reason: 'requested' }, 'key.revoked: the rotation partner, revoked with it')
  assert.deepEqual(events[0]!.data, view)
  assert.deepEqual(events[1]!.data, updated)
  assert.deepEqual(events[2]!.data, successor, 'key.rotated: the successor, which names the key it replaces')
  assert.equal(events[2]!.data.replaces, id)
  assert.deepEqual(events[3]!.data, { ...revoked, reason: 'requested' }, 'key.revoked: the view and why')
  const text = JSON.stringify(events)
  assert.ok(!text.includes(secret) && !text.includes(successorSecret), 'no secret in any event')
  assert.ok(!/hash/i.test(text), 'no hash either')
})

test('who sees what: a customer its own key\'s events, staff the shop\'s and its own, admin all; another\'s event is 404', async (t) => {
  const h = await buildTestApp(t)
  const { call } = h
  const other = await h.makeKey('customer')
  await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  await call({ method: 'PATCH', url: `/v1/admin/keys/${other.id}`, payload: { name: 'other customer' } })

  const all = await feed(h, 6)
  // The test app made customer (1), staff (2) and admin (3) keys, then `other` (4).
  assert.deepEqual(all.map((e) => `${e.type}:${String(e.data.id)}`), ['key.created:1', 'key.created:2', 'key.created:3', 'key.created:4', 'category.created:1', 'key.updated:4'])
  assert.deepEqual((await feed(h, 2, { role: 'staff' })).map((e) => `${e.type}:${String(e.data.id)}`), ['key.created:2', 'category.created:1'])
  assert.deepEqual((await feed(h, 1, { role: 'customer' })).map((e) => `${e.type}:${String(e.data.id)}`), ['key.created:1'])
  assert.deepEqual((await feed(h, 2, { key: other.key })).map((e) => `${e.type}:${String(e.data.id)}`), ['key.created:4', 'key.updated:4'])

  const othersEvent = all[5]!.id
  const notFound = await call({ method: 'GET', url: `/v1/events/${othersEvent}`, role: 'customer' })
  assert.equal(notFound.statusCode, 404)
  assert.equal(notFound.json().code, 'not_found')
  assert.equal((await call({ method: 'GET', url: `/v1/events/${all[4]!.id}`, role: 'customer' })).statusCode, 404, 'catalogue events are not a customer\'s')
  assert.equal((await call({ method: 'GET', url: `/v1/events/${othersEvent}`, key: other.key })).statusCode, 200)
  assert.equal((await call({ method: 'GET', url: `/v1/events/evt_${'0'.repeat(32)}` })).statusCode, 404, 'absent')
  assert.equal((await call({ method: 'GET', url: '/v1/events/evt_nope' })).json().code, 'validation_failed', 'not an event id')
})

test('the type filter: names and families, an unknown name is 400 validation_failed', async (t) => {
  const h = await buildTestApp(t)
  const { call } = h
  await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  await call({ method: 'PATCH', url: '/v1/pets/1', payload: { name: 'Max' } })
  assert.deepEqual(types(await feed(h, 2, { query: '&type=pet.*' })), ['pet.created', 'pet.updated'])
  assert.deepEqual(types(await feed(h, 2, { query: '&type=pet.updated,category.created' })), ['category.created', 'pet.updated'])
  assert.deepEqual(types(await walk(h, { query: '&type=order.*' })), [])
  for (const type of ['pet.eaten', 'parrot.*', 'pet', 'pet.created,', '*', 'pe.*', 'PET.created']) {
    const res = await call({ method: 'GET', url: `/v1/events?type=${encodeURIComponent(type)}` })
    assert.equal(res.statusCode, 400, type)
    assert.equal(res.json().code, 'validation_failed', type)
  }
})

test('the cursor walks every event once; every page links on, the empty last one to where it stands, and polling it finds what comes later', async (t) => {
  const h = await buildTestApp(t)
  const { call } = h
  for (let i = 1; i <= 4; i++) await call({ method: 'POST', url: '/v1/categories', payload: { name: `C${i}` } })
  await feed(h, 4, { query: '&type=category.*' })
  const first = await call({ method: 'GET', url: '/v1/events?type=category.*&limit=3' })
  assert.deepEqual(first.json().map((e: Event) => e.data.name), ['C1', 'C2', 'C3'])
  const second = await call({ method: 'GET', url: nextOf(first.headers.link) })
  assert.deepEqual(second.json().map((e: Event) => e.data.name), ['C4'])
  const secondNext = nextOf(second.headers.link)
  assert.match(secondNext, /type=category\.\*/, 'the filter is kept')
  assert.match(secondNext, /limit=3/, 'the limit is kept')
  const empty = await call({ method: 'GET', url: secondNext })
  assert.deepEqual(empty.json(), [])
  assert.equal(nextOf(empty.headers.link), secondNext, 'an empty page links to the same position')
  await call({ method: 'POST', url: '/v1/categories', payload: { name: 'C5' } })
  await feed(h, 5, { query: '&type=category.*' })
  assert.deepEqual((await call({ method: 'GET', url: secondNext })).json().map((e: Event) => e.data.name), ['C5'], 'polling the link finds the new event')
  // An empty feed from the start links too.
  const none = await call({ method: 'GET', url: '/v1/events?type=order.*' })
  assert.deepEqual(none.json(), [])
  nextOf(none.headers.link)

  const bad = (text: string) => Buffer.from(text).toString('base64url')
  for (const cursor of ['djE6MA', bad('v1:1'), bad('v2:0:1'), bad('v1:-1:1'), bad('v1:0:01'), bad('v1:18446744073709551616:1'), bad('v1:0:9007199254740992'), '!!!', 'x'.repeat(101)]) {
    const res = await call({ method: 'GET', url: `/v1/events?cursor=${encodeURIComponent(cursor)}` })
    assert.equal(res.statusCode, 400, cursor)
    assert.equal(res.json().code, 'validation_failed', cursor)
  }
  for (const limit of ['0', '101', 'x']) assert.equal((await call({ method: 'GET', url: `/v1/events?limit=${limit}` })).statusCode, 400, limit)
})

test('GET /v1/events is charged like any request', async (t) => {
  const h = await buildTestApp(t)
  const customer = await h.makeKey('customer', 'enterprise', { perMinute: 2, perDay: 100 })
  const answers = []
  for (let i = 0; i < 3; i++) answers.push((await h.call({ method: 'GET', url: '/v1/events', key: customer.key })).statusCode)
  assert.deepEqual(answers, [200, 200, 429])
})
