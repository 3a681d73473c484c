import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

test('POST /v1/pets answers 201 with Location and ETag, and GET returns the same pet', async (t) => {
  const { call } = await buildTestApp(t)
  const cat = await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  assert.equal(cat.statusCode, 201)
  const created = await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: cat.json().id } })
  assert.equal(created.statusCode, 201)
  assert.deepEqual(created.json(), { id: 1, name: 'Rex', categoryId: 1, status: 'available' })
  assert.equal(created.headers.location, '/v1/pets/1')
  const got = await call({ method: 'GET', url: '/v1/pets/1' })
  assert.equal(got.statusCode, 200)
  assert.deepEqual(got.json(), created.json())
})
