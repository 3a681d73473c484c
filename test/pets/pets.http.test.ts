// Pets through HTTP on real storage: every operation's success and failure paths.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

async function withCategory (t: Parameters<typeof buildTestApp>[0]): Promise<TestApp & { categoryId: number }> {
  const h = await buildTestApp(t)
  const res = await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs', description: 'Loyal' } })
  assert.equal(res.statusCode, 201)
  return { ...h, categoryId: res.json().id }
}

test('POST /v1/pets answers 201 with Location and ETag; the pet is available by default', async (t) => {
  const { call, categoryId } = await withCategory(t)
  const created = await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId } })
  assert.equal(created.statusCode, 201)
  assert.deepEqual(created.json(), { id: 1, name: 'Rex', categoryId, status: 'available' })
  assert.equal(created.headers.location, '/v1/pets/1')
  assert.equal(created.headers.etag, '"1"')
  const got = await call({ method: 'GET', url: '/v1/pets/1' })
  assert.equal(got.statusCode, 200)
  assert.deepEqual(got.json(), created.json())
  assert.equal(got.headers.etag, '"1"')
})

test('POST /v1/pets keeps a given status', async (t) => {
  const { call, categoryId } = await withCategory(t)
  const created = await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId, status: 'pending' } })
  assert.equal(created.json().status, 'pending')
})

test('POST /v1/pets answers 422 category_not_found for a missing category, up to the largest id 2^53-1', async (t) => {
  const { call } = await withCategory(t)
  for (const categoryId of [999, 9007199254740991]) {
    const res = await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId } })
    assert.equal(res.statusCode, 422)
    assert.equal(res.json().code, 'category_not_found')
  }
})

test('POST /v1/pets answers 400 validation_failed for bad bodies, naming the field', async (t) => {
  const { call, categoryId } = await withCategory(t)
  const cases: [unknown, string][] = [
    [{ name: 'Rex', categoryId: String(categoryId) }, '/categoryId'], // never coerced
    [{ name: 1, categoryId }, '/name'],
    [{ name: '', categoryId }, '/name'],
    [{ name: '   ', categoryId }, '/name'],
    [{ name: 'x'.repeat(101), categoryId }, '/name'],
    [{ name: 'Rex', categoryId, status: 'lost' }, '/status'],
    [{ name: 'Rex', categoryId, colour: 'brown' }, '/'],
    [{ name: 'Rex' }, '/'],
    [{ name: 'Rex', categoryId: 1.5 }, '/categoryId'],
    [[], '/']
  ]
  for (const [payload, path] of cases) {
    const res = await call({ method: 'POST', url: '/v1/pets', payload: payload as object })
    assert.equal(res.statusCode, 400, JSON.stringify(payload))
    const body = res.json()
    assert.equal(body.code, 'validation_failed')
    assert.equal(body.status, 400)
    assert.ok(
      body.details.some((d: { path: string }) => d.path === path),
      `${JSON.stringify(payload)}: ${JSON.stringify(body.details)}`
    )
  }
})

test('names count characters, not UTF-16 units: 100 emoji are valid, 101 are not', async (t) => {
  const { call, categoryId } = await withCategory(t)
  const ok = await call({ method: 'POST', url: '/v1/pets', payload: { name: '🐶'.repeat(100), categoryId } })
  assert.equal(ok.statusCode, 201)
  assert.equal(ok.json().name, '🐶'.repeat(100))
  const tooLong = await call({ method: 'POST', url: '/v1/pets', payload: { name: '🐶'.repeat(101), categoryId } })
  assert.equal(tooLong.statusCode, 400)
})

test('integers beyond int64 in a body are 400, not silently rounded', async (t) => {
  const { call } = await withCategory(t)
  const res = await call({ method: 'POST', url: '/v1/pets', headers: { 'content-type': 'application/json' }, payload: '{"name":"Rex","categoryId":9223372036854775808}' })
  assert.equal(res.statusCode, 400)
  assert.equal(res.json().code, 'validation_failed')
  const max = await call({ method: 'POST', url: '/v1/pets', headers: { 'content-type': 'application/json' }, payload: '{"name":"Rex","categoryId":9223372036854775807}' })
  assert.equal(max.statusCode, 400)
  assert.equal(max.json().code, 'validation_failed')
})

test('GET /v1/pets/{petId}: any id from 1 to 2^53-1 is valid (404 when missing), anything else is 400', async (t) => {
  const { call } = await withCategory(t)
  for (const id of ['42', '9007199254740991']) {
    const res = await call({ method: 'GET', url: `/v1/pets/${id}` })
    assert.equal(res.statusCode, 404, id)
    assert.equal(res.json().code, 'not_found')
  }
  for (const id of ['0', '-1', '9007199254740992', '9007199254740993', '9223372036854775807', '-9223372036854775808', '9223372036854775808', '-9223372036854775809', 'abc', '1.5', '1e3', '0x10', '01', '%20']) {
    const res = await call({ method: 'GET', url: `/v1/pets/${id}` })
    assert.equal(res.statusCode, 400, id)
    assert.equal(res.json().code, 'validation_failed')
  }
})

