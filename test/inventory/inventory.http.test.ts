// Inventory through HTTP on real storage: the stock of each pet, its status rules (docs/product.md
// section 5, rules 1, 6 and 7) and its ETag, which is the pet row's version.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { loadSampleData } from '../../src/sample-data.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

interface Shop extends TestApp { categoryId: number; petId: number }

async function shop (t: TestContext, status?: string): Promise<Shop> {
  const h = await buildTestApp(t)
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Cats' } })
  const categoryId = category.json().id as number
  const pet = await h.call({
    method: 'POST',
    url: '/v1/pets',
    role: 'staff',
    payload: { name: 'Milo', categoryId, ...(status !== undefined && { status }) }
  })
  assert.equal(pet.statusCode, 201)
  return { ...h, categoryId, petId: pet.json().id }
}

const put = (h: TestApp, petId: number | string, payload: unknown, headers: Record<string, string> = {}) =>
  h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: payload as object, headers })

const entry = async (h: TestApp, petId: number) => (await h.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'customer' })).json()

test('GET /v1/store/inventory/{petId} answers 200 with stock 1 and the pet\'s status for a new pet, and the pet\'s ETag', async (t) => {
  const h = await shop(t)
  const res = await h.call({ method: 'GET', url: `/v1/store/inventory/${h.petId}`, role: 'customer' })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), { petId: h.petId, quantity: 1, status: 'available' })
  assert.equal(res.headers.etag, '"1"')
})

test('GET /v1/store/inventory/{petId} answers 404 for a missing pet and 400 for an id that is not an int64', async (t) => {
  const h = await shop(t)
  for (const [id, status] of [['999', 404], ['9007199254740991', 404], ['9223372036854775807', 400], ['abc', 400], ['9223372036854775808', 400]] as const) {
    const res = await h.call({ method: 'GET', url: `/v1/store/inventory/${id}`, role: 'customer' })
    assert.equal(res.statusCode, status, id)
  }
})

test('GET /v1/store/inventory/{petId} shows a status that staff set on the pet directly (rule 7)', async (t) => {
  const h = await shop(t)
  const patched = await h.call({ method: 'PATCH', url: `/v1/pets/${h.petId}`, role: 'staff', payload: { status: 'pending' } })
  assert.equal(patched.statusCode, 200)
  const res = await h.call({ method: 'GET', url: `/v1/store/inventory/${h.petId}`, role: 'customer' })
  assert.deepEqual(res.json(), { petId: h.petId, quantity: 1, status: 'pending' })
  assert.equal(res.headers.etag, patched.headers.etag)
})

test('GET /v1/store/inventory/{petId} answers a new ETag once an order changes the stock', async (t) => {
  const h = await shop(t)
  await put(h, h.petId, { quantity: 5 })
  const before = await h.call({ method: 'GET', url: `/v1/store/inventory/${h.petId}`, role: 'customer' })
  const order = await h.call({ method: 'POST', url: '/v1/store/orders', role: 'customer', payload: { petId: h.petId, quantity: 1 } })
  assert.equal(order.statusCode, 201)
  const after = await h.call({ method: 'GET', url: `/v1/store/inventory/${h.petId}`, role: 'customer' })
  assert.notEqual(after.headers.etag, before.headers.etag)
  const stale = await put(h, h.petId, { quantity: 9 }, { 'if-match': before.headers.etag as string })
  assert.equal(stale.statusCode, 412)
})

test('GET /v1/store/inventory answers 200 with every entry in pet id order, in pages linked by Link rel="next"', async (t) => {
  const h = await shop(t)
  for (const name of ['Nala', 'Oliver']) {
    await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name, categoryId: h.categoryId } })
  }
  await put(h, 2, { quantity: 7 })
  const first = await h.call({ method: 'GET', url: '/v1/store/inventory?limit=2', role: 'customer' })
  assert.equal(first.statusCode, 200)
  assert.deepEqual(first.json(), [{ petId: 1, quantity: 1, status: 'available' }, { petId: 2, quantity: 7, status: 'available' }])
  const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.link as string)![1]!
  const second = await h.call({ method: 'GET', url: next, role: 'customer' })
  assert.deepEqual(second.json(), [{ petId: 3, quantity: 1, status: 'available' }])
  assert.equal(second.headers.link, undefined)
})

test('GET /v1/store/inventory answers 400 validation_failed for a bad limit, cursor or unknown parameter', async (t) => {
  const h = await shop(t)
  for (const query of ['limit=0', 'limit=101', 'limit=x', 'cursor=%21', 'status=available']) {
    const res = await h.call({ method: 'GET', url: `/v1/store/inventory?${query}`, role: 'customer' })
    assert.equal(res.statusCode, 400, query)
    assert.equal(res.json().code, 'validation_failed')
  }
})

