// quota.threshold and deprecation.used written once when instances flush at the same time
// (issue 31): on PostgreSQL, two stores on one schema (two instances) add usage of one rotation
// chain concurrently, through both of its keys; every threshold is written exactly once, by the
// flush that passes it. The flushes lock the identity's notice row before reading the day's counts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { UsageBatch } from '../../src/accounts/keys.store.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { serviceGate } from '../helpers/services.ts'
import { createTestSchema, testPostgresReason, TEST_DATABASE_URL } from '../helpers/stores.ts'

const postgres = serviceGate(await testPostgresReason())
const T = Date.UTC(2026, 10, 21, 12, 0, 30)
const DAY = '2026-11-21'

test('two PostgreSQL instances flushing one chain at once write each threshold and each deprecation.used once', { skip: postgres.skip }, async (t) => {
  postgres.check()
  const schema = await createTestSchema(t)
  const a = await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 4 })
  const b = await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 4, migrate: false })
  t.after(async () => { await a.close(); await b.close() })
  const admin = createKeyAdmin(a.keys, manualClock(T))
  const { record: first } = await admin.create({ role: 'customer', plan: 'free' })
  const { created: second } = await a.keys.rotateKey(first.id, { hash: 'h-rotated', prefix: 'psk_rotated', now: T, graceEndsAt: T + 3_600_000 })

  // 40 flushes of 25 allowed requests (1,000: the free day quota), half through each instance and
  // each key of the chain, and a call of getPet in each.
  const batch = (i: number): UsageBatch => {
    const keyId = i % 2 === 0 ? first.id : second.id
    return {
      counts: [{ keyId, day: DAY, allowed: 25, limited: 0, banned: 0 }],
      lastUsed: [{ keyId, at: T + i }],
      deprecated: [{ operation: 'getPet', keyId, day: DAY, calls: 1, lastCallAt: T + i }],
      deprecations: { getPet: { sunset: null, successor: 'GET /v1/pets?id={petId}' } },
      now: T + i
    }
  }
  await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 4 < 2 ? a : b).keys.recordUsage(batch(i))))

  const events = (await a.events.listEvents({
    visibility: { role: 'admin' },
    after: null,
    limit: 100,
    types: { exact: ['quota.threshold', 'deprecation.used'], prefixes: [] }
  }))
  const quota = events.filter((e) => e.type === 'quota.threshold').map((e) => e.data as { keyId: number; percent: number; used: number })
  assert.deepEqual(quota.map((d) => [d.keyId, d.percent]), [[first.id, 80], [first.id, 95], [first.id, 100]], 'each threshold once, for the chain\'s first key')
  // Each written by the flush that passed it: the count it saw is at the threshold, at most one flush past it.
  for (const d of quota) assert.ok(d.used >= d.percent * 10 && d.used < d.percent * 10 + 25, `${d.percent}%: used ${d.used}`)
  const deprecation = events.filter((e) => e.type === 'deprecation.used').map((e) => e.data as { keyId: number; calls: number })
  assert.equal(deprecation.length, 1, 'one deprecation.used for the chain, operation and day')
  assert.equal(deprecation[0]!.keyId, first.id)
})
