// Retention (EVENT_RETENTION_DAYS): the prune job deletes the events older than the retention, in
// bounded batches, on both engines, and nothing younger.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { DAY_MS } from '../../src/ratelimit/limiter.ts'
import { eventPruneJob, pruneEvents, PRUNE_BATCH, PRUNE_BATCHES_PER_RUN } from '../../src/jobs/event-prune.ts'
import type { EventStore } from '../../src/events/events.store.ts'
import { buildTestApp } from '../helpers/app.ts'

test('EVENT_RETENTION_DAYS: 30 by default, 1 to 3650', () => {
  assert.equal(loadConfig({}).events.retentionDays, 30)
  assert.equal(loadConfig({ EVENT_RETENTION_DAYS: '7' }).events.retentionDays, 7)
  for (const value of ['0', '3651', 'x']) assert.throws(() => loadConfig({ EVENT_RETENTION_DAYS: value }), /EVENT_RETENTION_DAYS/)
})

test('the prune job deletes events past the retention and keeps the younger ones', async (t) => {
  const h = await buildTestApp(t, { env: { EVENT_RETENTION_DAYS: '2' } })
  await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Old' } })
  h.clock.advance(DAY_MS)
  await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Young' } })
  h.clock.advance(DAY_MS + 1)
  const job = eventPruneJob({ events: h.stores.events, clock: h.clock, eventRetentionDays: 2 })
  assert.equal(job.name, 'event-prune')
  // The three keys of the test app and the first category: older than two days.
  await job.run()
  // PostgreSQL serves an event once every older transaction in the cluster has ended: wait for it.
  let left = await h.stores.events.listEvents({ visibility: { role: 'admin' }, after: null, limit: 100 })
  for (let i = 0; i < 400 && left.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    left = await h.stores.events.listEvents({ visibility: { role: 'admin' }, after: null, limit: 100 })
  }
  assert.deepEqual(left.map((e) => (e.data as { name: string }).name), ['Young'])
})

test('one run prunes in batches of PRUNE_BATCH, at most PRUNE_BATCHES_PER_RUN of them', async () => {
  const asked: number[] = []
  let stock = PRUNE_BATCH * (PRUNE_BATCHES_PER_RUN + 3)
  const events = {
    async pruneEvents (_before: number, max: number) {
      asked.push(max)
      const n = Math.min(max, stock)
      stock -= n
      return n
    }
  } as unknown as EventStore
  const clock = { now: () => 100 * DAY_MS }
  assert.equal(await pruneEvents({ events, clock, eventRetentionDays: 30 }), PRUNE_BATCH * PRUNE_BATCHES_PER_RUN)
  assert.equal(asked.length, PRUNE_BATCHES_PER_RUN)
  assert.ok(asked.every((max) => max === PRUNE_BATCH))
  asked.length = 0
  assert.equal(await pruneEvents({ events, clock, eventRetentionDays: 30 }), PRUNE_BATCH * 3, 'the rest, then a short batch ends the run')
  assert.equal(asked.length, 4)
})
