// The usage-prune job (src/jobs/usage-prune.ts) on both engines: a key's usage rows are kept for
// the longest usage view (90 days, today included) and its deprecated calls for the deprecations
// view (30 days), older days deleted; a job of the app's list. Faults caught: nothing pruned (both
// tables grow with every day), a day the views still show pruned (GET /keys/me/usage?days=90
// would lose its first day), a day off by one, the two windows swapped.
import assert from 'node:assert/strict'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { join } from 'node:path'
import { utcDay } from '../../src/accounts/keys.rules.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { pruneUsage } from '../../src/jobs/usage-prune.ts'
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

interface Tables { usage: string[]; deprecated: string[] }

const ENGINES: Array<{ name: string; skip: string | false; open (t: TestContext): Promise<{ stores: Stores; tables (): Promise<Tables> }> }> = [
  {
    name: 'sqlite',
    skip: false,
    async open (t) {
      const path = join(tempDir(t, 'petstore-usage-prune-'), 'p.db')
      const stores = createSqliteStores(path)
      t.after(async () => { await stores.close() })
      return {
        stores,
        async tables () {
          const db = new DatabaseSync(path, { readOnly: true })
          try {
            const days = (sql: string): string[] => (db.prepare(sql).all() as Array<{ day: string }>).map((r) => r.day)
            return { usage: days('SELECT day FROM key_usage ORDER BY day'), deprecated: days('SELECT day FROM deprecated_calls ORDER BY day') }
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
        tables: async () => await withPostgres(TEST_DATABASE_URL, async (c) => {
          const days = async (table: string): Promise<string[]> => (await c.query<{ day: string }>(`SELECT day FROM ${schema}.${table} ORDER BY day`)).rows.map((r) => r.day)
          return { usage: await days('key_usage'), deprecated: await days('deprecated_calls') }
        })
      }
    }
  }
]

for (const engine of ENGINES) {
  test(`${engine.name}: usage is kept 90 days and deprecated calls 30, today included; older days are pruned`, { skip: engine.skip }, async (t) => {
    const { stores, tables } = await engine.open(t)
    const clock = manualClock(T)
    const admin = createKeyAdmin(stores.keys, clock)
    const key = (await admin.create({ role: 'customer', plan: 'free' })).record
    const recorded = [T - 120 * DAY, T - 90 * DAY, T - 89 * DAY, T - 30 * DAY, T - 29 * DAY, T].map(utcDay)
    for (const day of recorded) {
      const at = Date.parse(`${day}T12:00:00Z`)
      await stores.keys.recordUsage({
        counts: [{ keyId: key.id, day, allowed: 5, limited: 0, banned: 0 }],
        lastUsed: [],
        deprecated: [{ operation: 'getPetById', keyId: key.id, day, calls: 5, lastCallAt: at }],
        now: at
      })
    }
    assert.deepEqual(await tables(), { usage: recorded, deprecated: recorded }, 'every day recorded, before the prune')

    assert.equal(await pruneUsage({ keys: stores.keys, clock }), 2 + 4)
    assert.deepEqual(await tables(), { usage: recorded.slice(2), deprecated: recorded.slice(4) })
    // The views' first days are still whole: 90 days of usage from T - 89, 30 of deprecated calls from T - 29.
    assert.deepEqual((await stores.keys.usage(key.id, utcDay(T - 89 * DAY))).map((r) => r.day), recorded.slice(2))
    assert.equal(await pruneUsage({ keys: stores.keys, clock }), 0, 'a second run finds nothing')
  })
}

test('the app declares the job (job_runs_total{job="usage-prune"})', async (t) => {
  // Fault caught: the job left out of jobs.ts.
  const metrics = createMetrics()
  await buildTestApp(t, { deps: { metrics } })
  assert.match((await metrics.scrape()).body, /^job_runs_total\{job="usage-prune"\} 0$/m)
})
