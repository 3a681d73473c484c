// The usage recorder (src/access/usage.ts) against a real SQLite store: how a finished request
// counts, what each kind of pending use makes a flush write, what a failed flush gives back
// (every count, the latest use), the flush timer (the usage-flush job on the jobs runner), and
// lastUsedAt with uses out of order. The store's recordUsage is wrapped only to count, hold or
// fail its calls. Written against the survivors of `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { createUsageRecorder, usageOutcome, USAGE_FLUSH_INTERVAL_MS } from '../../src/access/usage.ts'
import { usageFlushJob } from '../../src/jobs/usage-flush.ts'
import { runJob } from '../jobs/run.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'

const T = Date.UTC(2026, 10, 21, 12, 0, 30)
const DAY = '2026-11-21'

async function setup (t: TestContext) {
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const admin = createKeyAdmin(stores.keys, manualClock(T - 60_000))
  const [a, b] = [
    (await admin.create({ role: 'customer', plan: 'free' })).record.id,
    (await admin.create({ role: 'customer', plan: 'free' })).record.id
  ]
  const record = stores.keys.recordUsage.bind(stores.keys)
  let writes = 0
  let failure: Error | null = null
  let hold: Promise<void> | null = null
  stores.keys.recordUsage = async (batch) => {
    writes++
    if (hold !== null) await hold
    if (failure !== null) throw failure
    await record(batch)
  }
  const counts = async (id: number) => (await stores.keys.usage(id, DAY))
    .map((r) => [r.day, r.allowed, r.limited, r.banned])
  const lastUsed = async (id: number) => (await stores.keys.getKey(id))?.lastUsedAt ?? null
  let release: () => void = () => {}
  return {
    stores,
    a,
    b,
    counts,
    lastUsed,
    writes: () => writes,
    failWith: (e: Error | null) => { failure = e },
    hold: () => { hold = new Promise((resolve) => { release = resolve }) },
    release: () => { hold = null; release() }
  }
}

test('usageOutcome: 429 is banned or limited by the code; any other answer counts as allowed (a 4xx as other4xx, which is allowed too) if it was charged, else only as a use', () => {
  assert.equal(usageOutcome(429, { code: 'api_key_banned' }, true), 'banned')
  assert.equal(usageOutcome(429, { code: 'rate_limited' }, true), 'limited')
  assert.equal(usageOutcome(429, null, true), 'limited')
  // A banned key's free read past its allowance: refused, charged nothing, still a refusal.
  assert.equal(usageOutcome(429, { code: 'api_key_banned' }, false), 'banned')
  assert.equal(usageOutcome(200, { code: 'api_key_banned' }, true), 'allowed', 'only a 429 is banned')
  for (const status of [200, 204, 304, 399]) assert.equal(usageOutcome(status, null, true), 'allowed', String(status))
  // Refused for another reason than a window or a ban: validation, role or scope, not found, conflict, sunset.
  for (const status of [400, 403, 404, 409, 410, 499]) assert.equal(usageOutcome(status, null, true), 'other4xx', String(status))
  // The windows do not give a 5xx back: it is counted as the day window counts it.
  assert.equal(usageOutcome(500, null, true), 'allowed')
  assert.equal(usageOutcome(503, null, true), 'allowed')
  // Answered from a peek (GET /rate_limit, a banned key's free reads): the windows did not move.
  for (const status of [200, 400, 404, 500]) assert.equal(usageOutcome(status, null, false), null, String(status))
})

test('a flush writes a use alone, or deprecated calls alone; with nothing pending it writes nothing', async (t) => {
  const { stores, a, b, lastUsed, writes } = await setup(t)
  const recorder = createUsageRecorder(stores.keys)
  await recorder.flush()
  assert.equal(writes(), 0, 'idle')
  recorder.record(a, null, T) // a free call: only a use
  await recorder.flush()
  assert.equal(writes(), 1)
  assert.equal(await lastUsed(a), T)
  recorder.recordDeprecated('getPetOld', b, T + 1)
  await recorder.flush()
  assert.equal(writes(), 2)
  assert.deepEqual(
    await stores.keys.deprecatedCalls(DAY),
    [{ operation: 'getPetOld', keyId: b, day: DAY, calls: 1, lastCallAt: T + 1 }]
  )
  assert.equal(await lastUsed(b), null, 'a deprecated call is counted apart from the use')
})

test('counts made after a flush, on the same day, are written by the next flush', async (t) => {
  const { stores, a, counts } = await setup(t)
  const recorder = createUsageRecorder(stores.keys)
  recorder.record(a, 'allowed', T)
  await recorder.flush()
  recorder.record(a, 'limited', T + 1)
  recorder.record(a, 'banned', T + 2)
  await recorder.flush()
  assert.deepEqual(await counts(a), [[DAY, 1, 1, 1]])
})

test('a failed flush gives back every count (allowed, other4xx, limited, banned) and the latest use, newer uses winning', async (t) => {
  const { stores, a, b, counts, lastUsed, failWith, hold, release } = await setup(t)
  const recorder = createUsageRecorder(stores.keys)
  recorder.record(a, 'allowed', T)
  recorder.record(a, 'other4xx', T)
  recorder.record(a, 'limited', T + 1)
  recorder.record(a, 'limited', T + 2)
  recorder.record(a, 'banned', T + 3)
  recorder.record(b, 'allowed', T + 10)
  hold()
  failWith(new Error('database is out'))
  const failed = recorder.flush()
  await new Promise((resolve) => setImmediate(resolve))
  recorder.record(a, 'banned', T + 20) // during the flush: newer than the failed batch's use
  recorder.record(b, null, T + 5) // during the flush: older than the failed batch's use
  release()
  await assert.rejects(failed, /database is out/)
  assert.equal(recorder.lastUsedAt(a), T + 20)
  assert.equal(recorder.lastUsedAt(b), T + 10)
  failWith(null)
  await recorder.flush()
  // The other 4xx is allowed too: two charged, one of them refused.
  assert.deepEqual(await counts(a), [[DAY, 2, 2, 2]])
  assert.deepEqual(await counts(b), [[DAY, 1, 0, 0]])
  assert.deepEqual((await stores.keys.usage(a, DAY)).map((r) => r.other4xx), [1])
  assert.deepEqual((await stores.keys.usage(b, DAY)).map((r) => r.other4xx), [0])
  assert.equal(await lastUsed(a), T + 20)
  assert.equal(await lastUsed(b), T + 10)
})

