// The bans in force are restored by the ban sync's start job (src/jobs/ban-sync.ts), which the
// jobs runner runs when the app becomes ready: so before the server listens, and a start that
// cannot read them fails instead of serving every banned caller. An app built without a ban sync
// (a test's) restores nothing. And the runner's rule behind it: a failed run at start fails the
// start only for a job that says so, and leaves no timer armed.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { BAN_SYNC_INTERVAL_MS } from '../../src/access/ban-sync.ts'
import { buildApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createJobRunner, type JobTimer } from '../../src/jobs/runner.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { buildTestApp, T0 } from '../helpers/app.ts'
import { openTestStores } from '../helpers/stores.ts'

/** Stores holding a customer key banned for 15 minutes from T0; its key. */
async function bannedKeyIn (t: TestContext): Promise<{ stores: Stores; key: string }> {
  const stores = await openTestStores(t)
  const { record, key } = await createKeyAdmin(stores.keys, manualClock(T0)).create({ role: 'customer', plan: 'free' })
  await stores.keys.recordBan({
    keyId: record.id, subject: `key:${record.id}`, startedAt: T0 - 60_000, endsAt: T0 + 14 * 60_000, reason: 'test'
  })
  return { stores, key }
}

test('with a ban sync, a key banned in the database is refused 429 api_key_banned at the first request', async (t) => {
  const { stores, key } = await bannedKeyIn(t)
  const { call } = await buildTestApp(t, { stores, deps: { banSyncMs: BAN_SYNC_INTERVAL_MS } })
  const response = await call({ method: 'GET', url: '/v1/pets', key })
  assert.equal(response.statusCode, 429)
  assert.equal(response.json().code, 'api_key_banned')
})

test('without a ban sync (an app built alone) no ban is restored: the same key is served', async (t) => {
  const { stores, key } = await bannedKeyIn(t)
  const { call } = await buildTestApp(t, { stores })
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
})

test('a start whose bans cannot be read fails: ready() rejects with the store\'s error', async (t) => {
  const stores = await openTestStores(t)
  const failure = new Error('the database is out')
  stores.keys.activeBans = async () => { throw failure }
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:' })
  const limiter = createMemoryRateLimiter()
  const app = await buildApp({
    config, stores, limiter, clock: manualClock(T0), usageFlushMs: 0, banSyncMs: BAN_SYNC_INTERVAL_MS
  })
  t.after(() => app.close())
  await assert.rejects(async () => { await app.ready() }, (error) => error === failure)
})

test('a failed run at start fails the start only for a job that says so, which leaves no timer armed', async () => {
  const armed = new Set<JobTimer>()
  const timers = {
    setInterval: () => { const timer = { unref: () => timer }; armed.add(timer); return timer },
    clearInterval: (timer: JobTimer) => { armed.delete(timer) }
  }
  const warnings: string[] = []
  const log = { warn: (_fields: unknown, message: string) => { warnings.push(message) } }
  const failing = { name: 'failing', everyMs: 1000, atStart: true, run: async () => { throw new Error('no') } }

  const tolerant = createJobRunner([failing], { log, timers })
  await tolerant.start()
  assert.equal(armed.size, 1, 'a failed start run is a warning; the job keeps its timer')
  await tolerant.stop()

  const strict = createJobRunner([{ ...failing, failStartOnError: true }], { log, timers })
  await assert.rejects(strict.start(), /^Error: no$/)
  assert.equal(armed.size, 0, 'the failed start disarmed every timer')
  assert.deepEqual(warnings, ['failing failed', 'failing failed'])
  await strict.stop()
})
