// Ids are never rounded (docs/product.md section 9): an id is 1 to 2^53-1, the largest integer a
// JavaScript number holds exactly, and anything larger is 400 validation_failed wherever it is
// sent (path, query, body), instead of addressing the record of a rounded neighbour. Runs on
// SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

const LARGEST = '9007199254740991' // 2^53 - 1
const TOO_LARGE = ['9007199254740992', '9007199254740993', '9223372036854775807'] // 2^53, 2^53 + 1, 2^63 - 1

async function shop (t: Parameters<typeof buildTestApp>[0]): Promise<TestApp> {
  const h = await buildTestApp(t)
  const category = await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  assert.equal(category.statusCode, 201)
  const pet = await h.call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: category.json().id } })
  assert.equal(pet.statusCode, 201)
  return h
}

const withoutRequestId = (body: Record<string, unknown>) => {
  const { requestId, ...rest } = body
  assert.equal(typeof requestId, 'string')
  return rest
}

const tooLarge = (where: string, name: string) => ({
  code: 'validation_failed',
  message: `invalid ${where}: ${name} must be <= ${LARGEST}`,
  status: 400,
  details: [{ path: name, message: `must be <= ${LARGEST}` }]
})

const PATHS = [
  { url: (id: string) => `/v1/pets/${id}`, name: 'petId', method: 'GET' },
  { url: (id: string) => `/v1/pets/${id}`, name: 'petId', method: 'DELETE' },
  { url: (id: string) => `/v1/categories/${id}`, name: 'categoryId', method: 'GET' },
  { url: (id: string) => `/v1/store/orders/${id}`, name: 'orderId', method: 'GET' },
  { url: (id: string) => `/v1/store/inventory/${id}`, name: 'petId', method: 'GET' },
  { url: (id: string) => `/v1/admin/keys/${id}`, name: 'keyId', method: 'GET' }
] as const

test('an id of 2^53-1 in the path is valid: 404 naming exactly that id', async (t) => {
  const h = await shop(t)
  for (const { url, method } of PATHS) {
    const res = await h.call({ method, url: url(LARGEST) })
    assert.equal(res.statusCode, 404, `${method} ${url(LARGEST)}`)
    assert.equal(res.json().code, 'not_found')
    assert.match(res.json().message, new RegExp(`^\\w+ ${LARGEST} not found$`), `${method} ${url(LARGEST)}`)
  }
})

test('an id of 2^53, 2^53+1 or 2^63-1 in the path is 400 validation_failed, never a rounded id', async (t) => {
  const h = await shop(t)
  for (const { url, name, method } of PATHS) {
    for (const id of TOO_LARGE) {
      const res = await h.call({ method, url: url(id) })
      assert.equal(res.statusCode, 400, `${method} ${url(id)}`)
      assert.deepEqual(withoutRequestId(res.json()), tooLarge('params', name), `${method} ${url(id)}`)
    }
  }
})

test('an id of 2^53-1 in the query filters by exactly that id (200, empty); larger ones are 400 validation_failed', async (t) => {
  const h = await shop(t)
  for (const query of [`categoryId=${LARGEST}`, `id=${LARGEST}`]) {
    const res = await h.call({ method: 'GET', url: `/v1/pets?${query}` })
    assert.equal(res.statusCode, 200, query)
    assert.deepEqual(res.json(), [])
  }
  const orders = await h.call({ method: 'GET', url: `/v1/store/orders?petId=${LARGEST}` })
  assert.equal(orders.statusCode, 200)
  assert.deepEqual(orders.json(), [])
  for (const id of TOO_LARGE) {
    for (const [url, name] of [[`/v1/pets?categoryId=${id}`, 'categoryId'], [`/v1/store/orders?petId=${id}`, 'petId']] as const) {
      const res = await h.call({ method: 'GET', url })
      assert.equal(res.statusCode, 400, url)
      assert.deepEqual(withoutRequestId(res.json()), tooLarge('query', name), url)
    }
    const listed = await h.call({ method: 'GET', url: `/v1/pets?id=1&id=${id}` })
    assert.equal(listed.statusCode, 400, `id=${id}`)
    assert.deepEqual(withoutRequestId(listed.json()), tooLarge('query', 'id/1'))
  }
})

test('an id of 2^53-1 in a body names no record (422); 2^53, 2^53+1 and 2^63-1 are 400 validation_failed', async (t) => {
  const h = await shop(t)
  const json = { 'content-type': 'application/json' }
  const bodies = [
    { method: 'POST', url: '/v1/pets', body: (id: string) => `{"name":"Rex","categoryId":${id}}`, field: 'categoryId', missing: 'category_not_found' },
    { method: 'PATCH', url: '/v1/pets/1', body: (id: string) => `{"categoryId":${id}}`, field: 'categoryId', missing: 'category_not_found' },
    { method: 'POST', url: '/v1/store/orders', body: (id: string) => `{"petId":${id},"quantity":1}`, field: 'petId', missing: 'pet_not_found' }
  ] as const
  for (const { method, url, body, field, missing } of bodies) {
    const largest = await h.call({ method, url, headers: json, payload: body(LARGEST) })
    assert.equal(largest.statusCode, 422, `${method} ${url}`)
    assert.equal(largest.json().code, missing)
    for (const id of TOO_LARGE) {
      const res = await h.call({ method, url, headers: json, payload: body(id) })
      assert.equal(res.statusCode, 400, `${method} ${url} ${id}`)
      assert.deepEqual(withoutRequestId(res.json()), tooLarge('body', `/${field}`), `${method} ${url} ${id}`)
    }
  }
  // Nothing was created or changed by any of them.
  const pets = await h.call({ method: 'GET', url: '/v1/pets' })
  assert.deepEqual(pets.json(), [{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }])
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/store/orders' })).json(), [])
})

test('ids below 1 are 400 validation_failed in the path, the query and a body', async (t) => {
  const h = await shop(t)
  for (const url of ['/v1/pets/0', '/v1/pets/-1', '/v1/pets?categoryId=0', '/v1/store/orders?petId=-3']) {
    const res = await h.call({ method: 'GET', url })
    assert.equal(res.statusCode, 400, url)
    assert.equal(res.json().code, 'validation_failed')
  }
  const res = await h.call({ method: 'POST', url: '/v1/store/orders', payload: { petId: 0, quantity: 1 } })
  assert.equal(res.statusCode, 400)
  assert.deepEqual(res.json().details, [{ path: '/petId', message: 'must be >= 1' }])
})
