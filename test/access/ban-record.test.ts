// Recording in the database the bans the limiter starts (src/access/ban-record.ts): a record that
// fails is reported and kept, retried no sooner than BAN_RETRY_MS later, oldest first, one retry
// at a time. On a real SQLite store whose recordBan is made to fail on demand. Written against
// the survivors of `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { BAN_RETRY_MS, createBanRecorder, type NewBan } from '../../src/access/ban-record.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'

const T = Date.UTC(2026, 10, 21, 12, 0, 30)

async function setup (t: TestContext, observers: { throwing?: boolean } = {}) {
  const clock = manualClock(T)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const record = stores.keys.recordBan.bind(stores.keys)
  const outage = new Error('database is out')
  let failing = false
  const attempts: string[] = []
  stores.keys.recordBan = async (ban) => {
    attempts.push(ban.subject)
    if (failing) throw outage
    return await record(ban)
  }
  const recorded: Array<[string, number | null, number]> = []
  const notRecorded: Array<[string, number, unknown]> = []
  const bans = createBanRecorder({
    keys: stores.keys,
    clock,
    onBan: (subject, keyId, until) => {
      recorded.push([subject, keyId, until])
      if (observers.throwing === true) throw new Error('observer failed')
    },
    onBanNotRecorded: (subject, until, error) => {
      notRecorded.push([subject, until, error])
      if (observers.throwing === true) throw new Error('observer failed')
    }
  })
  const ban = (subject: string, keyId: number | null = null): NewBan => ({
    keyId,
    subject,
    startedAt: clock.now(),
    endsAt: clock.now() + 15 * 60_000,
    reason: 'kept calling while told to wait'
  })
  /** The subjects of the bans in force in the database. */
  const inForce = async () => (await stores.keys.activeBans(clock.now(), 100)).map((b) => b.subject).sort()
  return {
    clock,
    stores,
    bans,
    ban,
    outage,
    attempts,
    recorded,
    notRecorded,
    inForce,
    fail: (v: boolean) => { failing = v }
  }
}

test('a ban recorded at once resolves to undefined, is in the database and reaches onBan with subject, key id and end', async (t) => {
  const { stores, clock, bans, ban, recorded, notRecorded } = await setup(t)
  const { record: key } = await createKeyAdmin(stores.keys, clock).create({ role: 'customer', plan: 'free' })
  const b = ban(`key:${key.id}`, key.id)
  assert.equal(await bans.record(b), undefined)
  assert.deepEqual(recorded, [[`key:${key.id}`, key.id, b.endsAt]])
  assert.deepEqual(notRecorded, [])
  const stored = await stores.keys.activeBan(key.id, clock.now())
  assert.deepEqual(stored && {
    keyId: stored.keyId,
    subject: stored.subject,
    startedAt: stored.startedAt,
    endsAt: stored.endsAt,
    reason: stored.reason
  }, b)
})

test('a ban whose record fails resolves to the failure, is reported, and is retried on the first call BAN_RETRY_MS later, not before', async (t) => {
  const { clock, bans, ban, outage, attempts, recorded, notRecorded, inForce, fail } = await setup(t)
  assert.equal(BAN_RETRY_MS, 5000)
  fail(true)
  const b = ban('ip:192.0.2.1')
  assert.equal(await bans.record(b), outage)
  assert.deepEqual(notRecorded, [['ip:192.0.2.1', b.endsAt, outage]])
  assert.deepEqual(recorded, [], 'onBan waits for the record')
  fail(false)
  clock.advance(BAN_RETRY_MS - 1)
  bans.retryIfDue()
  assert.equal(attempts.length, 1, 'not due yet')
  clock.advance(1)
  bans.retryIfDue()
  assert.equal(attempts.length, 2, 'due: the retry starts at once')
  assert.equal(await bans.retryPending(), 0, 'the retry in flight: nothing left')
  assert.deepEqual(await inForce(), ['ip:192.0.2.1'])
  assert.deepEqual(recorded, [['ip:192.0.2.1', null, b.endsAt]])
  clock.advance(BAN_RETRY_MS)
  bans.retryIfDue()
  assert.equal(attempts.length, 2, 'nothing pending: no retry')
})

test('a retry that fails too waits BAN_RETRY_MS again before the next', async (t) => {
  const { clock, bans, ban, attempts, fail } = await setup(t)
  fail(true)
  await bans.record(ban('ip:192.0.2.1'))
  clock.advance(BAN_RETRY_MS)
  bans.retryIfDue()
  assert.equal(attempts.length, 2)
  assert.equal(await bans.retryPending(), 1, 'still pending')
  clock.advance(BAN_RETRY_MS - 1)
  bans.retryIfDue()
  assert.equal(attempts.length, 2, 'the failed retry moved the next one on')
  clock.advance(1)
  bans.retryIfDue()
  assert.equal(attempts.length, 3)
})

