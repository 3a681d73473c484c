// The usage-notice-prune job (src/jobs/usage-notice-prune.ts) on both engines: the notices the
// usage flush keeps per key and day (quota.threshold written once a day) are deleted for the days
// before yesterday, yesterday's and today's kept, in batches; a job of the app's list. Faults
// caught: nothing pruned (the table grows with every day), today's notice pruned (the threshold
// event would be written again on the next flush), a day off by one.
import assert from 'node:assert/strict'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { join } from 'node:path'
import { utcDay } from '../../src/accounts/keys.rules.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { pruneUsageNotices } from '../../src/jobs/usage-notice-prune.ts'
import { createMetrics } from '../../src/ops/metrics.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { buildTestApp } from '../helpers/app.ts'
import { serviceGate, withPostgres } from '../helpers/services.ts'
import { createTestSchema, testPostgresReason, TEST_DATABASE_URL } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'

const postgres = serviceGate(await testPostgresReason())
const DAY = 86_400_000
const T = Date.UTC(2026, 10, 21, 12, 0, 0)

const ENGINES: Array<{ name: string; skip: string | false; open (t: TestContext): Promise<{ stores: Stores; days (): Promise<string[]> }> }> = [
  {
    name: 'sqlite',
    skip: false,
    async open (t) {
      const path = join(tempDir(t, 'petstore-notice-prune-'), 'p.db')
      const stores = createSqliteStores(path)
      t.after(async () => { await stores.close() })
      return {
        stores,
        async days () {
          const db = new DatabaseSync(path, { readOnly: true })
          try {
            return (db.prepare('SELECT day FROM usage_notices ORDER BY day').all() as Array<{ day: string }>).map((r) => r.day)
          } finally { db.close() }
        }
      }
    }
  },
  {
    name: 'postgres',
    skip: postgres.skip,
    async open (t) {
      postgres.check()
      const schema = await createTestSchema(t)
      const stores = await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 2 })
      t.after(async () => { await stores.close() })
      return {
        stores,
        days: async () => await withPostgres(TEST_DATABASE_URL, async (c) =>
          (await c.query<{ day: string }>(`SELECT day FROM ${schema}.usage_notices ORDER BY day`)).rows.map((r) => r.day))
      }
    }
  }
]

for (const engine of ENGINES) {
  test(`${engine.name}: the usage notices of days before yesterday are pruned, yesterday's and today's kept`, { skip: engine.skip }, async (t) => {
    const { stores, days } = await engine.open(t)
    const clock = manualClock(T)
    const admin = createKeyAdmin(stores.keys, clock)
    // A free key (1,000 a day): 900 requests a day cross its 80% threshold, one notice a day.
    const key = (await admin.create({ role: 'customer', plan: 'free' })).record
    const noticed = [T - 3 * DAY, T - 2 * DAY, T - DAY, T].map(utcDay)
    for (const day of noticed) {
      await stores.keys.recordUsage({ counts: [{ keyId: key.id, day, allowed: 900, limited: 0, banned: 0 }], lastUsed: [], now: Date.parse(`${day}T12:00:00Z`) })
    }
    assert.deepEqual(await days(), noticed, 'one notice a day, before the prune')

    assert.equal(await pruneUsageNotices({ keys: stores.keys, clock }), 2)
    assert.deepEqual(await days(), noticed.slice(2))
    assert.equal(await pruneUsageNotices({ keys: stores.keys, clock }), 0, 'a second run finds nothing')
  })
}

test('the app declares the job (job_runs_total{job="usage-notice-prune"})', async (t) => {
  // Fault caught: the job left out of jobs.ts.
  const metrics = createMetrics()
  await buildTestApp(t, { deps: { metrics } })
  assert.match((await metrics.scrape()).body, /^job_runs_total\{job="usage-notice-prune"\} 0$/m)
})
