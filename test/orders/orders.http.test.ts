// Orders through HTTP on real storage: placing, reading, completing and cancelling, with the
// stock rules (docs/product.md section 5), ownership, If-Match and Idempotency-Key.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

interface Shop extends TestApp { categoryId: number; petId: number }

/** An app with one category and one pet (Rex) whose stock is `stock`. */
async function shop (t: TestContext, stock = 1): Promise<Shop> {
  const h = await buildTestApp(t)
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Dogs' } })
  assert.equal(category.statusCode, 201)
  const categoryId = category.json().id as number
  const petId = await addPet(h, categoryId, 'Rex')
  if (stock !== 1) await setStock(h, petId, stock)
  return { ...h, categoryId, petId }
}

async function addPet (h: TestApp, categoryId: number, name: string): Promise<number> {
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name, categoryId } })
  assert.equal(pet.statusCode, 201)
  return pet.json().id as number
}

async function setStock (h: TestApp, petId: number, quantity: number): Promise<void> {
  const res = await h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: { quantity } })
  assert.equal(res.statusCode, 200)
}

async function inventoryOf (h: TestApp, petId: number): Promise<{ petId: number; quantity: number; status: string }> {
  const res = await h.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'customer' })
  assert.equal(res.statusCode, 200)
  return res.json()
}

async function place (h: TestApp, payload: object, options: { key?: string; headers?: Record<string, string> } = {}) {
  return await h.call({
    method: 'POST',
    url: '/v1/store/orders',
    key: options.key ?? h.keys.customer,
    payload,
    ...(options.headers !== undefined && { headers: options.headers })
  })
}

async function placed (h: TestApp, payload: object, key?: string): Promise<number> {
  const res = await place(h, payload, key === undefined ? {} : { key })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().id as number
}

// --- placing (rules 2 and 3) ---

test('POST /v1/store/orders answers 201 with the order, Location and ETag, and takes the quantity off the stock', async (t) => {
  const h = await shop(t, 5)
  const res = await place(h, { petId: h.petId, quantity: 2 })
  assert.equal(res.statusCode, 201)
  assert.deepEqual(res.json(), {
    id: 1, petId: h.petId, quantity: 2, complete: false, expiresAt: new Date(T0 + 30 * 60_000).toISOString()
  })
  assert.equal(res.headers.location, '/v1/store/orders/1')
  assert.equal(res.headers.etag, '"1"')
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 3, status: 'available' })
})

test('POST /v1/store/orders answers 201 with shipDate as a UTC instant when one is given', async (t) => {
  const h = await shop(t)
  const res = await place(h, { petId: h.petId, quantity: 1, shipDate: '2026-12-01T10:00:00+01:00' })
  assert.equal(res.statusCode, 201)
  assert.deepEqual(res.json(), {
    id: 1, petId: h.petId, quantity: 1, shipDate: '2026-12-01T09:00:00.000Z', complete: false,
    expiresAt: new Date(T0 + 30 * 60_000).toISOString()
  })
})

test('POST /v1/store/orders answers 201 and makes the pet pending when the order takes the stock to 0', async (t) => {
  const h = await shop(t, 3)
  await placed(h, { petId: h.petId, quantity: 3 })
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 0, status: 'pending' })
  const pets = await h.call({ method: 'GET', url: `/v1/pets?id=${h.petId}`, role: 'customer' })
  assert.equal(pets.json()[0].status, 'pending')
})

test('POST /v1/store/orders answers 409 insufficient_stock when 2 are left and 3 are asked, and takes nothing', async (t) => {
  const h = await shop(t, 2)
  const res = await place(h, { petId: h.petId, quantity: 3 })
  assert.equal(res.statusCode, 409)
  assert.equal(res.json().code, 'insufficient_stock')
  assert.match(res.json().message, /only 2 left/)
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 2, status: 'available' })
  const list = await h.call({ method: 'GET', url: '/v1/store/orders', role: 'staff' })
  assert.deepEqual(list.json(), [])
})

