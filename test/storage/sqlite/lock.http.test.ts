// Another process locking the SQLite file (issue: the CLI, a backup tool, a second server) must not
// freeze the server: reads keep flowing, and a write answers 503 with Retry-After after a short
// bound, never a 500.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { createSqliteStores } from '../../../src/storage/sqlite/index.ts'
import { buildTestApp } from '../../helpers/app.ts'
import { TEST_ENGINE } from '../../helpers/stores.ts'
import { tempDir } from '../../helpers/temp.ts'

test('sqlite: while another connection holds the write lock, reads answer 200 and an order answers 503 service_unavailable with Retry-After within the bound, never 500', { skip: TEST_ENGINE !== 'sqlite' && 'SQLite only' }, async (t) => {
  const dir = tempDir(t, 'petstore-lock-')
  const path = join(dir, 'petstore.db')
  const stores = createSqliteStores(path, { lockBoundMs: 200 })
  t.after(() => stores.close())
  const { call } = await buildTestApp(t, { stores })

  const category = await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  const pet = await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: category.json().id } })
  assert.equal(pet.statusCode, 201)
  const petId = pet.json().id as number

  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  other.exec("UPDATE categories SET name = 'Cats'")

  const health = await call({ method: 'GET', url: '/healthz' })
  assert.equal(health.statusCode, 200)
  const read = await call({ method: 'GET', url: `/v1/pets?id=${petId}`, role: 'customer' })
  assert.equal(read.statusCode, 200)
  assert.deepEqual(read.json().map((p: { name: string }) => p.name), ['Rex'])

  const started = performance.now()
  const [order, health2] = await Promise.all([
    call({ method: 'POST', url: '/v1/store/orders', role: 'customer', payload: { petId, quantity: 1 } }),
    call({ method: 'GET', url: '/healthz' })
  ])
  const waited = performance.now() - started
  assert.equal(health2.statusCode, 200)
  assert.equal(order.statusCode, 503)
  assert.deepEqual(order.json(), {
    code: 'service_unavailable',
    message: 'the database is locked by another process; retry shortly',
    status: 503,
    requestId: order.headers['request-id']
  })
  assert.equal(order.headers['retry-after'], '1')
  assert.ok(waited < 1500, `answered after ${Math.round(waited)} ms`)

  // A single-statement write (a new key) is a 503 too, not the driver's busy error as a 500.
  const key = await call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'pro' } })
  assert.equal(key.statusCode, 503)
  assert.equal(key.json().code, 'service_unavailable')

  other.exec('ROLLBACK')
  const placed = await call({ method: 'POST', url: '/v1/store/orders', role: 'customer', payload: { petId, quantity: 1 } })
  assert.equal(placed.statusCode, 201)
})
