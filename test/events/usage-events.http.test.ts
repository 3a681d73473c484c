// quota.threshold and deprecation.used (issue 31), on both engines: written by the usage flush in
// the transaction that adds the counts, once per quota identity and UTC day (and operation),
// across flushes and a restart of the app on the same database; a customer sees its own only.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { openTestStores } from '../helpers/stores.ts'
import { barrier, eventsOf } from './feed.ts'

const FREE_PER_MINUTE = 60
const DAY_MS = 86_400_000

/** `n` allowed requests with the key, each 60 (the free minute quota) in a minute of the app's clock of their own. */
async function spend (h: TestApp, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    if (i % FREE_PER_MINUTE === 0) h.clock.advance(60_000)
    const res = await h.call({ method: 'GET', url: '/v1/pets?limit=1', key })
    assert.equal(res.statusCode, 200, `request ${i + 1}: ${res.body}`)
  }
}

/**
 * Flushes this instance's usage (reading usage through the API writes it first) and returns the
 * key's allowed count today.
 */
async function flush (h: TestApp, keyId: number): Promise<number> {
  const res = await h.call({ method: 'GET', url: `/v1/admin/keys/${keyId}/usage?days=1` })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json().days as Array<{ allowed: number }>).at(-1)?.allowed ?? 0
}

const thresholds = (events: Awaited<ReturnType<typeof eventsOf>>) => events.map(
  (e) => [e.data.keyId, e.data.percent, e.data.used, e.data.limit, e.data.window]
)

test('a free key passing 80, 95 and 100% of its day quota writes three quota.threshold events, across flushes and a restart; its holder sees them, another customer none', async (t) => {
  const stores = await openTestStores(t)
  const first = await buildTestApp(t, { stores })
  const a = await first.makeKey('customer', 'free')
  const b = await first.makeKey('customer', 'free')

  await spend(first, a.key, 790)
  assert.equal(await flush(first, a.id), 790)
  await spend(first, b.key, 5)
  await barrier(first)
  assert.deepEqual(await eventsOf(first, 'quota.*', 0), [], 'under 80%: nothing')

  await spend(first, a.key, 10)
  assert.equal(await flush(first, a.id), 800)
  assert.deepEqual(thresholds(await eventsOf(first, 'quota.threshold', 1)), [[a.id, 80, 800, 1000, 'day']])
  // The holder sees its own event (two requests: a page and the empty one after it).
  await barrier(first)
  assert.deepEqual(thresholds(await eventsOf(first, 'quota.*', 0, { key: a.key })), [[a.id, 80, 800, 1000, 'day']])
  await spend(first, a.key, 98)
  assert.equal(await flush(first, a.id), 900)
  // A restart on the same database: the app's close flushes, the new app remembers nothing itself.
  await first.app.close()

  const second = await buildTestApp(t, { stores })
  second.clock.set(first.clock.now())
  await spend(second, a.key, 60)
  assert.equal(await flush(second, a.id), 960)
  await spend(second, a.key, 40)
  assert.equal(await flush(second, a.id), 1000)
  // Past 100% (the restarted limiter may still let a few through: day-seed.ts): nothing more.
  second.clock.advance(60_000)
  for (let i = 0; i < 5; i++) await second.call({ method: 'GET', url: '/v1/pets', key: a.key })
  await flush(second, a.id)
  await barrier(second)
  const all = await eventsOf(second, 'quota.threshold', 3)
  assert.deepEqual(thresholds(all), [[a.id, 80, 800, 1000, 'day'], [a.id, 95, 960, 1000, 'day'], [a.id, 100, 1000, 1000, 'day']])
  assert.deepEqual(await eventsOf(second, 'quota.*', 0, { key: b.key }), [], 'another customer sees none of them')
})

test('deprecation.used is written once per key, operation and UTC day, with the calls counted then, sunset and successor', async (t) => {
  const h = await buildTestApp(t)
  const { id, key } = await h.makeKey('customer')
  const other = await h.makeKey('customer')
  const category = (await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })).json()
  const pet = (await h.call({ method: 'POST', url: '/v1/pets', headers: { 'idempotency-key': 'rex' }, payload: { name: 'Rex', categoryId: category.id } })).json()
  const getPet = async (k: string) => {
    assert.equal((await h.call({ method: 'GET', url: `/v1/pets/${pet.id}`, key: k })).statusCode, 200)
  }

  for (let i = 0; i < 3; i++) await getPet(key)
  await flush(h, id)
  await getPet(key)
  await getPet(other.key)
  await flush(h, id)
  const today = new Date(h.clock.now()).toISOString().slice(0, 10)
  h.clock.advance(DAY_MS)
  await getPet(key)
  await flush(h, id)
  await barrier(h)
  const events = await eventsOf(h, 'deprecation.used', 3)
  const tomorrow = new Date(h.clock.now()).toISOString().slice(0, 10)
  const common = { operationId: 'getPet', sunset: h.config.getPetSunset.toISOString(), successor: 'GET /v1/pets?id={petId}' }
  assert.deepEqual(events.map((e) => e.data), [
    { keyId: id, ...common, calls: 3, day: today },
    { keyId: other.id, ...common, calls: 1, day: today },
    { keyId: id, ...common, calls: 1, day: tomorrow }
  ])
  assert.deepEqual((await eventsOf(h, 'deprecation.*', 0, { key: other.key })).map((e) => e.data.keyId), [other.id], 'a customer sees its own')
})
