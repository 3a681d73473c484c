// The order and inventory events (issue 31; docs/product.md, events): each change writes its
// events in its own transaction, with the store's record as data, and a refusal writes none.
// Read straight from the outbox (stores.events, as admin). Through the HTTP API on real storage,
// so it runs on every engine (PETSTORE_TEST_ENGINE=postgres).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { StoredEvent } from '../../src/events/events.store.ts'
import type { OrderRecord } from '../../src/orders/orders.store.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

const MINUTE = 60_000

const markers = new WeakMap<TestApp, number>()

/**
 * Every event committed so far. PostgreSQL's feed shows a transaction only once every older one
 * has ended (other tests share the server), so this first writes a marker (a stock set of a pet of
 * its own), waits until the feed shows it, and leaves the markers out: whatever was committed
 * before the marker is then in the list, and a change that wrote nothing adds nothing.
 */
async function eventsOf (h: TestApp): Promise<StoredEvent[]> {
  let marker = markers.get(h)
  if (marker === undefined) {
    const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Markers' } })
    marker = (await h.call({
      method: 'POST',
      url: '/v1/pets',
      role: 'staff',
      payload: { name: 'Marker', categoryId: category.json().id }
    })).json().id as number
    markers.set(h, marker)
  }
  const mark = await h.stores.inventory.setStock(marker, 1, null, h.clock.now())
  const isMarker = (e: StoredEvent) => (e.data as { petId?: number }).petId === marker
  for (let tries = 0; tries < 200; tries++) {
    const events = await h.stores.events.listEvents({ visibility: { role: 'admin' }, after: null, limit: 1000 })
    if (events.some((e) => isMarker(e) && (e.data as { version: number }).version === mark.version)) {
      return events.filter((e) => !isMarker(e))
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the marker never reached the feed')
}

/** The events written since `seen` of them were: what one change wrote. */
async function newEvents (h: TestApp, seen: StoredEvent[]): Promise<Array<Pick<StoredEvent, 'type' | 'audience' | 'subjectKeyId' | 'data' | 'createdAt'>>> {
  return (await eventsOf(h))
    .slice(seen.length)
    .map(({ type, audience, subjectKeyId, data, createdAt }) => ({ type, audience, subjectKeyId, data, createdAt }))
}

async function addPet (h: TestApp, stock: number): Promise<number> {
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Goldie', categoryId: category.json().id } })
  const petId = pet.json().id as number
  assert.equal((await h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: { quantity: stock } })).statusCode, 200)
  return petId
}

const place = (h: TestApp, key: string, petId: number, quantity: number, idempotencyKey?: string) =>
  h.call({
    method: 'POST',
    url: '/v1/store/orders',
    key,
    payload: { petId, quantity },
    ...(idempotencyKey !== undefined && { headers: { 'idempotency-key': idempotencyKey } })
  })

/** The order as the store records it, read back through the store (owner included). */
async function recordOf (h: TestApp, id: number): Promise<OrderRecord> {
  const record = await h.stores.orders.getOrder(id, null)
  assert.ok(record !== null)
  return record
}

test('order.created is written with the placed order (its record, its owner, the clock\'s instant); a replayed Idempotency-Key and a refused order write none', async (t) => {
  // Faults caught: no event, an event outside the order's transaction left behind by a refusal, a
  // second event on a replay, the wrong owner (another customer would see it) or the wrong time.
  const h = await buildTestApp(t)
  const petId = await addPet(h, 20)
  const customer = await h.makeKey('customer', 'pro')
  let seen = await eventsOf(h)

  const placed = await place(h, customer.key, petId, 2, 'k-1')
  assert.equal(placed.statusCode, 201)
  const record = await recordOf(h, placed.json().id)
  assert.deepEqual(await newEvents(h, seen), [
    { type: 'order.created', audience: 'order', subjectKeyId: customer.id, data: record, createdAt: T0 }
  ])
  seen = await eventsOf(h)

  assert.equal((await place(h, customer.key, petId, 2, 'k-1')).statusCode, 201, 'the replay answers the first result')
  assert.equal((await place(h, customer.key, petId, 50)).json().code, 'insufficient_stock')
  assert.equal((await place(h, customer.key, petId + 1000, 1)).json().code, 'pet_not_found')
  assert.deepEqual(await newEvents(h, seen), [], 'neither the replay nor the refusals wrote an event')
})

