// GET /pets?id=…: the id filter that succeeds the deprecated GET /pets/{petId}.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

async function withPets (t: Parameters<typeof buildTestApp>[0]): Promise<TestApp> {
  const h = await buildTestApp(t)
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Dogs' } })
  for (const name of ['Rex', 'Bella', 'Max', 'Luna']) {
    await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name, categoryId: category.json().id } })
  }
  await h.call({ method: 'PATCH', url: '/v1/pets/3', role: 'staff', payload: { status: 'sold' } })
  return h
}

const names = async (h: TestApp, query: string) => {
  const res = await h.call({ method: 'GET', url: `/v1/pets?${query}`, role: 'customer' })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().map((p: { name: string }) => p.name)
}

test('GET /v1/pets?id= answers 200 with the one pet, as the successor of GET /v1/pets/{petId}', async (t) => {
  const h = await withPets(t)
  const res = await h.call({ method: 'GET', url: '/v1/pets?id=2', role: 'customer' })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), [{ id: 2, name: 'Bella', categoryId: 1, status: 'available' }])
})

test('GET /v1/pets?id=&id= answers 200 with those pets in id order, combined with the other filters', async (t) => {
  const h = await withPets(t)
  assert.deepEqual(await names(h, 'id=4&id=1&id=3'), ['Rex', 'Max', 'Luna'])
  assert.deepEqual(await names(h, 'id=1&id=1'), ['Rex'])
  assert.deepEqual(await names(h, 'id=1&id=3&status=sold'), ['Max'])
  assert.deepEqual(await names(h, 'id=1&id=2&id=4&limit=2'), ['Rex', 'Bella'])
})

test('GET /v1/pets?id= answers 200 with an empty page for ids that name no pet', async (t) => {
  const h = await withPets(t)
  assert.deepEqual(await names(h, 'id=99'), [])
  assert.deepEqual(await names(h, 'id=9007199254740991'), [])
  assert.deepEqual(await names(h, 'id=9007199254740991&id=2'), ['Bella'])
})

test('GET /v1/pets?id= answers 400 validation_failed for an element that is not an int64, or more than 100 ids', async (t) => {
  const h = await withPets(t)
  const many = Array.from({ length: 101 }, (_, i) => `id=${i + 1}`).join('&')
  for (const query of ['id=abc', 'id=1&id=x', 'id=1.5', 'id=9223372036854775808', 'id=9223372036854775807', 'id=0', 'id=-5', 'id=', many]) {
    const res = await h.call({ method: 'GET', url: `/v1/pets?${query}`, role: 'customer' })
    assert.equal(res.statusCode, 400, query.slice(0, 40))
    assert.equal(res.json().code, 'validation_failed')
  }
  const hundred = Array.from({ length: 100 }, (_, i) => `id=${i + 1}`).join('&')
  assert.equal((await names(h, `${hundred}&limit=100`)).length, 4)
})
