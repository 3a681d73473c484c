// The poll for lifted bans (src/access/ban-sync.ts) on its own: its timer, the ban-sync job on
// the jobs runner (one at a time, never two ticks at once, errors reported, stopped for good),
// how far back it reads lift times, and what it puts back into a limiter that lost its bans
// (Redis) or cannot take them. On a real SQLite store and real limiters; the interval is Node's
// mock timer. Written against the survivors of `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { test, type TestContext } from 'node:test'
import { BAN_SYNC_INTERVAL_MS, createBanSync, LIFT_LOOKBACK_MS, restoreBans } from '../../src/access/ban-sync.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { BAN_MAX_MS } from '../../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { createRedisRateLimiter } from '../../src/ratelimit/redis.ts'
import { manualClock, systemClock } from '../../src/shared/clock.ts'
import { banSyncJob } from '../../src/jobs/ban-sync.ts'
import { runJob } from '../jobs/run.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { connectTestRedis, testRedisReason } from '../helpers/limiter.ts'
import { deleteRedisKeys, requireService } from '../helpers/services.ts'

const T = Date.UTC(2026, 10, 21, 12, 0, 30)
const QUOTA = { perMinute: 1, perDay: 1 }

function setup (t: TestContext) {
  const clock = manualClock(T)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const limiter = createMemoryRateLimiter({ now: clock.now })
  /** A key banned in the database and in the limiter since `startedAt`, until `endsAt`. */
  const bannedKey = async (startedAt = clock.now(), endsAt = clock.now() + 15 * 60_000) => {
    const { record } = await createKeyAdmin(stores.keys, clock).create({ role: 'customer', plan: 'free' })
    const subject = `key:${record.id}`
    await stores.keys.recordBan({ keyId: record.id, subject, startedAt, endsAt, reason: 'test' })
    await limiter.restoreBan?.(subject, { startedAt, until: endsAt })
    return { id: record.id, subject }
  }
  const banned = (subject: string) => limiter.peek(subject, QUOTA).ban !== null
  return { clock, stores, limiter, bannedKey, banned }
}

/** Lets the promise chains started by a timer run to their end. */
async function settle (): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
}

test('a started poll reads the lifts every BAN_SYNC_INTERVAL_MS, one timer however often started, until stopped; stopped, it can start again', async (t) => {
  const { stores, limiter } = setup(t)
  t.mock.timers.enable({ apis: ['setInterval'] })
  let reads = 0
  const read = stores.keys.bansLiftedSince.bind(stores.keys)
  stores.keys.bansLiftedSince = async (since, endingAfter) => { reads++; return await read(since, endingAfter) }
  const sync = runJob(banSyncJob({
    keys: stores.keys,
    limiter,
    clock: { now: () => T },
    banSyncMs: BAN_SYNC_INTERVAL_MS
  }))
  assert.equal(BAN_SYNC_INTERVAL_MS, 2000)
  await sync.stop() // stopping a poll never started is harmless
  await sync.start()
  t.mock.timers.tick(1000)
  await sync.start() // a second timer would tick at 3000, 5000 …
  t.mock.timers.tick(999)
  await settle()
  assert.equal(reads, 0)
  t.mock.timers.tick(1)
  await settle()
  assert.equal(reads, 1)
  t.mock.timers.tick(1000)
  await settle()
  assert.equal(reads, 1, 'one timer')
  t.mock.timers.tick(1000)
  await settle()
  assert.equal(reads, 2)
  await sync.stop()
  t.mock.timers.tick(10 * BAN_SYNC_INTERVAL_MS)
  await settle()
  assert.equal(reads, 2, 'stopped')
  await sync.start()
  t.mock.timers.tick(BAN_SYNC_INTERVAL_MS)
  await settle()
  assert.equal(reads, 3, 'started again')
  await sync.stop()
})

