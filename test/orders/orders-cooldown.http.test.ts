// Holds cannot be renewed forever (issue 30 item 2; docs/product.md rule 11): after a customer
// cancels an order or lets it lapse, it may not hold the same pet again for a cool-down, so a
// rival polling every 2 s gets the pet. Time moves with the injected clock only. Through the HTTP
// API on real storage, so it runs on every engine (PETSTORE_TEST_ENGINE=postgres).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, T0, type TestApp, type TestAppOptions } from '../helpers/app.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOLD = 30 * MINUTE
const COOLDOWN = 5 * MINUTE

interface Shop extends TestApp { petId: number; hoarder: string; rival: string }

/** One pet with one unit, and two free customers who both want it. */
async function shop (t: Parameters<typeof buildTestApp>[0], options: TestAppOptions = {}): Promise<Shop> {
  const h = await buildTestApp(t, options)
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Goldie', categoryId: category.json().id } })
  return { ...h, petId: pet.json().id as number, hoarder: (await h.makeKey('customer', 'free')).key, rival: (await h.makeKey('customer', 'free')).key }
}

const place = (h: Shop, key: string) => h.call({ method: 'POST', url: '/v1/store/orders', key, payload: { petId: h.petId, quantity: 1 } })
const cancel = (h: Shop, key: string, id: number) => h.call({ method: 'DELETE', url: `/v1/store/orders/${id}`, key })

test('the cancel-and-re-order loop: the hoarder is refused 409 order_cooldown (naming when it ends) and a rival polling every 2 s gets the pet within a minute', async (t) => {
  // Fault caught: a hold renewed for ever by cancelling and ordering again back to back (issue 30:
  // 8 renewals of 8 in 40 s, a rival polling every 2 s got the pet 0 times of 20).
  const h = await shop(t)
  const first = await place(h, h.hoarder)
  assert.equal(first.statusCode, 201)
  let held = first.json().id as number
  let renewals = 0
  let rivalGotItAt: number | null = null
  // The hoarder cancels and re-orders every 5 s; the rival tries every 2 s; for 60 s.
  for (let ms = 0; ms <= 60 * SECOND && rivalGotItAt === null; ms += SECOND) {
    h.clock.set(T0 + ms)
    if (ms % (5 * SECOND) === 0 && ms > 0) {
      if ((await cancel(h, h.hoarder, held)).statusCode === 204) {
        const again = await place(h, h.hoarder)
        if (again.statusCode === 201) { renewals++; held = again.json().id as number } else {
          assert.equal(again.statusCode, 409)
          assert.equal(again.json().code, 'order_cooldown')
          assert.equal(again.json().message, `you cancelled or let lapse an order of pet ${h.petId} recently; you may order it again from ${new Date(T0 + ms + COOLDOWN).toISOString()}`)
        }
      }
    }
    if (ms % (2 * SECOND) === 0 && (await place(h, h.rival)).statusCode === 201) rivalGotItAt = ms
  }
  assert.equal(renewals, 0, 'the hoarder never renewed its hold')
  assert.ok(rivalGotItAt !== null && rivalGotItAt <= 6 * SECOND, `the rival got the pet at ${rivalGotItAt} ms`)
})

test('the re-order-right-after-lapse loop: 5 ms after its hold lapses the hoarder is refused, a rival gets the pet, and the cool-down ends after ORDER_COOLDOWN_MINUTES', async (t) => {
  // Fault caught: a lapse that starts no cool-down (the same customer re-ordered 5 ms after its
  // hold lapsed, and a rival polling never saw stock), or a cool-down that never ends.
  const h = await shop(t)
  assert.equal((await place(h, h.hoarder)).statusCode, 201)
  h.clock.set(T0 + HOLD + 5)
  const again = await place(h, h.hoarder)
  assert.equal(again.json().code, 'order_cooldown', again.body)
  // The rival polls every 2 s; its first try sweeps the lapsed order and takes the unit.
  h.clock.advance(2 * SECOND)
  const rival = await place(h, h.rival)
  assert.equal(rival.statusCode, 201, rival.body)
  assert.equal((await cancel(h, h.rival, rival.json().id as number)).statusCode, 204)

  h.clock.set(T0 + HOLD + COOLDOWN - 1)
  assert.equal((await place(h, h.hoarder)).json().code, 'order_cooldown', 'still cooling down 1 ms before the end')
  h.clock.set(T0 + HOLD + COOLDOWN)
  assert.equal((await place(h, h.hoarder)).statusCode, 201, 'the cool-down ends at lapse + 5 minutes')
})

test('a lapse swept by the periodic sweep starts the cool-down too, and the stock it returns is there for a rival polling the inventory', async (t) => {
  // Fault caught: only the lazy sweep of a placement records the cool-down.
  const h = await shop(t)
  assert.equal((await place(h, h.hoarder)).statusCode, 201)
  h.clock.set(T0 + HOLD + 10 * SECOND)
  await h.stores.orders.sweepExpired(h.clock.now(), 200, h.config.orders)
  const inventory = await h.call({ method: 'GET', url: `/v1/store/inventory/${h.petId}`, key: h.rival })
  assert.deepEqual(inventory.json(), { petId: h.petId, quantity: 1, status: 'available' })
  assert.equal((await place(h, h.hoarder)).json().code, 'order_cooldown')
  assert.equal((await place(h, h.rival)).statusCode, 201)
})

test('staff and admin are exempt; staff cancelling a customer\'s order starts no cool-down; the cool-down is per pet; ORDER_COOLDOWN_MINUTES=0 turns it off', async (t) => {
  // Faults caught: staff locked out of re-ordering for the shop, a customer punished for a
  // staff decision, a cool-down that blocks every pet, a setting that is ignored.
  const h = await shop(t)
  for (const role of ['staff', 'admin'] as const) {
    const order = await place(h, h.keys[role])
    assert.equal((await cancel(h, h.keys[role], order.json().id as number)).statusCode, 204)
    assert.equal((await place(h, h.keys[role])).statusCode, 201, `${role} re-orders at once`)
    assert.equal((await h.call({
      method: 'DELETE',
      url: `/v1/store/orders/${(await h.call({ method: 'GET', url: `/v1/store/orders?petId=${h.petId}`, role })).json()[0].id}`,
      role
    })).statusCode, 204)
  }
  const order = await place(h, h.hoarder)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/store/orders/${order.json().id}`, role: 'staff' })).statusCode, 204)
  assert.equal((await place(h, h.hoarder)).statusCode, 201, 'staff cancelled it: no cool-down')

  const other = await shop(t, { env: { ORDER_COOLDOWN_MINUTES: '0' } })
  const mine = await place(other, other.hoarder)
  assert.equal((await cancel(other, other.hoarder, mine.json().id as number)).statusCode, 204)
  assert.equal((await place(other, other.hoarder)).statusCode, 201, 'no cool-down when it is 0')

  const held = (await h.call({ method: 'GET', url: `/v1/store/orders?petId=${h.petId}`, key: h.hoarder })).json()[0].id as number
  assert.equal((await cancel(h, h.hoarder, held)).statusCode, 204)
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Birds' } })
  const otherPet = (await h.call({
    method: 'POST',
    url: '/v1/pets',
    role: 'staff',
    payload: { name: 'Tweety', categoryId: category.json().id }
  })).json().id as number
  assert.equal((await h.call({
    method: 'POST',
    url: '/v1/store/orders',
    key: h.hoarder,
    payload: { petId: otherPet, quantity: 1 }
  })).statusCode, 201, 'another pet is not cooling down')
  assert.equal((await place(h, h.hoarder)).json().code, 'order_cooldown')
})