test('retryPending records the pending bans oldest first, stops at the first failure, and runs one retry at a time', async (t) => {
  const { clock, bans, ban, attempts, recorded, inForce, fail } = await setup(t)
  fail(true)
  await bans.record(ban('ip:192.0.2.1'))
  await bans.record(ban('ip:192.0.2.2')) // same start, another subject: both kept
  clock.advance(1000)
  await bans.record(ban('ip:192.0.2.1')) // a later ban of the first subject: kept as well
  assert.equal(attempts.length, 3)
  assert.equal(await bans.retryPending(), 3, 'the first retried record fails: the rest are not tried')
  assert.deepEqual(attempts.slice(3), ['ip:192.0.2.1'])
  fail(false)
  const first = bans.retryPending()
  assert.equal(bans.retryPending(), first, 'a retry in flight is joined, not doubled')
  assert.equal(await first, 0)
  assert.deepEqual(attempts.slice(4), ['ip:192.0.2.1', 'ip:192.0.2.2', 'ip:192.0.2.1'])
  assert.deepEqual(recorded.map(([subject]) => subject), ['ip:192.0.2.1', 'ip:192.0.2.2', 'ip:192.0.2.1'])
  assert.deepEqual(await inForce(), ['ip:192.0.2.1', 'ip:192.0.2.1', 'ip:192.0.2.2'])
  const next = bans.retryPending()
  assert.notEqual(next, first, 'a finished retry is not reused')
  assert.equal(await next, 0)
  assert.equal(attempts.length, 7, 'nothing left to record')
})

test('the same ban failing twice is kept once', async (t) => {
  const { bans, ban, attempts, fail } = await setup(t)
  fail(true)
  const b = ban('ip:192.0.2.1')
  await bans.record(b)
  await bans.record(b)
  fail(false)
  assert.equal(await bans.retryPending(), 0)
  assert.equal(attempts.length, 3)
})

test('observers that throw change nothing: the failure is still answered and a retry still records every ban', async (t) => {
  const { bans, ban, outage, notRecorded, recorded, inForce, fail } = await setup(t, { throwing: true })
  fail(true)
  assert.equal(await bans.record(ban('ip:192.0.2.1')), outage)
  assert.equal(await bans.record(ban('ip:192.0.2.2')), outage)
  assert.equal(notRecorded.length, 2)
  fail(false)
  assert.equal(await bans.retryPending(), 0)
  assert.equal(recorded.length, 2)
  assert.deepEqual(await inForce(), ['ip:192.0.2.1', 'ip:192.0.2.2'])
})

test('a recorder without observers records a ban and keeps a failed one all the same', async (t) => {
  const clock = manualClock(T)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const bans = createBanRecorder({ keys: stores.keys, clock })
  const ban: NewBan = { keyId: null, subject: 'ip:192.0.2.1', startedAt: T, endsAt: T + 15 * 60_000, reason: 'r' }
  assert.equal(await bans.record(ban), undefined)
  const record = stores.keys.recordBan.bind(stores.keys)
  const outage = new Error('database is out')
  stores.keys.recordBan = async () => { throw outage }
  assert.equal(await bans.record({ ...ban, subject: 'ip:192.0.2.2' }), outage)
  stores.keys.recordBan = record
  assert.equal(await bans.retryPending(), 0)
  assert.deepEqual((await stores.keys.activeBans(T, 10)).map((b) => b.subject).sort(), ['ip:192.0.2.1', 'ip:192.0.2.2'])
})

// Fault caught (issue 35, 3.4): onBan was called bare after the first record, so an observer that
// threw rejected record() (and with it the request: a 500), while on a retry it was swallowed
// unseen. Now both ways: the ban is recorded, the error reaches onObserverError, nothing fails.
test('an observer that throws, on the first record or on a retry, is reported to onObserverError and fails nothing', async (t) => {
  const clock = manualClock(T)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const failure = new Error('observer failed')
  const reported: unknown[] = []
  const bans = createBanRecorder({
    keys: stores.keys,
    clock,
    onBan: () => { throw failure },
    onBanNotRecorded: () => { throw failure },
    onObserverError: (error) => reported.push(error)
  })
  const ban: NewBan = { keyId: null, subject: 'ip:192.0.2.1', startedAt: T, endsAt: T + 15 * 60_000, reason: 'r' }
  assert.equal(await bans.record(ban), undefined, 'recorded at once: resolves, does not reject')
  assert.deepEqual(reported, [failure])
  const record = stores.keys.recordBan.bind(stores.keys)
  const outage = new Error('database is out')
  stores.keys.recordBan = async () => { throw outage }
  assert.equal(await bans.record({ ...ban, subject: 'ip:192.0.2.2' }), outage)
  stores.keys.recordBan = record
  assert.equal(await bans.retryPending(), 0)
  assert.deepEqual(reported, [failure, failure, failure], 'onBanNotRecorded, then onBan on the retry')
  assert.deepEqual((await stores.keys.activeBans(T, 10)).map((b) => b.subject).sort(), ['ip:192.0.2.1', 'ip:192.0.2.2'])
})