test('lastUsedAt keeps the latest use: a use reported late (an older instant) moves it back neither pending nor in flight', async (t) => {
  const { stores, a, hold, release } = await setup(t)
  const recorder = createUsageRecorder(stores.keys)
  assert.equal(recorder.lastUsedAt(a), null)
  recorder.record(a, 'allowed', T + 50)
  recorder.record(a, 'allowed', T + 40)
  assert.equal(recorder.lastUsedAt(a), T + 50)
  hold()
  const flushing = recorder.flush()
  await new Promise((resolve) => setImmediate(resolve))
  recorder.record(a, 'allowed', T + 30) // pending, older than the use in flight
  assert.equal(recorder.lastUsedAt(a), T + 50)
  release()
  await flushing
  assert.equal(recorder.lastUsedAt(a), T + 30, 'the flushed use is the database\'s now; the pending one is reported')
})

test('a deprecated call reported late keeps the row\'s latest call', async (t) => {
  const { stores, a } = await setup(t)
  const recorder = createUsageRecorder(stores.keys)
  recorder.recordDeprecated('getPetOld', a, T + 50)
  recorder.recordDeprecated('getPetOld', a, T + 40)
  await recorder.flush()
  assert.deepEqual(
    await stores.keys.deprecatedCalls(DAY),
    [{ operation: 'getPetOld', keyId: a, day: DAY, calls: 2, lastCallAt: T + 50 }]
  )
})

test('the flush timer runs every USAGE_FLUSH_INTERVAL_MS by default, once however often started, reports failures, and stops for good', async (t) => {
  const { stores, a, counts, writes, failWith } = await setup(t)
  t.mock.timers.enable({ apis: ['setInterval'] })
  const errors: unknown[] = []
  const recorder = createUsageRecorder(stores.keys)
  const flushing = runJob(usageFlushJob({ usage: recorder }), errors)
  const settle = async () => { for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve)) }
  assert.equal(USAGE_FLUSH_INTERVAL_MS, 2000)
  await flushing.start()
  t.mock.timers.tick(1000)
  await flushing.start() // a second timer would flush at 3000
  recorder.record(a, 'allowed', T)
  t.mock.timers.tick(999)
  await settle()
  assert.equal(writes(), 0)
  t.mock.timers.tick(1)
  await settle()
  assert.equal(writes(), 1)
  assert.deepEqual(await counts(a), [[DAY, 1, 0, 0]])
  recorder.record(a, 'allowed', T + 1)
  t.mock.timers.tick(1000)
  await settle()
  assert.equal(writes(), 1, 'one timer')
  const outage = new Error('database is out')
  failWith(outage)
  t.mock.timers.tick(1000)
  await settle()
  assert.deepEqual(errors, [outage])
  failWith(null)
  await flushing.stop()
  assert.deepEqual(await counts(a), [[DAY, 2, 0, 0]], 'stop() flushed what was left')
  const after = writes()
  recorder.record(a, 'allowed', T + 2)
  t.mock.timers.tick(10 * USAGE_FLUSH_INTERVAL_MS)
  await settle()
  assert.equal(writes(), after, 'stopped')
  await flushing.start()
  t.mock.timers.tick(USAGE_FLUSH_INTERVAL_MS)
  await settle()
  assert.deepEqual(await counts(a), [[DAY, 3, 0, 0]], 'started again')
  await flushing.stop()
})

test('a recorder with its own interval flushes at that interval', async (t) => {
  const { stores, a, writes } = await setup(t)
  t.mock.timers.enable({ apis: ['setInterval'] })
  const recorder = createUsageRecorder(stores.keys)
  const flushing = runJob(usageFlushJob({ usage: recorder, usageFlushMs: 500 }))
  t.after(() => flushing.stop())
  await flushing.start()
  recorder.record(a, 'allowed', T)
  t.mock.timers.tick(500)
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve))
  assert.equal(writes(), 1)
})

test('a flush timer whose flush fails leaves no unhandled rejection', async (t) => {
  const { stores, a, failWith } = await setup(t)
  t.mock.timers.enable({ apis: ['setInterval'] })
  const unhandled: unknown[] = []
  const listener = (reason: unknown) => { unhandled.push(reason) }
  process.on('unhandledRejection', listener)
  t.after(() => process.off('unhandledRejection', listener))
  const recorder = createUsageRecorder(stores.keys)
  const flushing = runJob(usageFlushJob({ usage: recorder }))
  await flushing.start()
  recorder.record(a, 'allowed', T)
  failWith(new Error('database is out'))
  t.mock.timers.tick(USAGE_FLUSH_INTERVAL_MS)
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(unhandled, [])
  failWith(null)
  await flushing.stop()
})

test('a started flush timer keeps no process alive: it is not among the resources that hold the event loop', async (t) => {
  const { stores } = await setup(t)
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
  const before = timers()
  const flushing = runJob(usageFlushJob({ usage: createUsageRecorder(stores.keys) }))
  await flushing.start()
  const after = timers()
  await flushing.stop()
  assert.equal(after, before)
})
