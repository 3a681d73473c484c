// The events of orders placed in batches on PostgreSQL (place_orders → place_order, migration 8):
// each placed order of a batch writes its one order.created inside the function, a replayed
// Idempotency-Key writes none, a refused order none, and inventory.low is written once, by the
// order that crossed the threshold.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AppError } from '../../../src/errors.ts'
import { DEFAULT_ORDER_HOLD_MS as HOLD, type OrderRecord } from '../../../src/orders/orders.store.ts'
import { createPostgresStores } from '../../../src/storage/postgres/index.ts'
import { serviceGate } from '../../helpers/services.ts'
import { createTestSchema, testPostgresReason, TEST_DATABASE_URL } from '../../helpers/stores.ts'

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0)
const postgres = serviceGate(await testPostgresReason())

test('postgres orders: concurrent placements (batched) write one order.created each, replays and refusals none, one inventory.low', { skip: postgres.skip }, async (t) => {
  // Faults caught: the batch path (place_orders) placing orders without their events, an event
  // for a replay or a refused order, inventory.low for every order below the threshold.
  postgres.check()
  const schema = await createTestSchema(t)
  const stores = await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 4 })
  t.after(() => stores.close())
  const category = await stores.categories.createCategory({ name: 'Fish' }, NOW)
  const { record: pet } = await stores.pets.createPet({ name: 'Goldfish', categoryId: category.id, status: 'available' }, null, NOW)
  await stores.inventory.setStock(pet.id, 10, null, NOW)
  const owner = await stores.keys.createKey({
    name: 'owner', role: 'customer', plan: 'pro', perMinute: null, perDay: null,
    hash: 'h-owner', prefix: 'psk_owner', now: NOW
  })
  const claim = (i: number) => ({ scope: `key:${owner.id}`, key: `k-${i}`, fingerprint: 'fp', now: NOW })
  const placeAll = async (count: number) => await Promise.allSettled(Array.from({ length: count }, (_, i) =>
    stores.orders.placeOrder(
      { petId: pet.id, ownerKeyId: owner.id, quantity: 1, shipDate: null, now: NOW, expiresAt: NOW + HOLD },
      claim(i)
    )))

  const first = await placeAll(12)
  const placed = first.filter((r) => r.status === 'fulfilled').map((r) => r.value.record)
  assert.equal(placed.length, 10, 'the stock of 10')
  assert.deepEqual(first.filter((r) => r.status === 'rejected').map((r) => (r.reason as AppError).code), ['pet_not_available', 'pet_not_available'])
  const replays = await placeAll(10)
  assert.ok(replays.every((r) => r.status === 'fulfilled' && r.value.replayed), 'the first ten keys replay')

  // The feed shows a transaction once every older one has ended (other tests share the server):
  // a stock set of another pet, written last, marks when everything before it is there.
  const { record: marker } = await stores.pets.createPet({ name: 'Marker', categoryId: category.id, status: 'available' }, null, NOW)
  await stores.inventory.setStock(marker.id, 1, null, NOW)
  let events = await stores.events.listEvents({ visibility: { role: 'admin' }, after: null, limit: 1000 })
  for (let tries = 0; tries < 200 && !events.some((e) => (e.data as { petId?: number }).petId === marker.id); tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    events = await stores.events.listEvents({ visibility: { role: 'admin' }, after: null, limit: 1000 })
  }
  const created = events.filter((e) => e.type === 'order.created')
  assert.deepEqual(
    created.map((e) => (e.data as OrderRecord).id).sort((a, b) => a - b),
    placed.map((o) => o.id).sort((a, b) => a - b),
    'one per placed order'
  )
  for (const event of created) {
    const order = placed.find((o) => o.id === (event.data as OrderRecord).id)
    assert.deepEqual(event.data, order, 'data is the OrderRecord the store answered')
    assert.equal(event.subjectKeyId, owner.id)
    assert.equal(event.createdAt, NOW)
    assert.match(event.id, /^evt_[0-9a-f]{32}$/)
  }
  const low = events.filter((e) => e.type === 'inventory.low')
  assert.equal(low.length, 1, 'only the order that took the stock from 6 to 5')
  assert.deepEqual({ ...(low[0]!.data as object), version: 0 }, { petId: pet.id, quantity: 5, status: 'available', version: 0 })
  assert.equal(low[0]!.audience, 'inventory')
  assert.equal(low[0]!.subjectKeyId, null)
})