test('order.updated (a new ship date), order.completed and order.cancelled (the order as it was) are written with their change; a refused change writes none', async (t) => {
  // Faults caught: a change without its event, completing reported as an update, a cancel that
  // reports the order after the delete (or none), an event written by a 412 or 409.
  const h = await buildTestApp(t)
  const petId = await addPet(h, 20)
  const customer = await h.makeKey('customer', 'pro')
  const first = (await place(h, customer.key, petId, 1)).json().id as number
  const second = (await place(h, customer.key, petId, 1)).json().id as number
  let seen = await eventsOf(h)

  h.clock.advance(MINUTE)
  const dated = await h.call({ method: 'PATCH', url: `/v1/store/orders/${first}`, role: 'staff', payload: { shipDate: '2026-12-02T10:00:00Z' } })
  assert.equal(dated.statusCode, 200)
  assert.deepEqual(await newEvents(h, seen), [{
    type: 'order.updated',
    audience: 'order',
    subjectKeyId: customer.id,
    data: await recordOf(h, first),
    createdAt: T0 + MINUTE
  }])
  seen = await eventsOf(h)

  assert.equal((await h.call({
    method: 'PATCH',
    url: `/v1/store/orders/${first}`,
    role: 'staff',
    headers: { 'if-match': '"1"' },
    payload: { complete: true }
  })).statusCode, 412)
  assert.deepEqual(await newEvents(h, seen), [], 'a stale If-Match writes nothing')
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/store/orders/${first}`, role: 'staff', payload: { complete: true } })).statusCode, 200)
  const completed = await recordOf(h, first)
  assert.equal(completed.complete, true)
  assert.deepEqual(await newEvents(h, seen), [
    { type: 'order.completed', audience: 'order', subjectKeyId: customer.id, data: completed, createdAt: T0 + MINUTE }
  ])
  seen = await eventsOf(h)

  assert.equal((await h.call({ method: 'DELETE', url: `/v1/store/orders/${first}`, key: customer.key })).json().code, 'order_already_complete')
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/store/orders/${second}`, key: h.keys.customer })).statusCode, 404, "another customer's order")
  assert.deepEqual(await newEvents(h, seen), [], 'refused cancels write nothing')
  const before = await recordOf(h, second)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/store/orders/${second}`, key: customer.key })).statusCode, 204)
  assert.deepEqual(await newEvents(h, seen), [
    { type: 'order.cancelled', audience: 'order', subjectKeyId: customer.id, data: before, createdAt: T0 + MINUTE }
  ])
})

test('order.expired is written for every lapsed order a sweep deletes: the periodic sweep, and the lazy sweeps of a placement and of a cancel', async (t) => {
  // Faults caught: a sweep that returns the stock without the event (on PostgreSQL: inside
  // sweep_expired_orders), one event for several orders, an event at the wrong instant.
  const h = await buildTestApp(t)
  const [a, b, c] = [await addPet(h, 10), await addPet(h, 10), await addPet(h, 10)]
  const customer = await h.makeKey('customer', 'pro')
  const ids = [] as number[]
  for (const petId of [a, a, b, c]) ids.push((await place(h, customer.key, petId, 1)).json().id as number)
  const records = await Promise.all(ids.map((id) => recordOf(h, id)))
  const seen = await eventsOf(h)
  const lapse = T0 + 31 * MINUTE
  h.clock.set(lapse)

  const expired = (record: OrderRecord) =>
    ({ type: 'order.expired', audience: 'order', subjectKeyId: customer.id, data: record, createdAt: lapse })
  // Lazy: a placement for pet a sweeps its two lapsed orders first (staff: no cool-down in the way).
  assert.equal((await place(h, h.keys.staff, a, 1)).statusCode, 201)
  const afterPlace = await newEvents(h, seen)
  assert.deepEqual(afterPlace.slice(0, 2), [expired(records[0]!), expired(records[1]!)])
  assert.equal(afterPlace[2]?.type, 'order.created')
  // Lazy: cancelling the lapsed order of pet b sweeps it (404: it no longer exists).
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/store/orders/${ids[2]}`, key: customer.key })).statusCode, 404)
  // Periodic: the sweep job's store call.
  assert.deepEqual(await h.stores.orders.sweepExpired(lapse, 100), { orders: 1, pets: 1 })
  assert.deepEqual((await newEvents(h, seen)).slice(3), [expired(records[2]!), expired(records[3]!)])
  assert.deepEqual(await h.stores.orders.sweepExpired(lapse, 100), { orders: 0, pets: 0 })
  assert.equal((await newEvents(h, seen)).length, 5, 'nothing is reported twice')
})