test('POST /v1/store/orders answers 409 pet_not_available for a pending or sold pet, even with stock', async (t) => {
  const h = await shop(t, 4)
  for (const status of ['pending', 'sold']) {
    const patched = await h.call({ method: 'PATCH', url: `/v1/pets/${h.petId}`, role: 'staff', payload: { status } })
    assert.equal(patched.statusCode, 200)
    const res = await place(h, { petId: h.petId, quantity: 1 })
    assert.equal(res.statusCode, 409)
    assert.equal(res.json().code, 'pet_not_available')
  }
  assert.equal((await inventoryOf(h, h.petId)).quantity, 4)
})

test('POST /v1/store/orders answers 409 pet_not_available once an order has taken the last one', async (t) => {
  const h = await shop(t)
  await placed(h, { petId: h.petId, quantity: 1 })
  const res = await place(h, { petId: h.petId, quantity: 1 })
  assert.equal(res.statusCode, 409)
  assert.equal(res.json().code, 'pet_not_available')
})

test('POST /v1/store/orders answers 422 pet_not_found for a pet that does not exist, up to the largest id 2^53-1', async (t) => {
  const h = await shop(t)
  for (const petId of [999, 9007199254740991]) {
    const res = await place(h, { petId, quantity: 1 })
    assert.equal(res.statusCode, 422, `petId ${petId}`)
    assert.equal(res.json().code, 'pet_not_found')
  }
})

test('POST /v1/store/orders answers 400 validation_failed for bad bodies, naming the field', async (t) => {
  const h = await shop(t)
  const cases: [unknown, string][] = [
    [{ petId: h.petId, quantity: 0 }, '/quantity'],
    [{ petId: h.petId, quantity: 1001 }, '/quantity'],
    [{ petId: h.petId, quantity: '1' }, '/quantity'], // never coerced
    [{ petId: h.petId, quantity: 1.5 }, '/quantity'],
    [{ petId: String(h.petId), quantity: 1 }, '/petId'],
    [{ petId: h.petId, quantity: 1, shipDate: 'tomorrow' }, '/shipDate'],
    [{ petId: h.petId, quantity: 1, shipDate: '2026-12-01' }, '/shipDate'],
    [{ petId: h.petId, quantity: 1, complete: true }, '/'],
    [{ petId: h.petId, quantity: 1, id: 7 }, '/'],
    [{ quantity: 1 }, '/'],
    [{ petId: h.petId }, '/']
  ]
  for (const [payload, path] of cases) {
    const res = await place(h, payload as object)
    assert.equal(res.statusCode, 400, JSON.stringify(payload))
    assert.equal(res.json().code, 'validation_failed')
    assert.ok(res.json().details.some((d: { path: string }) => d.path === path), `${JSON.stringify(payload)}: ${res.body}`)
  }
  assert.equal((await inventoryOf(h, h.petId)).quantity, 1)
})

test('POST /v1/store/orders answers 401 unauthenticated without a key', async (t) => {
  const h = await shop(t)
  const res = await h.call({ method: 'POST', url: '/v1/store/orders', key: null, payload: { petId: h.petId, quantity: 1 } })
  assert.equal(res.statusCode, 401)
  assert.equal(res.json().code, 'unauthenticated')
})

// --- Idempotency-Key ---

test('POST /v1/store/orders with the same Idempotency-Key and body answers 201 with the first order again and creates nothing', async (t) => {
  const h = await shop(t, 5)
  const headers = { 'idempotency-key': 'order-4b1e' }
  const first = await place(h, { petId: h.petId, quantity: 2 }, { headers })
  assert.equal(first.statusCode, 201)
  const again = await place(h, { petId: h.petId, quantity: 2 }, { headers })
  assert.equal(again.statusCode, 201)
  assert.deepEqual(again.json(), first.json())
  assert.equal(again.headers.location, first.headers.location)
  assert.equal(again.headers.etag, first.headers.etag)
  assert.equal((await inventoryOf(h, h.petId)).quantity, 3)
  assert.equal((await h.call({ method: 'GET', url: '/v1/store/orders', role: 'staff' })).json().length, 1)
})

