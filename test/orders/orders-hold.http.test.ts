// Stock cannot be hoarded (issue 19 item 6; docs/product.md rules 9 and 10): a customer's open
// orders are capped per plan, and an open order lapses after its hold time and gives its stock
// back, without a timer per order and across a restart. Time moves with the injected clock only.
// Through the HTTP API on real storage, so it runs on every engine (PETSTORE_TEST_ENGINE=postgres).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { manualClock } from '../../src/shared/clock.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { buildTestApp, T0, type TestApp, type TestAppOptions } from '../helpers/app.ts'
import { createTestSchema, TEST_DATABASE_URL, TEST_ENGINE, testPostgresReason } from '../helpers/stores.ts'
import { requireService, skippedTestEnd } from '../helpers/services.ts'
import { tempDir } from '../helpers/temp.ts'

const MINUTE = 60_000
const HOLD = 30 * MINUTE

interface Shop extends TestApp { petId: number }

async function shop (t: TestContext, stock: number, options: TestAppOptions = {}): Promise<Shop> {
  const h = await buildTestApp(t, options)
  return { ...h, petId: await addPet(h, stock) }
}

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

async function inventoryOf (h: TestApp, petId: number): Promise<{ quantity: number; status: string }> {
  const res = await h.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'staff' })
  assert.equal(res.statusCode, 200)
  const { quantity, status } = res.json() as { quantity: number; status: string }
  return { quantity, status }
}

const openOrdersOf = async (h: TestApp, petId: number): Promise<number[]> =>
  ((await h.call({ method: 'GET', url: `/v1/store/orders?petId=${petId}&complete=false&limit=100`, role: 'staff' })).json() as Array<{ id: number }>).map((o) => o.id)

// --- rule 9: caps per plan ---

