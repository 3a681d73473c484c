// Rule 2 under concurrency: orders accepted for a pet never add up to more than its stock.
// Only the HTTP API and buildTestApp are used, so this runs unchanged on every engine
// (PETSTORE_TEST_ENGINE=postgres included).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

test('POST /v1/store/orders accepts exactly 10 of 48 simultaneous orders at a pet with stock 10; the rest answer 409', async (t) => {
  const h = await buildTestApp(t)
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Birds' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Kiwi', categoryId: category.json().id } })
  const petId = pet.json().id as number
  assert.equal((await h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: { quantity: 10 } })).statusCode, 200)

  const customers = [h.keys.customer, ...(await Promise.all([1, 2, 3, 4, 5].map(async () => (await h.makeKey('customer')).key)))]
  const responses = await Promise.all(Array.from({ length: 48 }, (_, i) =>
    h.call({ method: 'POST', url: '/v1/store/orders', key: customers[i % customers.length]!, payload: { petId, quantity: 1 } })))

  const accepted = responses.filter((r) => r.statusCode === 201)
  const refused = responses.filter((r) => r.statusCode !== 201)
  assert.equal(accepted.length, 10)
  assert.equal(accepted.reduce((sum, r) => sum + (r.json().quantity as number), 0), 10)
  assert.equal(new Set(accepted.map((r) => r.json().id)).size, 10)
  for (const res of refused) {
    assert.equal(res.statusCode, 409, res.body)
    assert.ok(['insufficient_stock', 'pet_not_available'].includes(res.json().code), res.body)
  }

  const entry = await h.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'customer' })
  assert.deepEqual(entry.json(), { petId, quantity: 0, status: 'pending' })
  const orders = await h.call({ method: 'GET', url: `/v1/store/orders?petId=${petId}&limit=100`, role: 'staff' })
  assert.equal(orders.json().length, 10)
})

test('POST /v1/store/orders with mixed quantities at once never takes more than the stock', async (t) => {
  const h = await buildTestApp(t)
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Nemo', categoryId: category.json().id } })
  const petId = pet.json().id as number
  await h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: { quantity: 25 } })

  const other = (await h.makeKey('customer')).key
  const responses = await Promise.all(Array.from({ length: 40 }, (_, i) =>
    h.call({ method: 'POST', url: '/v1/store/orders', key: i % 2 === 0 ? h.keys.customer : other, payload: { petId, quantity: 1 + (i % 4) } })))

  const taken = responses.filter((r) => r.statusCode === 201).reduce((sum, r) => sum + (r.json().quantity as number), 0)
  for (const res of responses.filter((r) => r.statusCode !== 201)) {
    assert.ok(['insufficient_stock', 'pet_not_available'].includes(res.json().code), res.body)
  }
  const entry = (await h.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'customer' })).json()
  assert.ok(taken <= 25)
  assert.equal(entry.quantity, 25 - taken)
  assert.equal(entry.status, entry.quantity === 0 ? 'pending' : 'available')
})