test('POST /v1/store/orders answers 409 idempotency_key_reused for the same Idempotency-Key with another body', async (t) => {
  const h = await shop(t, 5)
  const headers = { 'idempotency-key': 'order-4b1e' }
  assert.equal((await place(h, { petId: h.petId, quantity: 2 }, { headers })).statusCode, 201)
  const res = await place(h, { petId: h.petId, quantity: 3 }, { headers })
  assert.equal(res.statusCode, 409)
  assert.equal(res.json().code, 'idempotency_key_reused')
  assert.equal((await inventoryOf(h, h.petId)).quantity, 3)
})

test('POST /v1/store/orders with one Idempotency-Key sent 10 times at once creates exactly one order', async (t) => {
  const h = await shop(t, 20)
  const headers = { 'idempotency-key': 'burst-1' }
  const responses = await Promise.all(Array.from({ length: 10 }, () =>
    place(h, { petId: h.petId, quantity: 1 }, { headers })))
  for (const res of responses) {
    assert.equal(res.statusCode, 201)
    assert.deepEqual(res.json(), responses[0]!.json())
  }
  assert.equal((await h.call({ method: 'GET', url: '/v1/store/orders', role: 'staff' })).json().length, 1)
  assert.equal((await inventoryOf(h, h.petId)).quantity, 19)
})

test('POST /v1/store/orders keeps Idempotency-Keys per API key: another customer with the same key gets its own order', async (t) => {
  const h = await shop(t, 5)
  const other = await h.makeKey('customer')
  const headers = { 'idempotency-key': 'same-key' }
  const mine = await place(h, { petId: h.petId, quantity: 1 }, { headers })
  const theirs = await place(h, { petId: h.petId, quantity: 1 }, { headers, key: other.key })
  assert.equal(mine.statusCode, 201)
  assert.equal(theirs.statusCode, 201)
  assert.notEqual(theirs.json().id, mine.json().id)
})

test('POST /v1/store/orders retried with the same Idempotency-Key after a refusal is tried afresh', async (t) => {
  const h = await shop(t, 1)
  const headers = { 'idempotency-key': 'retry-later' }
  const refused = await place(h, { petId: h.petId, quantity: 2 }, { headers })
  assert.equal(refused.json().code, 'insufficient_stock')
  await setStock(h, h.petId, 2)
  const res = await place(h, { petId: h.petId, quantity: 2 }, { headers })
  assert.equal(res.statusCode, 201)
})

test('POST /v1/store/orders answers 400 validation_failed for a malformed Idempotency-Key', async (t) => {
  const h = await shop(t)
  const res = await place(h, { petId: h.petId, quantity: 1 }, { headers: { 'idempotency-key': 'x'.repeat(256) } })
  assert.equal(res.statusCode, 400)
  assert.equal(res.json().code, 'validation_failed')
})

// --- reading, ownership ---

test('GET /v1/store/orders/{orderId} answers 200 with the order and its ETag for its owner and for staff', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  for (const role of ['customer', 'staff', 'admin'] as const) {
    const res = await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), {
      id, petId: h.petId, quantity: 1, complete: false, expiresAt: new Date(T0 + 30 * 60_000).toISOString()
    })
    assert.equal(res.headers.etag, '"1"')
  }
})

test('GET /v1/store/orders/{orderId} answers 404 not_found for another customer\'s order', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  const other = await h.makeKey('customer')
  const res = await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, key: other.key })
  assert.equal(res.statusCode, 404)
  assert.equal(res.json().code, 'not_found')
})

