// Categories through HTTP on real storage.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

test('categories: create 201, get 200 with ETag, replace 200, list, delete 204 then 404', async (t) => {
  const { call } = await buildTestApp(t)
  const created = await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs', description: 'Loyal companions' } })
  assert.equal(created.statusCode, 201)
  assert.deepEqual(created.json(), { id: 1, name: 'Dogs', description: 'Loyal companions' })
  assert.equal(created.headers.location, '/v1/categories/1')
  const got = await call({ method: 'GET', url: '/v1/categories/1' })
  assert.equal(got.headers.etag, '"1"')
  const replaced = await call({ method: 'PUT', url: '/v1/categories/1', headers: { 'if-match': '"1"' }, payload: { name: 'Hounds' } })
  assert.equal(replaced.statusCode, 200)
  assert.deepEqual(replaced.json(), { id: 1, name: 'Hounds' }) // a missing description removes it
  assert.equal(replaced.headers.etag, '"2"')
  const stale = await call({ method: 'PUT', url: '/v1/categories/1', headers: { 'if-match': '"1"' }, payload: { name: 'Lost' } })
  assert.equal(stale.statusCode, 412)
  assert.deepEqual((await call({ method: 'GET', url: '/v1/categories' })).json(), [{ id: 1, name: 'Hounds' }])
  assert.equal((await call({ method: 'DELETE', url: '/v1/categories/1' })).statusCode, 204)
  assert.equal((await call({ method: 'GET', url: '/v1/categories/1' })).statusCode, 404)
  assert.equal((await call({ method: 'PUT', url: '/v1/categories/1', payload: { name: 'X' } })).statusCode, 404)
  assert.equal((await call({ method: 'DELETE', url: '/v1/categories/1' })).statusCode, 404)
})

test('DELETE /v1/categories/{id} answers 409 category_in_use while it has pets', async (t) => {
  const { call } = await buildTestApp(t)
  await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  const res = await call({ method: 'DELETE', url: '/v1/categories/1' })
  assert.equal(res.statusCode, 409)
  assert.equal(res.json().code, 'category_in_use')
  await call({ method: 'DELETE', url: '/v1/pets/1' })
  assert.equal((await call({ method: 'DELETE', url: '/v1/categories/1' })).statusCode, 204)
})

test('category bounds: description at most 500 characters, unknown fields refused', async (t) => {
  const { call } = await buildTestApp(t)
  assert.equal((await call({ method: 'POST', url: '/v1/categories', payload: { name: 'A', description: 'd'.repeat(500) } })).statusCode, 201)
  for (const payload of [
    { name: 'A', description: 'd'.repeat(501) },
    { name: 'A', extra: 1 },
    { description: 'no name' },
    { name: 'A', description: 7 }
  ]) {
    const res = await call({ method: 'POST', url: '/v1/categories', payload })
    assert.equal(res.statusCode, 400, JSON.stringify(payload))
    assert.equal(res.json().code, 'validation_failed')
  }
})

test('GET /v1/categories pages with limit and cursor', async (t) => {
  const { call } = await buildTestApp(t)
  for (let i = 0; i < 5; i++) await call({ method: 'POST', url: '/v1/categories', payload: { name: `C${i}` } })
  const first = await call({ method: 'GET', url: '/v1/categories?limit=3' })
  assert.deepEqual(first.json().map((c: { id: number }) => c.id), [1, 2, 3])
  const next = /<([^>]+)>/.exec(first.headers.link as string)![1]!
  const second = await call({ method: 'GET', url: next })
  assert.deepEqual(second.json().map((c: { id: number }) => c.id), [4, 5])
  assert.equal(second.headers.link, undefined)
})