test('POST /v1/store/orders answers 409 order_limit_reached to a free customer past 5 open orders, and takes nothing (the hoarding of issue 19.6)', async (t) => {
  // Fault caught: no cap at all, so one free customer's orders take every pet.
  const h = await buildTestApp(t)
  const free = (await h.makeKey('customer', 'free')).key
  const pets = [] as number[]
  for (let i = 0; i < 6; i++) pets.push(await addPet(h, 100))
  for (const petId of pets.slice(0, 5)) assert.equal((await place(h, free, petId, 1)).statusCode, 201)

  const refused = await place(h, free, pets[5]!, 1)
  assert.equal(refused.statusCode, 409, refused.body)
  assert.equal(refused.json().code, 'order_limit_reached')
  assert.deepEqual(await inventoryOf(h, pets[5]!), { quantity: 100, status: 'available' }, 'a refused order takes no stock')
  assert.deepEqual(await openOrdersOf(h, pets[5]!), [], 'and creates no order')

  // Cancelling one frees a slot.
  const [first] = await openOrdersOf(h, pets[0]!)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/store/orders/${first}`, key: free })).statusCode, 204)
  assert.equal((await place(h, free, pets[5]!, 1)).statusCode, 201)
})

test('POST /v1/store/orders caps a free customer at 10 units of one pet across its open orders; other customers still buy', async (t) => {
  // Fault caught: the units cap counts one order, not the customer's open orders of the pet.
  const h = await shop(t, 1000)
  const free = (await h.makeKey('customer', 'free')).key
  const big = await place(h, free, h.petId, 11)
  assert.equal(big.statusCode, 409)
  assert.equal(big.json().code, 'order_limit_reached')
  assert.equal((await place(h, free, h.petId, 8)).statusCode, 201)
  const over = await place(h, free, h.petId, 3)
  assert.equal(over.statusCode, 409)
  assert.equal(over.json().code, 'order_limit_reached')
  assert.match(over.json().message, /10 units/)
  assert.equal((await place(h, free, h.petId, 2)).statusCode, 201)
  assert.equal((await place(h, (await h.makeKey('customer', 'free')).key, h.petId, 10)).statusCode, 201, 'another customer has its own cap')
  assert.deepEqual(await inventoryOf(h, h.petId), { quantity: 980, status: 'available' })
})

test('ORDER_LIMITS changes the caps of the plans it names; staff and admin are never capped', async (t) => {
  // Fault caught: caps that ignore the configuration, or that apply to staff.
  const h = await shop(t, 100, { env: { ORDER_LIMITS: 'pro=2/50,enterprise=1/1' } })
  const pro = (await h.makeKey('customer', 'pro')).key
  assert.equal((await place(h, pro, h.petId, 1)).statusCode, 201)
  assert.equal((await place(h, pro, h.petId, 1)).statusCode, 201)
  assert.equal((await place(h, pro, h.petId, 1)).json().code, 'order_limit_reached')
  const enterprise = (await h.makeKey('customer', 'enterprise')).key
  assert.equal((await place(h, enterprise, h.petId, 2)).json().code, 'order_limit_reached', 'enterprise=1/1 caps the enterprise plan')
  for (let i = 0; i < 8; i++) assert.equal((await place(h, h.keys.staff, h.petId, 10)).statusCode, 201, 'staff keys (enterprise here) are not capped')
  assert.equal((await place(h, h.keys.admin, h.petId, 18)).statusCode, 201)
  assert.deepEqual(await inventoryOf(h, h.petId), { quantity: 0, status: 'pending' })
})

test('POST /v1/store/orders holds the cap under concurrency: 20 simultaneous orders of a free customer, exactly 5 accepted', async (t) => {
  // Fault caught: a count-then-insert race (on PostgreSQL, READ COMMITTED) letting every order through.
  const h = await shop(t, 1000)
  const free = (await h.makeKey('customer', 'free')).key
  const responses = await Promise.all(Array.from({ length: 20 }, () => place(h, free, h.petId, 1)))
  assert.equal(responses.filter((r) => r.statusCode === 201).length, 5)
  for (const r of responses.filter((r) => r.statusCode !== 201)) assert.equal(r.json().code, 'order_limit_reached', r.body)
  assert.equal((await openOrdersOf(h, h.petId)).length, 5)
  assert.equal((await inventoryOf(h, h.petId)).quantity, 995)
})

// --- rule 10: open orders expire ---

test('an open order carries expiresAt (30 minutes by default, ORDER_HOLD_MINUTES otherwise); completing it makes it null and it never expires', async (t) => {
  // Fault caught: a complete order swept with the open ones, or a hold that ignores the configuration.
  const h = await shop(t, 5, { env: { ORDER_HOLD_MINUTES: '45' } })
  const res = await place(h, h.keys.customer, h.petId, 2)
  assert.equal(res.statusCode, 201)
  assert.equal(res.json().expiresAt, new Date(T0 + 45 * MINUTE).toISOString())
  const id = res.json().id as number
  const done = await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload: { complete: true } })
  assert.equal(done.json().expiresAt, null)
  h.clock.advance(24 * 60 * MINUTE)
  await h.stores.orders.sweepExpired(h.clock.now(), 100)
  const later = await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'customer' })
  assert.equal(later.statusCode, 200)
  assert.equal(later.json().complete, true)
  assert.deepEqual(await inventoryOf(h, h.petId), { quantity: 3, status: 'available' }, 'its stock stays sold')

  const fresh = await buildTestApp(t)
  const petId = await addPet(fresh, 5)
  assert.equal(
    (await place(fresh, fresh.keys.customer, petId, 1)).json().expiresAt,
    new Date(T0 + HOLD).toISOString(),
    'the default hold is 30 minutes'
  )
})

test('an expired order is gone at once for reads and changes, and its stock returns before the next order of the pet', async (t) => {
  // Fault caught: orders that never expire, so a pending pet stays pending for ever (issue 19.6).
  const h = await shop(t, 3)
  const hoarder = (await h.makeKey('customer', 'free')).key
  const res = await place(h, hoarder, h.petId, 3)
  const id = res.json().id as number
  assert.deepEqual(await inventoryOf(h, h.petId), { quantity: 0, status: 'pending' })
  assert.equal((await place(h, h.keys.customer, h.petId, 1)).json().code, 'pet_not_available')

  h.clock.advance(HOLD - 1)
  assert.equal((await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, key: hoarder })).statusCode, 200, 'still held 1 ms before expiresAt')
  h.clock.advance(1)
  assert.equal((await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, key: hoarder })).statusCode, 404, 'lapsed at expiresAt')
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/store/orders', key: hoarder })).json(), [])
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload: { complete: true } })).statusCode, 404, 'a lapsed order cannot be completed')

  // The next order of the pet sweeps it first, in the same transaction, and gets its stock.
  const next = await place(h, h.keys.customer, h.petId, 2)
  assert.equal(next.statusCode, 201, next.body)
  assert.deepEqual(await inventoryOf(h, h.petId), { quantity: 1, status: 'available' })
  assert.deepEqual(await openOrdersOf(h, h.petId), [next.json().id])
  assert.equal((await place(h, hoarder, h.petId, 1)).json().code, 'order_cooldown', 'the hoarder cools down from this pet (rule 11)')
  h.clock.advance(5 * MINUTE)
  assert.equal((await place(h, hoarder, h.petId, 1)).statusCode, 201, 'and then orders it again: a lapsed order no longer counts toward the cap')
})

test('the periodic sweep returns the stock of expired orders of every pet, and leaves live ones', async (t) => {
  // Fault caught: a sweep that returns no stock, deletes live orders, or only the lazy sweep of the ordered pet.
  const h = await buildTestApp(t)
  const a = await addPet(h, 2)
  const b = await addPet(h, 5)
  await place(h, h.keys.customer, a, 2)
  await place(h, h.keys.customer, b, 1)
  h.clock.advance(10 * MINUTE)
  const live = (await place(h, h.keys.customer, b, 1)).json().id as number
  h.clock.advance(HOLD - 10 * MINUTE)
  assert.deepEqual(await h.stores.orders.sweepExpired(h.clock.now(), 100), { orders: 2, pets: 2 })
  assert.deepEqual(await inventoryOf(h, a), { quantity: 2, status: 'available' }, 'a pending pet with stock again is available')
  assert.deepEqual(await inventoryOf(h, b), { quantity: 4, status: 'available' })
  assert.deepEqual(await openOrdersOf(h, b), [live])
  assert.deepEqual(await h.stores.orders.sweepExpired(h.clock.now(), 100), { orders: 0, pets: 0 }, 'nothing is swept twice')
})

/** Stores on one database that outlives an app: a SQLite file, or a PostgreSQL schema. */
async function durableStores (t: TestContext): Promise<() => Promise<Stores>> {
  if (TEST_ENGINE === 'postgres') {
    if (!requireService(t, await testPostgresReason())) throw skippedTestEnd('PostgreSQL')
    const schema = await createTestSchema(t)
    return async () => await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 4 })
  }
  const dir = tempDir(t, 'petstore-hold-')
  return async () => createSqliteStores(join(dir, 'petstore.db'))
}

test('an order that expired while no instance ran gives its stock back when the next instance starts', async (t) => {
  // Fault caught: expiry kept in a process's memory (a timer per order), lost with the process.
  const open = await durableStores(t)
  const first = await open()
  const h = await shop(t, 1, { stores: first })
  const id = (await place(h, h.keys.customer, h.petId, 1)).json().id as number
  assert.deepEqual(await inventoryOf(h, h.petId), { quantity: 0, status: 'pending' })
  await h.app.close()
  await first.close()

  // A new instance on the same database, 31 minutes later: its start sweeps (no request needed).
  const second = await open()
  t.after(() => second.close())
  const clock = manualClock(T0 + HOLD + MINUTE)
  const again = await buildTestApp(t, { stores: second, deps: { clock } })
  assert.deepEqual(await inventoryOf(again, h.petId), { quantity: 1, status: 'available' })
  assert.equal((await again.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'staff' })).statusCode, 404)
  assert.deepEqual(await openOrdersOf(again, h.petId), [])
})

test('two instances sweeping the same expired orders at once return each order\'s stock exactly once', async (t) => {
  // Fault caught: a sweep that adds back stock for rows another instance already deleted (stock created from nothing).
  const open = await durableStores(t)
  const a = await open()
  t.after(() => a.close())
  const h = await buildTestApp(t, { stores: a })
  const pets = [await addPet(h, 50), await addPet(h, 50), await addPet(h, 50)]
  for (const petId of pets) {
    for (let i = 0; i < 10; i++) assert.equal((await place(h, h.keys.customer, petId, 2)).statusCode, 201)
  }
  const b = await open()
  t.after(() => b.close())

  const later = T0 + HOLD
  const [x, y] = await Promise.all([a.orders.sweepExpired(later, 100), b.orders.sweepExpired(later, 100)])
  assert.equal(x.orders + y.orders, 30, 'every expired order deleted by one of them')
  for (const petId of pets) assert.deepEqual(await inventoryOf(h, petId), { quantity: 50, status: 'available' })
})

test('a lapsed order is not an open order for rule 6 before any sweep: setting the stock to 0 sells the pet, and sweeps the lapsed order', async (t) => {
  // Fault caught: a lapsed order counted as open until the periodic sweep (issue 35 §3.2), so the
  // pet stays pending with nothing held, and its stock comes back later onto a sold pet.
  const h = await shop(t, 1)
  const id = (await place(h, h.keys.customer, h.petId, 1)).json().id as number
  assert.deepEqual(await inventoryOf(h, h.petId), { quantity: 0, status: 'pending' })
  h.clock.advance(HOLD)
  assert.equal((await h.call({ method: 'PUT', url: `/v1/store/inventory/${h.petId}`, role: 'staff', payload: { quantity: 0 } })).statusCode, 200)
  assert.deepEqual(await inventoryOf(h, h.petId), { quantity: 0, status: 'sold' }, 'no open order is left: sold')
  assert.deepEqual(await h.stores.orders.sweepExpired(h.clock.now(), 100), { orders: 0, pets: 0 }, 'the stock set swept it')
  assert.equal((await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'staff' })).statusCode, 404)
})
