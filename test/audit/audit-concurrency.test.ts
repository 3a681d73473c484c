// The chain under concurrent writers on PostgreSQL: two app instances on one schema, 20 admin
// writers at once, each making keys and changing them. Every change must succeed and the log must
// verify: without the lock on audit_head, two appends read the same head and the second one's
// entry number collides (a 500) or the chain forks.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createAuditService } from '../../src/audit/audit.service.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { buildTestApp } from '../helpers/app.ts'
import { requireService } from '../helpers/services.ts'
import { createTestSchema, TEST_DATABASE_URL, testPostgresReason } from '../helpers/stores.ts'

const WRITERS = 20
const ROUNDS = 3

test('20 concurrent admin writers on two PostgreSQL instances leave a chain that verifies', async (t) => {
  if (!requireService(t, await testPostgresReason())) return
  const schema = await createTestSchema(t)
  const open = async () => {
    const stores = await createPostgresStores(TEST_DATABASE_URL, { poolMax: 8, schema })
    t.after(() => stores.close())
    return stores
  }
  const a = await buildTestApp(t, { stores: await open() })
  const b = await buildTestApp(t, { stores: await open() })
  const before = (await a.call({ method: 'GET', url: '/v1/admin/audit/head' })).json().count as number

  const statuses = await Promise.all(Array.from({ length: WRITERS }, async (_, w) => {
    const app = w % 2 === 0 ? a : b
    const seen: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const made = await app.call({ method: 'POST', url: '/v1/admin/keys', payload: { name: `w${w}-${round}`, role: 'customer', plan: 'pro' } })
      seen.push(made.statusCode)
      const id = made.json().id as number
      seen.push((await app.call({ method: 'PATCH', url: `/v1/admin/keys/${id}`, payload: { plan: 'business' } })).statusCode)
    }
    return seen
  }))
  assert.deepEqual(statuses.flat().filter((s) => s !== 201 && s !== 200), [])

  const { head, checked, fault } = await createAuditService(a.stores.audit).verify()
  assert.equal(fault, null)
  assert.equal(head.count, before + WRITERS * ROUNDS * 2, 'one entry per change')
  assert.equal(checked, head.count)
  const fromB = (await b.call({ method: 'GET', url: '/v1/admin/audit/head' })).json()
  assert.deepEqual(fromB, head)
})
