// The usage-notice-prune job (src/jobs/usage-notice-prune.ts) on both engines: the notices the
// usage flush keeps per key and day (quota.threshold written once a day) are deleted for the days
// before yesterday, yesterday's and today's kept, in batches; a job of the app's list. Faults
// caught: nothing pruned (the table grows with every day), today's notice pruned (the threshold
// event would be written again on the next flush), a day off by one.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { utcDay } from '../../src/accounts/keys.rules.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { pruneUsageNotices } from '../../src/jobs/usage-notice-prune.ts'
import { createMetrics } from '../../src/ops/metrics.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { buildTestApp } from '../helpers/app.ts'
import { ENGINES } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'

const DAY = 86_400_000
const T = Date.UTC(2026, 10, 21, 12, 0, 0)

for (const engine of ENGINES) {
  test(`${engine.name}: the usage notices of days before yesterday are pruned, yesterday's and today's kept`, async (t) => {
    const { stores, rows } = await engine.open(t, tempDir(t, 'petstore-notice-prune-'))
    const days = async (): Promise<string[]> => (await rows<{ day: string }>('SELECT day FROM usage_notices ORDER BY day')).map((r) => r.day)
    const clock = manualClock(T)
    const admin = createKeyAdmin(stores.keys, clock)
    // A free key (1,000 a day): 900 requests a day cross its 80% threshold, one notice a day.
    const key = (await admin.create({ role: 'customer', plan: 'free' })).record
    const noticed = [T - 3 * DAY, T - 2 * DAY, T - DAY, T].map(utcDay)
    for (const day of noticed) {
      await stores.keys.recordUsage({
        counts: [{ keyId: key.id, day, allowed: 900, limited: 0, banned: 0 }],
        lastUsed: [],
        now: Date.parse(`${day}T12:00:00Z`)
      })
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
