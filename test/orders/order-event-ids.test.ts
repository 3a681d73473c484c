// The ids of the events an order writes, on each engine, take the form and the time order of
// TypeScript's (events/events.store.ts, newEventId): on PostgreSQL order.created's is TypeScript's,
// sent with the order (migration 29), and sweep_expired_orders makes order.expired's in PL/pgSQL
// (new_event_id(), issue 49 section 3 and issue 51 item 2).
// Fault caught: a function going back to `evt_` and a random UUID (its ids sort at random among
// TypeScript's, and every event dirties a page of the events' unique index), or an id from
// another clock than the wall clock's milliseconds.
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import { newEventId } from '../../src/events/events.store.ts'
import { ENGINES } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'

const HOLD = 30 * 60_000
const ID = /^evt_([0-9a-f]{12})[0-9a-f]{20}$/

for (const engine of ENGINES) {
  test(`${engine.name}: order.created and order.expired ids sort by time among TypeScript's, the millisecond first`, async (t) => {
    const { stores, rows } = await engine.open(t, tempDir(t, 'petstore-event-ids-'))
    const category = await stores.categories.createCategory({ name: 'Fish' }, Date.now())
    const { record: pet } = await stores.pets.createPet({ name: 'Goldie', categoryId: category.id, status: 'available' }, null, Date.now())
    await stores.inventory.setStock(pet.id, 100, null, Date.now())
    const owner = await stores.keys.createKey({
      name: 'owner', role: 'customer', plan: 'free', perMinute: null, perDay: null,
      hash: 'h-owner', prefix: 'psk_owner', now: Date.now()
    })
    const place = async (expiresAt: number): Promise<void> => {
      const now = Date.now()
      const input = { petId: pet.id, quantity: 1, shipDate: null, ownerKeyId: owner.id, now, expiresAt }
      await stores.orders.placeOrder(input, null)
    }
    const created = async (): Promise<string[]> =>
      (await rows<{ id: string }>("SELECT id FROM events WHERE type IN ('order.created', 'order.expired') ORDER BY created_at, id")).map((r) => r.id)

    const before = Date.now()
    // The first order lapses after the second is placed (else placing the second would sweep it).
    await place(Date.now() + 500)
    await sleep(3)
    const typescript = newEventId()
    await sleep(3)
    await place(Date.now() + HOLD)
    await sleep(600)
    // The first order has lapsed: the sweep writes its order.expired, later than everything above.
    assert.deepEqual(await stores.orders.sweepExpired(Date.now(), 10), { orders: 1, pets: 1 })
    const after = Date.now()

    const [first, second, expired] = await created()
    assert.ok(first !== undefined && second !== undefined && expired !== undefined, 'two order.created and an order.expired')
    for (const id of [first, second, expired]) {
      const ms = parseInt(ID.exec(id)?.[1] ?? 'x', 16)
      assert.ok(ms >= before && ms <= after, `${id}: its first 12 hex digits are a millisecond of the run (${before}..${after})`)
    }
    assert.deepEqual([first, typescript, second, expired].toSorted(), [first, typescript, second, expired],
      'in the order they were made, TypeScript\'s among them')
  })
}