test('inventory.low is written when the stock falls from above INVENTORY_LOW_THRESHOLD to at or below it, by an order or by staff; inventory.updated with every stock set', async (t) => {
  // Faults caught: a low event on every order below the threshold (not only the crossing), none
  // when an order crosses it (on PostgreSQL: inside place_order), a threshold that ignores the
  // configuration, a stock set without its inventory.updated.
  const h = await buildTestApp(t, { env: { INVENTORY_LOW_THRESHOLD: '3' } })
  const petId = await addPet(h, 6)
  let seen = await eventsOf(h)
  const item = async () => {
    const res = await h.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'staff' })
    return { ...res.json(), version: Number(JSON.parse(res.headers.etag as string)) }
  }

  assert.equal((await place(h, h.keys.staff, petId, 2)).statusCode, 201)
  assert.deepEqual((await newEvents(h, seen)).map((e) => e.type), ['order.created'], '6 to 4: above 3, not low')
  seen = await eventsOf(h)
  assert.equal((await place(h, h.keys.staff, petId, 1)).statusCode, 201)
  assert.deepEqual((await newEvents(h, seen)).map((e) => e.type), ['order.created', 'inventory.low'], '4 to 3 crosses')
  assert.deepEqual(
    (await newEvents(h, seen))[1],
    { type: 'inventory.low', audience: 'inventory', subjectKeyId: null, data: await item(), createdAt: T0 }
  )
  seen = await eventsOf(h)
  assert.equal((await place(h, h.keys.staff, petId, 1)).statusCode, 201)
  assert.deepEqual((await newEvents(h, seen)).map((e) => e.type), ['order.created'], '3 to 2: already low')
  seen = await eventsOf(h)

  assert.equal((await h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: { quantity: 10 } })).statusCode, 200)
  assert.deepEqual(await newEvents(h, seen), [
    { type: 'inventory.updated', audience: 'inventory', subjectKeyId: null, data: await item(), createdAt: T0 }
  ])
  seen = await eventsOf(h)
  assert.equal((await h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: { quantity: 1 } })).statusCode, 200)
  const low = await item()
  assert.deepEqual((await newEvents(h, seen)).map((e) => [e.type, e.data]), [['inventory.updated', low], ['inventory.low', low]])
  seen = await eventsOf(h)
  assert.equal((await h.call({
    method: 'PUT',
    url: `/v1/store/inventory/${petId}`,
    role: 'staff',
    headers: { 'if-match': '"1"' },
    payload: { quantity: 0 }
  })).statusCode, 412)
  assert.deepEqual(await newEvents(h, seen), [], 'a refused stock set writes nothing')
})
