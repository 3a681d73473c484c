// The usage-prune job (src/jobs/usage-prune.ts) on both engines: a key's usage rows are kept for
// the longest usage view (90 days, today included) and its deprecated calls for the deprecations
// view (30 days), older days deleted; a job of the app's list. Faults caught: nothing pruned (both
// tables grow with every day), a day the views still show pruned (GET /keys/me/usage?days=90
// would lose its first day), a day off by one, the two windows swapped.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { utcDay } from '../../src/accounts/keys.rules.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { pruneUsage } from '../../src/jobs/usage-prune.ts'
import { createMetrics } from '../../src/ops/metrics.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { buildTestApp } from '../helpers/app.ts'
import { ENGINES } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'

const DAY = 86_400_000
const T = Date.UTC(2026, 10, 21, 12, 0, 0)

for (const engine of ENGINES) {
  test(`${engine.name}: usage is kept 90 days and deprecated calls 30, today included; older days are pruned`, async (t) => {
    const { stores, rows } = await engine.open(t, tempDir(t, 'petstore-usage-prune-'))
    const tables = async (): Promise<{ usage: string[]; deprecated: string[] }> => ({
      usage: (await rows<{ day: string }>('SELECT day FROM key_usage ORDER BY day')).map((r) => r.day),
      deprecated: (await rows<{ day: string }>('SELECT day FROM deprecated_calls ORDER BY day')).map((r) => r.day)
    })
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
