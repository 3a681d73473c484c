// The deprecated GET /pets/{petId}: headers on every response, 410 after the sunset.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

const DEPRECATED_AT = Date.UTC(2026, 10, 21) / 1000

test('every response of GET /v1/pets/{petId}, errors included, carries Deprecation, Sunset, Warning and Link', async (t) => {
  const { call } = await buildTestApp(t)
  await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  const responses = [
    await call({ method: 'GET', url: '/v1/pets/1' }),
    await call({ method: 'GET', url: '/v1/pets/2' }),
    await call({ method: 'GET', url: '/v1/pets/x' }),
    await call({ method: 'GET', url: '/v1/pets/1', key: null })
  ]
  assert.deepEqual(responses.map((r) => r.statusCode), [200, 404, 400, 401])
  for (const [i, res] of responses.entries()) {
    const id = ['1', '2', 'x', '1'][i]
    assert.equal(res.headers.deprecation, `@${DEPRECATED_AT}`)
    assert.equal(res.headers.sunset, 'Fri, 21 May 2027 00:00:00 GMT')
    assert.equal(res.headers.warning, `299 - "Deprecated: this operation stops working on 2027-05-21 (2027-05-21T00:00:00.000Z); use GET /v1/pets?id=${id} instead"`)
    assert.equal(res.headers.link, `</v1/pets?id=${id}>; rel="successor-version", </docs>; rel="deprecation"; type="text/html"`)
  }
})

test('other operations carry no deprecation headers', async (t) => {
  const { call } = await buildTestApp(t)
  const res = await call({ method: 'GET', url: '/v1/pets' })
  for (const h of ['deprecation', 'sunset', 'warning']) assert.equal(res.headers[h], undefined)
})

test('after the sunset instant GET /v1/pets/{petId} answers 410 operation_sunset; other operations are unaffected', async (t) => {
  const { call, clock } = await buildTestApp(t)
  await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  clock.set(Date.UTC(2027, 4, 20, 23, 59, 59, 999))
  assert.equal((await call({ method: 'GET', url: '/v1/pets/1' })).statusCode, 200)
  clock.set(Date.UTC(2027, 4, 21))
  const gone = await call({ method: 'GET', url: '/v1/pets/1' })
  assert.equal(gone.statusCode, 410)
  assert.equal(gone.json().code, 'operation_sunset')
  assert.equal(gone.headers.sunset, 'Fri, 21 May 2027 00:00:00 GMT')
  assert.equal((await call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
  assert.equal((await call({ method: 'PATCH', url: '/v1/pets/1', payload: { name: 'Rex II' } })).statusCode, 200)
})

test('PETSTORE_GET_PET_SUNSET moves the sunset, in the headers, the 410 and the document', async (t) => {
  const { call, clock, app } = await buildTestApp(t, { env: { PETSTORE_GET_PET_SUNSET: '2026-12-01T12:00:00Z' } })
  const before = await call({ method: 'GET', url: '/v1/pets/1' })
  assert.equal(before.headers.sunset, 'Tue, 01 Dec 2026 12:00:00 GMT')
  clock.set(Date.UTC(2026, 11, 1, 12))
  assert.equal((await call({ method: 'GET', url: '/v1/pets/1' })).statusCode, 410)
  const doc = app.swagger() as unknown as { paths: Record<string, Record<string, { description: string }>> }
  assert.match(doc.paths['/pets/{petId}']!.get!.description, /2026-12-01/)
})

test('calls to the deprecated operation are counted per key', async (t) => {
  const calls: [string, number | null][] = []
  const { call, makeKey } = await buildTestApp(t, {
    deps: { events: { onDeprecatedCall: (op, keyId) => { calls.push([op, keyId]) } } }
  })
  const a = await makeKey('customer')
  await call({ method: 'GET', url: '/v1/pets/1', key: a.key })
  await call({ method: 'GET', url: '/v1/pets/1', key: a.key })
  await call({ method: 'GET', url: '/v1/pets', key: a.key })
  assert.deepEqual(calls, [['getPet', a.id], ['getPet', a.id]])
})