test('a tick still running when the timer fires again is not doubled; a failed tick is reported and the next one runs', async (t) => {
  const { stores, limiter } = setup(t)
  t.mock.timers.enable({ apis: ['setInterval'] })
  let reads = 0
  let hold: Promise<void> | null = null
  let failure: Error | null = null
  const read = stores.keys.bansLiftedSince.bind(stores.keys)
  stores.keys.bansLiftedSince = async (since, endingAfter) => {
    reads++
    if (hold !== null) await hold
    if (failure !== null) throw failure
    return await read(since, endingAfter)
  }
  const errors: unknown[] = []
  const sync = runJob(banSyncJob({
    keys: stores.keys,
    limiter,
    clock: { now: () => T },
    banSyncMs: BAN_SYNC_INTERVAL_MS
  }), errors)
  t.after(() => sync.stop())
  let release!: () => void
  hold = new Promise((resolve) => { release = resolve })
  await sync.start()
  t.mock.timers.tick(BAN_SYNC_INTERVAL_MS)
  await settle()
  assert.equal(reads, 1)
  t.mock.timers.tick(BAN_SYNC_INTERVAL_MS)
  await settle()
  assert.equal(reads, 1, 'the first tick is still running: skipped')
  failure = new Error('database is out')
  hold = null
  release()
  await settle()
  assert.deepEqual(errors, [failure], 'the failed tick is reported')
  failure = null
  t.mock.timers.tick(BAN_SYNC_INTERVAL_MS)
  await settle()
  assert.equal(reads, 2, 'the next tick runs')
  assert.equal(errors.length, 1)
})

test('a lift stamped up to the longest ban plus an hour ago is applied; one stamped earlier is not read', async (t) => {
  const { clock, stores, limiter, bannedKey, banned } = setup(t)
  assert.equal(LIFT_LOOKBACK_MS, BAN_MAX_MS + 60 * 60_000)
  // Bans that started long ago and still run (the database takes any length), lifted by
  // processes whose clocks were far behind.
  const start = clock.now() - LIFT_LOOKBACK_MS - 60_000
  const inside = await bannedKey(start, clock.now() + 60_000)
  const outside = await bannedKey(start, clock.now() + 60_000)
  assert.equal(await stores.keys.liftBans(inside.id, clock.now() - LIFT_LOOKBACK_MS + 1000), 1)
  assert.equal(await stores.keys.liftBans(outside.id, clock.now() - LIFT_LOOKBACK_MS - 1000), 1)
  const sync = createBanSync(stores.keys, limiter, { now: clock.now })
  assert.equal(await sync.tick(), 1)
  assert.equal(banned(inside.subject), false)
  assert.equal(banned(outside.subject), true)
})

test('a lift is read once: later polls do not read the limiter again for it', async (t) => {
  const { clock, stores, limiter, bannedKey } = setup(t)
  const key = await bannedKey()
  await stores.keys.liftBans(key.id, clock.now())
  let peeks = 0
  const peek = limiter.peek.bind(limiter)
  const counted = {
    ...limiter,
    peek: (subject: string, quota: typeof QUOTA) => { peeks++; return peek(subject, quota) }
  }
  const sync = createBanSync(stores.keys, counted, { now: clock.now })
  assert.equal(await sync.tick(), 1)
  assert.equal(peeks, 1)
  clock.advance(BAN_SYNC_INTERVAL_MS)
  assert.equal(await sync.tick(), 0)
  assert.equal(peeks, 1, 'applied already')
})

test('restoreBans loads nothing into a limiter that cannot take bans, and says 0', async (t) => {
  const { clock, stores, limiter, bannedKey } = setup(t)
  await bannedKey()
  const { restoreBan: _, ...without } = limiter
  assert.equal(await restoreBans(stores.keys, without, clock.now()), 0)
  assert.equal(await restoreBans(stores.keys, limiter, clock.now()), 1)
})

test('on a Redis that lost its bans the next poll puts back those in force; after restoreBans the first poll does not load them again', async (t) => {
  if (!requireService(t, await testRedisReason())) return
  const { clock, stores, bannedKey } = setup(t)
  const redis = await connectTestRedis()
  const prefix = `test:${randomUUID()}:`
  t.after(async () => {
    await deleteRedisKeys(redis, prefix)
    redis.disconnect()
  })
  const limiter = createRedisRateLimiter({ redis, prefix, now: clock.now })
  // In the database (and the memory limiter of setup).
  const key = await bannedKey(clock.now() - 1000, clock.now() + 899_000)
  const banEnd = async () => (await limiter.peek(key.subject, QUOTA)).ban?.until ?? null
  const sync = createBanSync(stores.keys, limiter, { now: clock.now })

  assert.equal(await sync.tick(), 0)
  assert.equal(await banEnd(), clock.now() + 899_000, 'loaded by the first poll on an empty Redis')
  await deleteRedisKeys(redis, prefix) // FLUSHDB, or a restart without persistence
  assert.equal(await banEnd(), null)
  assert.equal(await sync.tick(), 0)
  assert.equal(await banEnd(), clock.now() + 899_000, 'put back')

  await deleteRedisKeys(redis, prefix)
  assert.equal(await restoreBans(stores.keys, limiter, clock.now()), 1)
  await limiter.unban(key.subject) // only in Redis: a poll that loaded again would bring it back
  assert.equal(await createBanSync(stores.keys, limiter, { now: clock.now }).tick(), 0)
  assert.equal(await banEnd(), null, 'restoreBans claimed the load')
})

