// A lapsed order is lapsed from its expiresAt for every rule, whether or not a sweep has run
// (issue 35, loose end 2; docs/product.md rules 8, 9 and 10). Time moves with the injected clock
// only and no periodic sweep runs (the test app's job runs at start, before any order exists).
// Through the HTTP API on real storage, so it runs on every engine (PETSTORE_TEST_ENGINE=postgres).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { StoredEvent } from '../../src/events/events.store.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

const MINUTE = 60_000
const HOLD = 30 * MINUTE

async function addPet (h: TestApp, stock: number): Promise<number> {
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Goldie', categoryId: category.json().id } })
  assert.equal(pet.statusCode, 201)
  const petId = pet.json().id as number
  assert.equal((await h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: { quantity: stock } })).statusCode, 200)
  return petId
}

const place = (h: TestApp, key: string, petId: number, quantity: number) =>
  h.call({ method: 'POST', url: '/v1/store/orders', key, payload: { petId, quantity } })

const deletePet = (h: TestApp, petId: number) => h.call({ method: 'DELETE', url: `/v1/pets/${petId}`, role: 'staff' })

/**
 * The events about `petId` once the one of `lastType` shows in the feed (on PostgreSQL the feed
 * shows a transaction only once every older one has ended, and other tests share the server).
 */
async function petEventsUntil (
  h: TestApp,
  petId: number,
  lastType: string
): Promise<Array<Pick<StoredEvent, 'type' | 'createdAt'> & { id: number }>> {
  for (let tries = 0; tries < 200; tries++) {
    const events = (await h.stores.events.listEvents({ visibility: { role: 'admin' }, after: null, limit: 1000 }))
      .filter((e) => (e.data as { petId?: number; id?: number }).petId === petId
        || (e.type.startsWith('pet.') && (e.data as { id: number }).id === petId))
      .map((e) => ({ type: e.type, createdAt: e.createdAt, id: (e.data as { id: number }).id }))
    if (events.some((e) => e.type === lastType)) return events
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`no ${lastType} event reached the feed`)
}

// --- rule 8 ---

test('DELETE /v1/pets/{petId} answers 204 once the pet\'s only open order has lapsed, before any sweep, and ends that order with order.expired before pet.deleted', async (t) => {
  // Fault caught: rule 8 counting a lapsed order as open until the sweep job ran (up to 10 s of
  // 409 pet_has_open_orders for an order every read already treats as gone).
  const h = await buildTestApp(t)
  const petId = await addPet(h, 3)
  const id = (await place(h, h.keys.customer, petId, 2)).json().id as number

  h.clock.advance(HOLD - 1)
  const refused = await deletePet(h, petId)
  assert.equal(refused.statusCode, 409, 'still held 1 ms before expiresAt')
  assert.equal(refused.json().code, 'pet_has_open_orders')

  h.clock.advance(1)
  const lapse = T0 + HOLD
  assert.equal((await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'staff' })).statusCode, 404, 'lapsed at expiresAt')
  const deleted = await deletePet(h, petId)
  assert.equal(deleted.statusCode, 204, deleted.body)
  assert.equal((await h.call({ method: 'GET', url: `/v1/pets?id=${petId}`, role: 'staff' })).json().length, 0)
  assert.equal((await h.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'staff' })).statusCode, 404)

  // The delete ended the lapsed order itself: nothing is left for a sweep, and its end is reported once.
  assert.deepEqual(await h.stores.orders.sweepExpired(h.clock.now(), 100), { orders: 0, pets: 0 })
  assert.equal(await h.stores.orders.getOrder(id, null), null)
  const events = await petEventsUntil(h, petId, 'pet.deleted')
  assert.deepEqual(events.slice(-2), [
    { type: 'order.expired', createdAt: lapse, id },
    { type: 'pet.deleted', createdAt: lapse, id: petId }
  ])
})

test('DELETE /v1/pets/{petId} still answers 409 pet_has_open_orders while one live order is left beside a lapsed one, and changes nothing', async (t) => {
  // Fault caught: a lapsed order hiding a live one (the check asking only about the oldest order),
  // or a refused delete that still swept (its order.expired without its pet.deleted).
  const h = await buildTestApp(t)
  const petId = await addPet(h, 5)
  const early = (await place(h, h.keys.customer, petId, 1)).json().id as number
  h.clock.advance(10 * MINUTE)
  const late = (await place(h, h.keys.staff, petId, 1)).json().id as number
  h.clock.advance(HOLD - 10 * MINUTE)

  const refused = await deletePet(h, petId)
  assert.equal(refused.statusCode, 409)
  assert.equal(refused.json().code, 'pet_has_open_orders')
  assert.equal((await h.call({ method: 'GET', url: `/v1/store/orders/${late}`, role: 'staff' })).statusCode, 200)
  assert.notEqual(await h.stores.orders.getOrder(early, null), null, 'the refusal rolled back: the lapsed order is still there to sweep')
  assert.deepEqual(await h.stores.orders.sweepExpired(h.clock.now(), 100), { orders: 1, pets: 1 })

  h.clock.advance(10 * MINUTE)
  assert.equal((await deletePet(h, petId)).statusCode, 204, 'and once the live one lapses too, the pet goes')
})

// --- rule 9 ---

test('POST /v1/store/orders: a lapsed order leaves the open-orders cap and the units-per-pet cap before any sweep', async (t) => {
  // Fault caught: a cap counting the customer's lapsed orders until the sweep job ran. The new
  // orders name other pets than the lapsed ones where it matters, so a placement's own lazy sweep
  // (of the pet ordered) cannot hide the fault.
  const h = await buildTestApp(t, { env: { ORDER_LIMITS: 'free=1/2', ORDER_COOLDOWN_MINUTES: '0' } })
  const free = (await h.makeKey('customer', 'free')).key
  const [a, b, c] = [await addPet(h, 10), await addPet(h, 10), await addPet(h, 10)]
  assert.equal((await place(h, free, a, 2)).statusCode, 201)
  const capped = await place(h, free, b, 1)
  assert.equal(capped.statusCode, 409)
  assert.equal(capped.json().code, 'order_limit_reached', 'one open order is the cap')

  h.clock.advance(HOLD)
  const next = await place(h, free, b, 1)
  assert.equal(next.statusCode, 201, next.body)
  assert.notEqual((await h.stores.orders.listOrders({ petId: a }, { afterId: null, limit: 10 })).length, 0, 'the order of pet a lapsed unswept')

  h.clock.advance(HOLD)
  // Units: 2 of pet c is the cap; a lapsed order of 2 of pet c must not count toward it.
  assert.equal((await place(h, free, c, 2)).statusCode, 201)
  h.clock.advance(HOLD)
  assert.equal((await h.stores.orders.listOrders({ petId: c }, { afterId: null, limit: 10 })).length, 1, 'the order of pet c lapsed unswept')
  const again = await place(h, free, c, 2)
  assert.equal(again.statusCode, 201, again.body)
})