test('PUT /v1/pets/{petId} replaces name and category, keeps status when omitted, and bumps the ETag', async (t) => {
  const { call, categoryId } = await withCategory(t)
  const other = (await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Cats' } })).json().id
  await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId, status: 'pending' } })
  const res = await call({ method: 'PUT', url: '/v1/pets/1', payload: { name: 'Felix', categoryId: other } })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), { id: 1, name: 'Felix', categoryId: other, status: 'pending' })
  assert.equal(res.headers.etag, '"2"')
  const missing = await call({ method: 'PUT', url: '/v1/pets/99', payload: { name: 'X', categoryId } })
  assert.equal(missing.statusCode, 404)
  const badCategory = await call({ method: 'PUT', url: '/v1/pets/1', payload: { name: 'X', categoryId: 77 } })
  assert.equal(badCategory.statusCode, 422)
  assert.equal(badCategory.json().code, 'category_not_found')
})

test('PATCH /v1/pets/{petId} changes only the fields given; an empty patch is 400', async (t) => {
  const { call, categoryId } = await withCategory(t)
  await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId } })
  const res = await call({ method: 'PATCH', url: '/v1/pets/1', payload: { status: 'sold' } })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), { id: 1, name: 'Rex', categoryId, status: 'sold' })
  const empty = await call({ method: 'PATCH', url: '/v1/pets/1', payload: {} })
  assert.equal(empty.statusCode, 400)
})

test('If-Match: a stale ETag is 412 precondition_failed and changes nothing; the current one, a list or * succeed', async (t) => {
  const { call, categoryId } = await withCategory(t)
  await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId } })
  await call({ method: 'PATCH', url: '/v1/pets/1', payload: { name: 'Rex II' } })
  const stale = await call({ method: 'PATCH', url: '/v1/pets/1', headers: { 'if-match': '"1"' }, payload: { name: 'Lost update' } })
  assert.equal(stale.statusCode, 412)
  assert.equal(stale.json().code, 'precondition_failed')
  const weak = await call({ method: 'PATCH', url: '/v1/pets/1', headers: { 'if-match': 'W/"2"' }, payload: { name: 'Weak' } })
  assert.equal(weak.statusCode, 412)
  assert.equal((await call({ method: 'GET', url: '/v1/pets/1' })).json().name, 'Rex II')
  const list = await call({ method: 'PATCH', url: '/v1/pets/1', headers: { 'if-match': '"7", "2"' }, payload: { name: 'Rex III' } })
  assert.equal(list.statusCode, 200)
  const star = await call({ method: 'PUT', url: '/v1/pets/1', headers: { 'if-match': '*' }, payload: { name: 'Rex IV', categoryId } })
  assert.equal(star.statusCode, 200)
  const staleDelete = await call({ method: 'DELETE', url: '/v1/pets/1', headers: { 'if-match': '"1"' } })
  assert.equal(staleDelete.statusCode, 412)
  const del = await call({ method: 'DELETE', url: '/v1/pets/1', headers: { 'if-match': star.headers.etag as string } })
  assert.equal(del.statusCode, 204)
})

test('DELETE /v1/pets/{petId} answers 204, then the pet is 404', async (t) => {
  const { call, categoryId } = await withCategory(t)
  await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId } })
  const res = await call({ method: 'DELETE', url: '/v1/pets/1' })
  assert.equal(res.statusCode, 204)
  assert.equal(res.body, '')
  assert.equal((await call({ method: 'GET', url: '/v1/pets/1' })).statusCode, 404)
  assert.equal((await call({ method: 'DELETE', url: '/v1/pets/1' })).statusCode, 404)
})

