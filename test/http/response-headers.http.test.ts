// Headers for typed and sensitive answers (docs/product.md section 9): nosniff on every answer,
// no-store on key administration, and no CORS on /metrics.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

test('every /v1 answer carries X-Content-Type-Options: nosniff, success, error, unknown path and malformed URL alike', async (t) => {
  const { call } = await buildTestApp(t)
  for (const [url, key, status] of [
    ['/v1/pets', undefined, 200],
    ['/v1/pets/99', undefined, 404],
    ['/v1/pets', null, 401],
    ['/v1/nothing', undefined, 404],
    ['/v1/categories/%zz', undefined, 400]
  ] as const) {
    const res = await call({ method: 'GET', url, ...(key !== undefined && { key }) })
    assert.equal(res.statusCode, status, url)
    assert.equal(res.headers['x-content-type-options'], 'nosniff', url)
  }
})

test('answers under /v1/admin carry Cache-Control: no-store (errors and the created key included); others do not', async (t) => {
  const { call } = await buildTestApp(t)
  const created = await call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'pro' } })
  assert.equal(created.statusCode, 201)
  assert.equal(created.headers['cache-control'], 'no-store')
  for (const [url, key, status] of [
    ['/v1/admin/keys', undefined, 200],
    ['/v1/admin/keys/1', undefined, 200],
    ['/v1/admin/keys/999', undefined, 404],
    ['/v1/admin/keys', null, 401]
  ] as const) {
    const res = await call({ method: 'GET', url, ...(key !== undefined && { key }) })
    assert.equal(res.statusCode, status, url)
    assert.equal(res.headers['cache-control'], 'no-store', url)
  }
  const pets = await call({ method: 'GET', url: '/v1/pets' })
  assert.equal(pets.headers['cache-control'], undefined)
})

test('/metrics answers without CORS headers, and its preflight is not answered with CORS; /v1 keeps CORS', async (t) => {
  const { app } = await buildTestApp(t)
  const origin = { origin: 'https://shop.example' }
  const metrics = await app.inject({ method: 'GET', url: '/metrics', headers: origin })
  assert.equal(metrics.statusCode, 200)
  assert.equal(metrics.headers['access-control-allow-origin'], undefined)
  const preflight = await app.inject({ method: 'OPTIONS', url: '/metrics', headers: { ...origin, 'access-control-request-method': 'GET' } })
  assert.equal(preflight.headers['access-control-allow-origin'], undefined)
  assert.notEqual(preflight.statusCode, 204)
  const api = await app.inject({ method: 'OPTIONS', url: '/v1/pets', headers: { ...origin, 'access-control-request-method': 'GET' } })
  assert.equal(api.statusCode, 204)
  assert.equal(api.headers['access-control-allow-origin'], '*')
})

test('a body sent to an operation that takes none is 400 validation_failed, never an undocumented 413 or 415', async (t) => {
  const { call } = await buildTestApp(t)
  for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'application/json' }]) {
    const res = await call({ method: 'DELETE', url: '/v1/pets/1', headers, payload: 'x'.repeat(70_000) })
    assert.equal(res.statusCode, 400)
    const { requestId: _id, ...body } = res.json()
    assert.deepEqual(body, { code: 'validation_failed', message: 'DELETE /v1/pets/:petId takes no body; send none', status: 400, details: [{ path: '/', message: 'must be absent' }] })
  }
  const empty = await call({ method: 'DELETE', url: '/v1/pets/1', headers: { 'content-length': '0' } })
  assert.equal(empty.statusCode, 404)
})