test('GET /v1/store/orders/{orderId} answers 404 for a missing order and 400 for an id that is not an int64', async (t) => {
  const h = await shop(t)
  for (const id of ['999', '9007199254740991']) {
    const res = await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'staff' })
    assert.equal(res.statusCode, 404, id)
    assert.equal(res.json().code, 'not_found')
  }
  for (const id of ['abc', '1.5', '9223372036854775808', '9223372036854775807', '-1', '0']) {
    const res = await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'staff' })
    assert.equal(res.statusCode, 400, id)
    assert.equal(res.json().code, 'validation_failed')
  }
})

test('GET /v1/store/orders answers 200 with only the customer\'s own orders, and every order for staff', async (t) => {
  const h = await shop(t, 10)
  const other = await h.makeKey('customer')
  const a1 = await placed(h, { petId: h.petId, quantity: 1 })
  const b1 = await placed(h, { petId: h.petId, quantity: 1 }, other.key)
  const a2 = await placed(h, { petId: h.petId, quantity: 1 })
  const ids = async (key: string) => (await h.call({ method: 'GET', url: '/v1/store/orders', key })).json().map((o: { id: number }) => o.id)
  assert.deepEqual(await ids(h.keys.customer), [a1, a2])
  assert.deepEqual(await ids(other.key), [b1])
  assert.deepEqual(await ids(h.keys.staff), [a1, b1, a2])
  assert.deepEqual(await ids(h.keys.admin), [a1, b1, a2])
})