test('PUT /v1/store/inventory/{petId} answers 200 with the entry and a new ETag', async (t) => {
  const h = await shop(t)
  const res = await put(h, h.petId, { quantity: 12 })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), { petId: h.petId, quantity: 12, status: 'available' })
  assert.equal(res.headers.etag, '"2"')
  assert.deepEqual(await entry(h, h.petId), { petId: h.petId, quantity: 12, status: 'available' })
})

test('PUT /v1/store/inventory/{petId} above 0 answers 200 and makes a pending or sold pet available (rule 6)', async (t) => {
  for (const status of ['pending', 'sold']) {
    const h = await shop(t, status)
    const res = await put(h, h.petId, { quantity: 3 })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), { petId: h.petId, quantity: 3, status: 'available' })
  }
})

test('PUT /v1/store/inventory/{petId} to 0 answers 200 and makes an available pet without open orders sold (rule 6)', async (t) => {
  const h = await shop(t)
  const res = await put(h, h.petId, { quantity: 0 })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), { petId: h.petId, quantity: 0, status: 'sold' })
  const pet = await h.call({ method: 'GET', url: `/v1/pets?id=${h.petId}`, role: 'customer' })
  assert.equal(pet.json()[0].status, 'sold')
})

test('PUT /v1/store/inventory/{petId} to 0 answers 200 and makes an available pet with open orders pending (rule 6)', async (t) => {
  const h = await shop(t)
  await put(h, h.petId, { quantity: 5 })
  const order = await h.call({ method: 'POST', url: '/v1/store/orders', role: 'customer', payload: { petId: h.petId, quantity: 2 } })
  assert.equal(order.statusCode, 201)
  const res = await put(h, h.petId, { quantity: 0 })
  assert.deepEqual(res.json(), { petId: h.petId, quantity: 0, status: 'pending' })
  // Cancelling the open order then returns its 2 to the stock and the pet is available again (rule 5).
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/store/orders/${order.json().id}`, role: 'customer' })).statusCode, 204)
  assert.deepEqual(await entry(h, h.petId), { petId: h.petId, quantity: 2, status: 'available' })
})

test('PUT /v1/store/inventory/{petId} to 0 answers 200 and leaves a pending pet pending', async (t) => {
  const h = await shop(t, 'pending')
  const res = await put(h, h.petId, { quantity: 0 })
  assert.deepEqual(res.json(), { petId: h.petId, quantity: 0, status: 'pending' })
})

test('PUT /v1/store/inventory/{petId} answers 400 validation_failed for a quantity out of bounds, not an integer, or an unknown field', async (t) => {
  const h = await shop(t)
  for (const payload of [
    { quantity: -1 },
    { quantity: 1_000_001 },
    { quantity: '5' },
    { quantity: 2.5 },
    {},
    { quantity: 1, status: 'sold' }
  ]) {
    const res = await put(h, h.petId, payload)
    assert.equal(res.statusCode, 400, JSON.stringify(payload))
    assert.equal(res.json().code, 'validation_failed')
  }
  assert.equal((await put(h, h.petId, { quantity: 1_000_000 })).statusCode, 200)
})

test('PUT /v1/store/inventory/{petId} answers 404 not_found for a missing pet', async (t) => {
  const h = await shop(t)
  for (const id of ['999', '9007199254740991']) {
    const res = await put(h, id, { quantity: 1 })
    assert.equal(res.statusCode, 404, id)
    assert.equal(res.json().code, 'not_found')
  }
})

test('PUT /v1/store/inventory/{petId} answers 403 forbidden for a customer', async (t) => {
  const h = await shop(t)
  const res = await h.call({ method: 'PUT', url: `/v1/store/inventory/${h.petId}`, role: 'customer', payload: { quantity: 5 } })
  assert.equal(res.statusCode, 403)
  assert.equal(res.json().code, 'forbidden')
})

test('PUT /v1/store/inventory/{petId} answers 412 precondition_failed when If-Match names another version, and 200 when it matches', async (t) => {
  const h = await shop(t)
  const stale = await put(h, h.petId, { quantity: 4 }, { 'if-match': '"9"' })
  assert.equal(stale.statusCode, 412)
  assert.equal(stale.json().code, 'precondition_failed')
  assert.equal((await entry(h, h.petId)).quantity, 1)
  const fresh = await put(h, h.petId, { quantity: 4 }, { 'if-match': '"1"' })
  assert.equal(fresh.statusCode, 200)
  assert.equal(fresh.headers.etag, '"2"')
})

test('GET /v1/store/inventory answers 200 with the sample catalogue consistent: pending and sold pets have stock 0, available ones stock', async (t) => {
  const h = await buildTestApp(t)
  assert.equal(await loadSampleData(h.stores), true)
  const res = await h.call({ method: 'GET', url: '/v1/store/inventory?limit=100', role: 'customer' })
  assert.equal(res.statusCode, 200)
  const entries = res.json() as { quantity: number; status: string }[]
  assert.ok(entries.some((e) => e.status === 'pending') && entries.some((e) => e.status === 'sold'))
  for (const e of entries) assert.equal(e.quantity === 0, e.status !== 'available', JSON.stringify(e))
})