test('a lift does not drop a newer ban of the subject that started before the poll read it; a lift of a ban the limiter does not hold drops nothing', async (t) => {
  const { clock, stores, limiter, bannedKey, banned } = setup(t)
  const key = await bannedKey(clock.now() - 60_000, clock.now() + 60_000)
  await stores.keys.liftBans(key.id, clock.now())
  await limiter.unban(key.subject)
  const newer = { startedAt: clock.now(), until: clock.now() + 30 * 60_000 }
  await limiter.restoreBan?.(key.subject, newer) // a newer ban, before the poll
  const gone = await bannedKey()
  await stores.keys.liftBans(gone.id, clock.now())
  await limiter.unban(gone.subject) // this instance dropped it already (its own admin API)
  const sync = createBanSync(stores.keys, limiter, { now: clock.now })
  assert.equal(await sync.tick(), 0)
  assert.equal(banned(key.subject), true, 'the newer ban stays')
  assert.equal(banned(gone.subject), false)
})

test('a started poll whose tick fails leaves no unhandled rejection', async (t) => {
  const { stores, limiter } = setup(t)
  t.mock.timers.enable({ apis: ['setInterval'] })
  const unhandled: unknown[] = []
  const listener = (reason: unknown) => { unhandled.push(reason) }
  process.on('unhandledRejection', listener)
  t.after(() => process.off('unhandledRejection', listener))
  stores.keys.bansLiftedSince = async () => { throw new Error('database is out') }
  const sync = runJob(banSyncJob({
    keys: stores.keys,
    limiter,
    clock: { now: () => T },
    banSyncMs: BAN_SYNC_INTERVAL_MS
  }))
  await sync.start()
  t.after(() => sync.stop())
  t.mock.timers.tick(BAN_SYNC_INTERVAL_MS)
  await settle()
  assert.deepEqual(unhandled, [])
})

test('a started poll keeps no process alive: its timer is not among the resources that hold the event loop', async (t) => {
  const { stores, limiter } = setup(t)
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
  const before = timers()
  const sync = runJob(banSyncJob({ keys: stores.keys, limiter, clock: systemClock, banSyncMs: BAN_SYNC_INTERVAL_MS }))
  await sync.start()
  const after = timers()
  await sync.stop()
  assert.equal(after, before)
})

// Fault caught (issue 35, 3.6): the poll trusted the store to give lifted bans that end later
// only; a store that breaks that contract (here: every ban, lifted or not, ended or not) made
// the poll end a ban nobody lifted.
test('a store that returns bans not lifted, or ended, makes the poll drop nothing: only a lifted ban in force is dropped', async (t) => {
  const { clock, stores, limiter, bannedKey, banned } = setup(t)
  const kept = await bannedKey()
  const lifted = await bannedKey()
  const ended = await bannedKey(clock.now() - 20 * 60_000, clock.now() - 5 * 60_000)
  assert.equal(await stores.keys.liftBans(lifted.id, clock.now()), 1)
  const liftedSince = stores.keys.bansLiftedSince.bind(stores.keys)
  stores.keys.bansLiftedSince = async () => [
    ...await stores.keys.activeBans(clock.now() - BAN_MAX_MS, 100),
    ...await liftedSince(0)
  ]
  // The ended ban's subject holds a newer ban the store does not know of: a lift of the ended one would drop it.
  const newer = { startedAt: clock.now() - 20 * 60_000, until: clock.now() + 60_000 }
  limiter.restoreBan(ended.subject, newer)
  const sync = createBanSync(stores.keys, limiter, { now: clock.now })
  assert.equal(await sync.tick(), 1)
  assert.deepEqual([banned(kept.subject), banned(lifted.subject), banned(ended.subject)], [true, false, true])
})