test('GET /v1/store/orders answers 200 filtered by petId and complete', async (t) => {
  const h = await shop(t, 10)
  const otherPet = await addPet(h, h.categoryId, 'Bella')
  const o1 = await placed(h, { petId: h.petId, quantity: 1 })
  const o2 = await placed(h, { petId: otherPet, quantity: 1 })
  const o3 = await placed(h, { petId: h.petId, quantity: 1 })
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/store/orders/${o3}`, role: 'staff', payload: { complete: true } })).statusCode, 200)
  const ids = async (query: string) => (await h.call({ method: 'GET', url: `/v1/store/orders?${query}`, role: 'customer' }))
    .json()
    .map((o: { id: number }) => o.id)
  assert.deepEqual(await ids(`petId=${h.petId}`), [o1, o3])
  assert.deepEqual(await ids(`petId=${otherPet}`), [o2])
  assert.deepEqual(await ids('complete=true'), [o3])
  assert.deepEqual(await ids('complete=false'), [o1, o2])
  assert.deepEqual(await ids(`petId=${h.petId}&complete=false`), [o1])
  assert.deepEqual(await ids('petId=9007199254740991'), [])
})

test('GET /v1/store/orders answers 200 in pages linked by Link rel="next"', async (t) => {
  const h = await shop(t, 10)
  for (let i = 0; i < 5; i++) await placed(h, { petId: h.petId, quantity: 1 })
  const seen: number[] = []
  let url: string | null = '/v1/store/orders?limit=2&complete=false'
  while (url !== null) {
    const res = await h.call({ method: 'GET', url, role: 'customer' })
    assert.equal(res.statusCode, 200)
    seen.push(...res.json().map((o: { id: number }) => o.id))
    const link = res.headers.link as string | undefined
    url = link === undefined ? null : /^<([^>]+)>; rel="next"$/.exec(link)![1]!
    if (url !== null) assert.match(url, /complete=false/)
  }
  assert.deepEqual(seen, [1, 2, 3, 4, 5])
})

test('GET /v1/store/orders answers 400 validation_failed for a bad filter, limit or cursor', async (t) => {
  const h = await shop(t)
  for (const query of ['complete=maybe', 'petId=abc', 'petId=1.5', 'limit=0', 'limit=101', 'cursor=nope', 'owner=1']) {
    const res = await h.call({ method: 'GET', url: `/v1/store/orders?${query}`, role: 'customer' })
    assert.equal(res.statusCode, 400, query)
    assert.equal(res.json().code, 'validation_failed')
  }
})

// --- completing (rule 4) ---

test('PATCH /v1/store/orders/{orderId} with complete answers 200, ships now and sells the pet when its last open order completes at stock 0', async (t) => {
  const h = await shop(t, 2)
  const o1 = await placed(h, { petId: h.petId, quantity: 1 })
  const o2 = await placed(h, { petId: h.petId, quantity: 1 })
  assert.equal((await inventoryOf(h, h.petId)).status, 'pending')

  const first = await h.call({ method: 'PATCH', url: `/v1/store/orders/${o1}`, role: 'staff', payload: { complete: true } })
  assert.equal(first.statusCode, 200)
  assert.deepEqual(first.json(), {
    id: o1, petId: h.petId, quantity: 1, shipDate: new Date(T0).toISOString(), complete: true, expiresAt: null
  })
  assert.equal(first.headers.etag, '"2"')
  assert.equal((await inventoryOf(h, h.petId)).status, 'pending') // o2 is still open

  const last = await h.call({ method: 'PATCH', url: `/v1/store/orders/${o2}`, role: 'staff', payload: { complete: true, shipDate: '2026-11-20T08:00:00Z' } })
  assert.equal(last.statusCode, 200)
  assert.equal(last.json().shipDate, '2026-11-20T08:00:00.000Z')
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 0, status: 'sold' })
})

test('PATCH /v1/store/orders/{orderId} with complete answers 200 and leaves a pet with stock available', async (t) => {
  const h = await shop(t, 3)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  const res = await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload: { complete: true } })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 2, status: 'available' })
})

test('PATCH /v1/store/orders/{orderId} with shipDate alone answers 200 and changes only the ship date', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1, shipDate: '2026-12-01T00:00:00Z' })
  const res = await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload: { shipDate: '2026-12-03T00:00:00Z' } })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), {
    id, petId: h.petId, quantity: 1, shipDate: '2026-12-03T00:00:00.000Z', complete: false,
    expiresAt: new Date(T0 + 30 * 60_000).toISOString()
  })
  assert.equal(res.headers.etag, '"2"')
  assert.equal((await inventoryOf(h, h.petId)).status, 'pending')
})

test('PATCH /v1/store/orders/{orderId} answers 409 order_already_complete for a complete order', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload: { complete: true } })).statusCode, 200)
  for (const payload of [{ complete: true }, { shipDate: '2027-01-01T00:00:00Z' }]) {
    const res = await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload })
    assert.equal(res.statusCode, 409)
    assert.equal(res.json().code, 'order_already_complete')
  }
})

test('PATCH /v1/store/orders/{orderId} answers 400 validation_failed for complete false, an empty body or an unknown field', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  for (const payload of [{ complete: false }, {}, { quantity: 2 }, { complete: 'true' }, { shipDate: 'soon' }]) {
    const res = await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload })
    assert.equal(res.statusCode, 400, JSON.stringify(payload))
    assert.equal(res.json().code, 'validation_failed')
  }
})

test('PATCH /v1/store/orders/{orderId} answers 403 forbidden for a customer, even its own order', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  const res = await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'customer', payload: { complete: true } })
  assert.equal(res.statusCode, 403)
  assert.equal(res.json().code, 'forbidden')
})

test('PATCH /v1/store/orders/{orderId} answers 404 not_found for a missing order', async (t) => {
  const h = await shop(t)
  const res = await h.call({ method: 'PATCH', url: '/v1/store/orders/42', role: 'staff', payload: { complete: true } })
  assert.equal(res.statusCode, 404)
  assert.equal(res.json().code, 'not_found')
})

test('PATCH /v1/store/orders/{orderId} answers 412 precondition_failed when If-Match names another version, and 200 when it matches', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  const stale = await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', headers: { 'if-match': '"7"' }, payload: { complete: true } })
  assert.equal(stale.statusCode, 412)
  assert.equal(stale.json().code, 'precondition_failed')
  assert.equal((await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'staff' })).json().complete, false)
  const fresh = await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', headers: { 'if-match': '"1"' }, payload: { complete: true } })
  assert.equal(fresh.statusCode, 200)
})

// --- cancelling (rule 5) ---

test('DELETE /v1/store/orders/{orderId} answers 204, returns the stock, makes a pending pet available, and the order is 404 afterwards', async (t) => {
  const h = await shop(t, 2)
  const id = await placed(h, { petId: h.petId, quantity: 2 })
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 0, status: 'pending' })
  const res = await h.call({ method: 'DELETE', url: `/v1/store/orders/${id}`, role: 'customer' })
  assert.equal(res.statusCode, 204)
  assert.equal(res.body, '')
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 2, status: 'available' })
  const gone = await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'customer' })
  assert.equal(gone.statusCode, 404)
  const again = await h.call({ method: 'DELETE', url: `/v1/store/orders/${id}`, role: 'customer' })
  assert.equal(again.statusCode, 404)
})

test('DELETE /v1/store/orders/{orderId} answers 404 not_found for another customer\'s order and leaves it alone', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  const other = await h.makeKey('customer')
  const res = await h.call({ method: 'DELETE', url: `/v1/store/orders/${id}`, key: other.key })
  assert.equal(res.statusCode, 404)
  assert.equal(res.json().code, 'not_found')
  assert.equal((await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'customer' })).statusCode, 200)
  assert.equal((await inventoryOf(h, h.petId)).quantity, 0)
})

test('DELETE /v1/store/orders/{orderId} answers 204 for staff cancelling a customer\'s order', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  const res = await h.call({ method: 'DELETE', url: `/v1/store/orders/${id}`, role: 'staff' })
  assert.equal(res.statusCode, 204)
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 1, status: 'available' })
})

test('DELETE /v1/store/orders/{orderId} answers 409 order_already_complete for a complete order', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload: { complete: true } })).statusCode, 200)
  const res = await h.call({ method: 'DELETE', url: `/v1/store/orders/${id}`, role: 'customer' })
  assert.equal(res.statusCode, 409)
  assert.equal(res.json().code, 'order_already_complete')
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 0, status: 'sold' })
})

test('DELETE /v1/store/orders/{orderId} answers 412 precondition_failed when If-Match names another version, and 204 when it matches', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  const stale = await h.call({ method: 'DELETE', url: `/v1/store/orders/${id}`, role: 'customer', headers: { 'if-match': '"2"' } })
  assert.equal(stale.statusCode, 412)
  assert.equal(stale.json().code, 'precondition_failed')
  const fresh = await h.call({ method: 'DELETE', url: `/v1/store/orders/${id}`, role: 'customer', headers: { 'if-match': '"1"' } })
  assert.equal(fresh.statusCode, 204)
})

test('DELETE /v1/store/orders/{orderId} keeps a sold pet sold: only a pending pet becomes available again', async (t) => {
  const h = await shop(t, 2)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/pets/${h.petId}`, role: 'staff', payload: { status: 'sold' } })).statusCode, 200)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/store/orders/${id}`, role: 'staff' })).statusCode, 204)
  assert.deepEqual(await inventoryOf(h, h.petId), { petId: h.petId, quantity: 2, status: 'sold' })
})

// --- rule 8 ---

test('DELETE /v1/pets/{petId} answers 409 pet_has_open_orders while an order is open, and 204 once it is complete; the order stays readable', async (t) => {
  const h = await shop(t)
  const id = await placed(h, { petId: h.petId, quantity: 1 })
  const refused = await h.call({ method: 'DELETE', url: `/v1/pets/${h.petId}`, role: 'staff' })
  assert.equal(refused.statusCode, 409)
  assert.equal(refused.json().code, 'pet_has_open_orders')
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload: { complete: true } })).statusCode, 200)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/pets/${h.petId}`, role: 'staff' })).statusCode, 204)
  const order = await h.call({ method: 'GET', url: `/v1/store/orders/${id}`, role: 'customer' })
  assert.equal(order.statusCode, 200)
  assert.equal(order.json().petId, h.petId)
})
