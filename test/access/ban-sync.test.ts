// A ban lifted in the database (by `petstore keys unban` or another instance's admin API) reaches
// a running instance at its next poll, without Redis: the in-process limiter drops it.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createBanSync } from '../../src/access/ban-sync.ts'
import { subjectOfKey } from '../../src/accounts/keys.rules.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { buildTestApp, T0 } from '../helpers/app.ts'
import { requireService } from '../helpers/services.ts'
import { openPostgresTestStores, testPostgresReason } from '../helpers/stores.ts'

test('a lift recorded in the database is applied by the next poll; a newer ban of the same key stays', async (t) => {
  const { call, makeKey, stores, limiter, clock } = await buildTestApp(t)
  const { id, key } = await makeKey('customer', 'enterprise', { perMinute: 1, perDay: 1000 })
  const banSync = createBanSync(stores.keys, limiter, { now: clock.now })
  const banNow = async () => {
    await call({ method: 'GET', url: '/v1/pets', key })
    const codes = []
    for (let i = 0; i < 21; i++) codes.push((await call({ method: 'GET', url: '/v1/pets', key })).json().code)
    assert.equal(codes.at(-1), 'api_key_banned')
  }
  await banNow()
  assert.equal(await banSync.tick(), 0, 'nothing lifted yet')

  // What `petstore keys unban ID` does: it only writes the database.
  clock.advance(1000)
  assert.equal(await stores.keys.liftBans(id, clock.now()), 1)
  assert.notEqual((await limiter.peek(subjectOfKey(id), { perMinute: 1, perDay: 1000 })).ban, null, 'the instance still holds the ban')
  assert.equal(await banSync.tick(), 1)
  assert.equal((await limiter.peek(subjectOfKey(id), { perMinute: 1, perDay: 1000 })).ban, null)
  assert.equal(await banSync.tick(), 0, 'a lift is applied once')

  // A later ban is not undone by the earlier lift.
  clock.advance(60_000)
  await banNow()
  assert.equal(await banSync.tick(), 0)
  assert.notEqual((await limiter.peek(subjectOfKey(id), { perMinute: 1, perDay: 1000 })).ban, null)
})

// Fault caught: the poll moved a cursor to the largest lift time it had seen, so a lift stamped
// earlier (a slower clock, or a transaction that committed late) fell below it and was never applied.
for (const engine of ['sqlite', 'postgres'] as const) test(`(${engine}) a lift stamped before one already applied (late commit, slower clock) is still applied; an ended ban is not read`, async (t) => {
  let stores: Stores
  if (engine === 'sqlite') {
    stores = createSqliteStores(':memory:')
    t.after(() => stores.close())
  } else {
    if (!requireService(t, await testPostgresReason())) return
    stores = await openPostgresTestStores(t)
  }
  const clock = manualClock(T0)
  const limiter = createMemoryRateLimiter({ now: clock.now })
  const quota = { perMinute: 1, perDay: 1 }
  const ban = async (name: string) => {
    const key = await stores.keys.createKey({
      name,
      role: 'customer',
      plan: 'free',
      perMinute: null,
      perDay: null,
      hash: `h-${name}`,
      prefix: 'psk_x',
      now: T0
    })
    const record = await stores.keys.recordBan({
      keyId: key.id,
      subject: subjectOfKey(key.id),
      startedAt: T0,
      endsAt: T0 + 15 * 60_000,
      reason: 'test'
    })
    await limiter.restoreBan?.(record.subject, { startedAt: record.startedAt, until: record.endsAt })
    return key.id
  }
  const [slow, fast] = [await ban('slow'), await ban('fast')]
  const banSync = createBanSync(stores.keys, limiter, { now: clock.now })
  clock.advance(10_000)
  // Another process, its clock 5 s ahead, lifts one ban; the poll applies it.
  assert.equal(await stores.keys.liftBans(fast, clock.now() + 5000), 1)
  assert.equal(await banSync.tick(), 1)
  assert.equal(limiter.peek(subjectOfKey(fast), quota).ban, null)
  // A lift stamped 6 s earlier (a slower clock, or its transaction committed late) comes next.
  assert.equal(await stores.keys.liftBans(slow, clock.now() - 1000), 1)
  assert.notEqual(limiter.peek(subjectOfKey(slow), quota).ban, null, 'still held before the poll')
  assert.equal(await banSync.tick(), 1, 'the late lift is applied')
  assert.equal(limiter.peek(subjectOfKey(slow), quota).ban, null)
  assert.equal(await banSync.tick(), 0, 'each lift is applied once')
  // Once the bans have ended, their lifts are no longer read.
  clock.advance(15 * 60_000)
  assert.deepEqual(await stores.keys.bansLiftedSince(clock.now() - 25 * 3600_000, clock.now()), [])
})
