// Every plan has a default cap on what one customer holds (issue 30 item 9: one enterprise customer
// held 200 open orders of 1,000 units each). Enterprise's default is 1,000 open orders and 10,000
// units of a pet; `ORDER_LIMITS=enterprise=none` lifts it on purpose. Faults caught: enterprise
// uncapped by default again; `enterprise=none` no longer honoured; the cap taking stock anyway.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

async function stocked (t: TestContext, env: Record<string, string> = {}): Promise<TestApp & { petId: number }> {
  const h = await buildTestApp(t, { env })
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Goldie', categoryId: category.json().id } })
  const petId = pet.json().id as number
  assert.equal((await h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: { quantity: 20_000 } })).statusCode, 200)
  return { ...h, petId }
}

const place = (h: TestApp, key: string, petId: number, quantity: number) =>
  h.call({ method: 'POST', url: '/v1/store/orders', key, payload: { petId, quantity } })

const stockOf = async (h: TestApp, petId: number): Promise<number> =>
  (await h.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'staff' })).json().quantity as number

test('the default caps: every plan has one, enterprise 1,000 open orders and 10,000 units of a pet', () => {
  const { limits } = loadConfig({}).orders
  assert.deepEqual(limits, {
    free: { openOrders: 5, unitsPerPet: 10 },
    pro: { openOrders: 25, unitsPerPet: 100 },
    business: { openOrders: 100, unitsPerPet: 1_000 },
    enterprise: { openOrders: 1_000, unitsPerPet: 10_000 }
  })
  assert.equal(loadConfig({ ORDER_LIMITS: 'enterprise=none' }).orders.limits.enterprise, null)
})

test('an enterprise customer holds at most 10,000 units of a pet by default: the 11th order of 1,000 is 409 and takes nothing', async (t) => {
  const h = await stocked(t)
  const buyer = (await h.makeKey('customer', 'enterprise')).key
  for (let i = 0; i < 10; i++) assert.equal((await place(h, buyer, h.petId, 1_000)).statusCode, 201, `order ${i + 1}`)
  const over = await place(h, buyer, h.petId, 1_000)
  assert.equal(over.statusCode, 409, over.body)
  assert.equal(over.json().code, 'order_limit_reached')
  assert.equal(await stockOf(h, h.petId), 10_000, 'the refused order took no stock')
})

test('ORDER_LIMITS=enterprise=none lifts the enterprise cap on purpose', async (t) => {
  const h = await stocked(t, { ORDER_LIMITS: 'enterprise=none' })
  const buyer = (await h.makeKey('customer', 'enterprise')).key
  for (let i = 0; i < 11; i++) assert.equal((await place(h, buyer, h.petId, 1_000)).statusCode, 201, `order ${i + 1}`)
  assert.equal(await stockOf(h, h.petId), 9_000)
})