test('Idempotency-Key on POST /v1/pets: a retry replays the first result and creates nothing; another body is 409', async (t) => {
  const { call, categoryId } = await withCategory(t)
  const headers = { 'idempotency-key': 'create-rex-1' }
  const first = await call({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Rex', categoryId } })
  const again = await call({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Rex', categoryId } })
  assert.equal(first.statusCode, 201)
  assert.equal(again.statusCode, 201)
  assert.deepEqual(again.json(), first.json())
  assert.equal(again.headers.location, first.headers.location)
  const list = await call({ method: 'GET', url: '/v1/pets' })
  assert.equal(list.json().length, 1)
  const reused = await call({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Max', categoryId } })
  assert.equal(reused.statusCode, 409)
  assert.equal(reused.json().code, 'idempotency_key_reused')
  const bad = await call({ method: 'POST', url: '/v1/pets', headers: { 'idempotency-key': 'é' }, payload: { name: 'Max', categoryId } })
  assert.equal(bad.statusCode, 400)
})

test('Idempotency keys are per API key: another staff key with the same Idempotency-Key creates its own pet', async (t) => {
  const { call, categoryId, makeKey } = await withCategory(t)
  const other = await makeKey('staff')
  const headers = { 'idempotency-key': 'same' }
  const a = await call({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Rex', categoryId } })
  const b = await call({ method: 'POST', url: '/v1/pets', headers, key: other.key, payload: { name: 'Rex', categoryId } })
  assert.notEqual(a.json().id, b.json().id)
})

test('Idempotency keys expire after 24 hours', async (t) => {
  const { call, categoryId, clock } = await withCategory(t)
  const headers = { 'idempotency-key': 'daily' }
  const first = await call({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Rex', categoryId } })
  clock.advance(24 * 60 * 60 * 1000 + 1)
  const later = await call({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Max', categoryId } })
  assert.equal(later.statusCode, 201)
  assert.notEqual(later.json().id, first.json().id)
})

test('GET /v1/pets filters by status, categoryId and a case-insensitive name substring', async (t) => {
  const { call, categoryId } = await withCategory(t)
  const cats = (await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Cats' } })).json().id
  for (const [name, c, status] of [['Rex', categoryId, 'available'], ['REXINE', cats, 'sold'], ['Émile', cats, 'available'], ['Max', categoryId, 'pending']] as const) {
    await call({ method: 'POST', url: '/v1/pets', payload: { name, categoryId: c, status } })
  }
  const names = async (query: string) => (await call({ method: 'GET', url: `/v1/pets?${query}` }))
    .json()
    .map((p: { name: string }) => p.name)
  assert.deepEqual(await names('name=rex'), ['Rex', 'REXINE'])
  assert.deepEqual(await names('name=%C3%89MI'), ['Émile'])
  assert.deepEqual(await names('name=%25'), [])
  assert.deepEqual(await names(`categoryId=${cats}`), ['REXINE', 'Émile'])
  assert.deepEqual(await names('status=available'), ['Rex', 'Émile'])
  assert.deepEqual(await names(`status=available&categoryId=${cats}&name=mil`), ['Émile'])
  assert.deepEqual(await names('categoryId=9007199254740991'), [])
  for (const bad of ['status=lost', 'categoryId=abc', 'categoryId=9223372036854775808', 'categoryId=9223372036854775807', 'categoryId=0', 'limit=0', 'limit=101', 'limit=x', 'cursor=nope', 'colour=brown', 'name=']) {
    const res = await call({ method: 'GET', url: `/v1/pets?${bad}` })
    assert.equal(res.statusCode, 400, bad)
    assert.equal(res.json().code, 'validation_failed', bad)
  }
})

test('pagination walks 130 pets exactly once through Link rel="next", with filters kept', async (t) => {
  const { call, categoryId, stores } = await withCategory(t)
  for (let i = 1; i <= 130; i++) {
    await stores.pets.createPet({ name: `Pet ${i}`, categoryId, status: i % 2 === 0 ? 'available' : 'sold' }, null, Date.now())
  }
  const seen: number[] = []
  let url: string | null = '/v1/pets?limit=7&status=available'
  let pages = 0
  while (url !== null) {
    const res = await call({ method: 'GET', url })
    assert.equal(res.statusCode, 200)
    const page = res.json() as { id: number; status: string }[]
    assert.ok(page.length <= 7)
    assert.ok(page.every((p) => p.status === 'available'))
    seen.push(...page.map((p) => p.id))
    const link = res.headers.link as string | undefined
    url = link === undefined ? null : /^<([^>]+)>; rel="next"$/.exec(link)![1]!
    if (url !== null) assert.match(url, /status=available/)
    pages++
  }
  assert.equal(seen.length, 65)
  assert.equal(new Set(seen).size, 65)
  assert.deepEqual(seen, [...seen].sort((a, b) => a - b))
  assert.equal(pages, 10)
  const all = await call({ method: 'GET', url: '/v1/pets?limit=100' })
  assert.equal(all.json().length, 100)
  assert.ok(all.headers.link !== undefined)
  const defaults = await call({ method: 'GET', url: '/v1/pets' })
  assert.equal(defaults.json().length, 20)
})

test('a page is one index range scan: the query plan of a filtered page uses an index, never a full scan or a sort', async (t) => {
  // Listing cost must not grow with the table (docs/product.md section 5): keyset pagination on the
  // primary key, plus an index per filter. Checked on the engine's own query plan.
  const { stores } = await withCategory(t)
  if (stores.engine !== 'sqlite') return t.skip('SQLite query plan')
  const { DatabaseSync } = await import('node:sqlite')
  const db = new DatabaseSync(':memory:')
  const { migrateSqlite } = await import('../../src/storage/sqlite/database.ts')
  migrateSqlite(db)
  for (const sql of [
    'SELECT * FROM pets WHERE id > 5 ORDER BY id LIMIT 21',
    "SELECT * FROM pets WHERE id > 5 AND status = 'available' ORDER BY id LIMIT 21",
    'SELECT * FROM pets WHERE id > 5 AND category_id = 1 ORDER BY id LIMIT 21'
  ]) {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join(' | ')
    assert.doesNotMatch(plan, /TEMP B-TREE/, plan)
    assert.match(plan, /SEARCH/, plan)
  }
  db.close()
})
