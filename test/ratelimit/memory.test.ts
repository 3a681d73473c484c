import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { runRateLimiterContract, START } from './contract.ts'

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

runRateLimiterContract('memory', async (now) => ({
  limiter: createMemoryRateLimiter({ now }),
  cleanup: async () => {}
}))

void test('memory: the incremental sweep drops idle subjects once their windows and ban history are stale', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 1, perDay: 1000 }
  for (let i = 0; i < 1000; i++) await limiter.consume(`ip:${i}`, quota)
  let banned
  do banned = await limiter.consume('ip:banned', quota)
  while (!banned.banStarted)
  assert.equal(limiter.size(), 1001)

  // Next UTC day, 23 h after the ban started: every window is stale, the ban history is not.
  // Each consume examines a couple of subjects, so a few hundred requests clear the old day.
  now = START + 23 * HOUR
  for (let i = 0; i < 600; i++) await limiter.consume('ip:new', quota)
  assert.equal(limiter.size(), 2)

  // Past the ban's history horizon (24 h after it ended) the banned subject goes too.
  now = START + 16 * MINUTE + 24 * HOUR
  for (let i = 0; i < 4; i++) await limiter.consume('ip:third', quota)
  assert.deepEqual(limiter.size(), 2)
  assert.equal((await limiter.consume('ip:banned', quota)).allowed, true)
})

void test('memory: peek of an unknown subject stores nothing', async (t) => {
  const limiter = createMemoryRateLimiter({ now: () => START })
  t.after(() => limiter.close())
  await limiter.peek('ip:1', { perMinute: 1, perDay: 1 })
  await limiter.unban('ip:1')
  assert.equal(limiter.size(), 0)
})

void test('memory: over the bound, one-off subjects are evicted, while a caller that keeps coming back, a ban and an open wait period are kept', async (t) => {
  const limiter = createMemoryRateLimiter({ now: () => START, maxSubjects: 10 })
  t.after(() => limiter.close())
  const tight = { perMinute: 1, perDay: 1000 }
  const big = { perMinute: 1_000_000, perDay: 1_000_000 }
  let banned
  do banned = await limiter.consume('key:banned', tight)
  while (!banned.banStarted)
  for (let i = 0; i < 3; i++) await limiter.consume('key:waiting', tight) // allowed, then 2 strikes
  let largest = 0
  for (let i = 0; i < 1000; i++) {
    await limiter.consume(`ip:${i}`, { perMinute: 60, perDay: 1000 })
    if (i % 3 === 0) await limiter.consume('key:regular', big)
    largest = Math.max(largest, limiter.size())
  }
  // Each consume adds at most one subject and evicts back to the bound.
  assert.equal(largest, 11)
  assert.equal(limiter.peek('key:regular', big).minute.remaining, 1_000_000 - 334)
  assert.equal(limiter.peek('key:banned', tight).ban?.until, banned.ban!.until)
  // The waiting subject kept its strikes: 18 more requests in its period, then the 21st bans.
  for (let i = 0; i < 18; i++) assert.equal((await limiter.consume('key:waiting', tight)).code, 'rate_limited')
  assert.equal((await limiter.consume('key:waiting', tight)).banStarted, true)
})

void test('memory: a flood of subjects that all hold a ban is capped at twice the bound', async (t) => {
  const limiter = createMemoryRateLimiter({ now: () => START, maxSubjects: 5 })
  t.after(() => limiter.close())
  let largest = 0
  for (let s = 0; s < 30; s++) {
    let d
    do {
      d = await limiter.consume(`key:${s}`, { perMinute: 0, perDay: 0 })
      largest = Math.max(largest, limiter.size())
    } while (!d.banStarted)
  }
  assert.equal(largest, 11)
  assert.equal(limiter.size(), 10)
})

void test('memory: under the bound, nothing that is not stale is dropped however many requests pass', async (t) => {
  const limiter = createMemoryRateLimiter({ now: () => START, maxSubjects: 10 })
  t.after(() => limiter.close())
  for (let i = 0; i < 10; i++) await limiter.consume(`ip:${i}`, { perMinute: 60, perDay: 1000 })
  for (let i = 0; i < 100; i++) await limiter.consume('ip:0', { perMinute: 1000, perDay: 1000 })
  assert.equal(limiter.size(), 10)
  assert.equal(limiter.peek('ip:9', { perMinute: 60, perDay: 1000 }).minute.remaining, 59)
})

void test('memory: a subject whose windows are stale but whose wait period is still open is kept by the sweep, and its strikes still ban', async (t) => {
  let now = Date.UTC(2026, 10, 21, 23, 59, 59, 500)
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 100, perDay: 1 }
  await limiter.consume('key:1', quota) // the day's one request
  // Strikes 1-20, period until 00:00:00.500.
  for (let i = 0; i < 20; i++) assert.equal((await limiter.consume('key:1', quota)).retryAfterSeconds, 1)
  now = Date.UTC(2026, 10, 22, 0, 0, 0, 200) // a new day and minute: both windows are stale
  for (let i = 0; i < 20; i++) await limiter.consume(`ip:${i}`, quota) // the sweep passes by key:1 several times
  assert.equal(limiter.size(), 21)
  assert.equal((await limiter.consume('key:1', quota)).banStarted, true)
})

void test('memory: a banned subject is dropped exactly 24 h after its ban ended, not 1 ms before', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 1, perDay: 1000 }
  let d
  do d = await limiter.consume('key:banned', quota)
  while (!d.banStarted)
  now = d.ban!.until + 24 * HOUR - 1
  for (let i = 0; i < 4; i++) await limiter.consume(`ip:${i}`, quota)
  assert.equal(limiter.size(), 5)
  now += 1
  for (let i = 0; i < 4; i++) await limiter.consume(`ip:${i}`, quota)
  assert.equal(limiter.size(), 4)
})

void test('memory: a subject with an open window today is not stale even after its minute ended', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 10, perDay: 1000 }
  await limiter.consume('key:1', quota)
  now += MINUTE
  for (let i = 0; i < 10; i++) await limiter.consume('key:2', quota)
  assert.equal(limiter.size(), 2)
  assert.equal(limiter.peek('key:1', quota).day.remaining, 999)
})

void test('memory: restoreBan puts a ban in force with the level its length implies; an ended ban or a shorter one than held changes nothing', async (t) => {
  const now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 1, perDay: 1000 }
  // A 1 h ban (level 3) that started 10 minutes ago.
  await limiter.restoreBan!('key:1', { startedAt: now - 10 * MINUTE, until: now + 50 * MINUTE })
  const d = limiter.consume('key:1', quota)
  assert.deepEqual(
    [d.code, d.ban?.startedAt, d.ban?.until, d.ban?.level, d.retryAfterSeconds],
    ['api_key_banned', now - 10 * MINUTE, now + 50 * MINUTE, 3, 3000]
  )
  assert.equal(d.day.remaining, 1000) // the banned request was charged to nothing

  // A ban that ends sooner than the one held is ignored; one that ends later replaces it.
  await limiter.restoreBan!('key:1', { startedAt: now - 5 * MINUTE, until: now + 10 * MINUTE })
  assert.equal(limiter.peek('key:1', quota).ban?.until, now + 50 * MINUTE)
  await limiter.restoreBan!('key:1', { startedAt: now - 40 * MINUTE, until: now + 50 * MINUTE }) // same end: kept as held
  assert.deepEqual([limiter.peek('key:1', quota).ban?.startedAt, limiter.peek('key:1', quota).ban?.level], [now - 10 * MINUTE, 3])
  await limiter.restoreBan!('key:1', { startedAt: now, until: now + 2 * HOUR })
  assert.deepEqual(
    limiter.peek('key:1', quota).ban,
    { until: now + 2 * HOUR, reason: d.ban!.reason, startedAt: now, level: 4 }
  )

  // A ban that ended 24 h ago or more changes no answer: it is not stored at all.
  await limiter.restoreBan!('key:2', { startedAt: now - DAY - HOUR, until: now - DAY })
  assert.equal(limiter.size(), 1)
  // One that ended (or was lifted) within 24 h is history: not in force, but the next ban escalates from it.
  await limiter.restoreBan!('key:3', { startedAt: now - 2 * HOUR, until: now - HOUR })
  await limiter.restoreBan!('key:4', { startedAt: now - 10 * MINUTE, until: now + 20 * MINUTE, liftedAt: now - MINUTE })
  assert.equal(limiter.size(), 3)
  for (const subject of ['key:3', 'key:4']) {
    assert.equal(limiter.consume(subject, quota).allowed, true)
    let banned
    do banned = limiter.consume(subject, quota)
    while (!banned.banStarted)
    assert.equal(banned.ban?.level, subject === 'key:3' ? 4 : 3, 'one level above the restored ban (1 h: 3; 30 min: 2)')
  }
})

void test('memory: restoreDay puts back a day count as a floor, for the current UTC day only', async (t) => {
  const now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 10, perDay: 5 }
  limiter.consume('key:1', quota)
  limiter.restoreDay('key:1', { at: now, count: 4 })
  assert.equal(limiter.consume('key:1', quota).day.remaining, 0, 'the count went up to 4, this request made 5')
  assert.equal(limiter.consume('key:1', quota).code, 'rate_limited')
  limiter.restoreDay('key:1', { at: now, count: 2 })
  assert.equal(limiter.peek('key:1', quota).day.remaining, 0, 'a lower count changes nothing')
  limiter.restoreDay('key:2', { at: now - DAY, count: 5 })
  assert.equal(limiter.consume('key:2', quota).allowed, true, 'yesterday\'s count is not today\'s')
  // A subject never seen is stored with the count (after a restart, the first request's seed).
  limiter.restoreDay('key:3', { at: now, count: 5 })
  assert.equal(limiter.consume('key:3', quota).code, 'rate_limited')
  limiter.restoreDay('key:4', { at: now, count: 2 })
  const d = limiter.consume('key:4', quota)
  assert.deepEqual([d.allowed, d.day.remaining, d.minute.remaining], [true, 2, 9])
})

void test('memory: restoreDay over a subject last counted yesterday starts today from the count given', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 10, perDay: 5 }
  for (let i = 0; i < 4; i++) limiter.consume('key:1', quota)
  now += DAY
  limiter.restoreDay('key:1', { at: now, count: 3 })
  assert.equal(limiter.consume('key:1', quota).day.remaining, 1, 'yesterday\'s 4 are not today\'s; today: 3 put back, then this one')
})

void test('memory: a ban history restored over a subject changes nothing when it holds a ban in force or a later one', async (t) => {
  const now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 1, perDay: 1000 }
  // In force: an ended ban restored after it does not end it.
  await limiter.restoreBan!('key:1', { startedAt: now - 10 * MINUTE, until: now + 50 * MINUTE })
  await limiter.restoreBan!('key:1', { startedAt: now - 2 * HOUR, until: now - HOUR })
  assert.equal(limiter.peek('key:1', quota).ban?.until, now + 50 * MINUTE)
  // Later history held (a 1 h ban, level 3): an older 30 min one (level 2) does not replace it, so
  // the next ban is level 4.
  await limiter.restoreBan!('key:2', { startedAt: now - 2 * HOUR, until: now - HOUR })
  await limiter.restoreBan!('key:2', { startedAt: now - 3 * HOUR, until: now - 3 * HOUR + 30 * MINUTE })
  assert.equal(limiter.consume('key:2', quota).allowed, true)
  let banned
  do banned = limiter.consume('key:2', quota)
  while (!banned.banStarted)
  assert.equal(banned.ban?.level, 4)
  // A subject held only for its counts takes the history: its next ban is level 4 too.
  assert.equal(limiter.consume('key:3', quota).allowed, true)
  await limiter.restoreBan!('key:3', { startedAt: now - 2 * HOUR, until: now - HOUR })
  do banned = limiter.consume('key:3', quota)
  while (!banned.banStarted)
  assert.equal(banned.ban?.level, 4)
})

void test('memory: a ban restored into a subject already counting keeps its counts, and the next ban after it escalates from its level', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 1, perDay: 1000 }
  limiter.consume('key:1', quota)
  await limiter.restoreBan!('key:1', { startedAt: now, until: now + 30 * MINUTE }) // level 2
  now += 30 * MINUTE
  assert.equal(limiter.consume('key:1', quota).day.remaining, 998) // the ban is over; the day kept its count
  let d
  do d = limiter.consume('key:1', quota)
  while (!d.banStarted)
  assert.deepEqual([d.ban?.level, d.ban!.until - d.ban!.startedAt], [3, HOUR])
})

void test('memory: unban of a banned subject ends the ban now and a fresh wait period counts strikes from 1 again', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 1, perDay: 1000 }
  limiter.consume('key:1', quota)
  for (let i = 0; i < 15; i++) limiter.consume('key:1', quota) // 15 strikes in the period
  await limiter.unban('key:1')
  // The period is closed: the next refusal opens a new one, 20 refusals are answered, the 21st bans.
  for (let i = 0; i < 20; i++) assert.equal(limiter.consume('key:1', quota).code, 'rate_limited')
  assert.equal(limiter.consume('key:1', quota).banStarted, true)
  now += MINUTE
  await limiter.unban('key:1')
  const after = limiter.consume('key:1', quota)
  assert.equal(after.allowed, true)
  // The lifted ban's history is kept: the next ban, 1 minute after the lifted one started, is level 2.
  let d
  do d = limiter.consume('key:1', quota)
  while (!d.banStarted)
  assert.equal(d.ban?.level, 2)
})

void test('memory: unban after a ban ended leaves its end as it was (the escalation horizon is kept)', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 1, perDay: 1000 }
  let d
  do d = limiter.consume('key:1', quota)
  while (!d.banStarted)
  now = d.ban!.until + 24 * HOUR - 1
  await limiter.unban('key:1') // the ban ended long ago: its until must not move to now
  now += 1
  for (let i = 0; i < 4; i++) limiter.consume(`ip:${i}`, quota)
  assert.equal(limiter.size(), 4)
})

void test('memory: close() forgets every subject, and the limiter still answers afterwards', async () => {
  const limiter = createMemoryRateLimiter({ now: () => START })
  const quota = { perMinute: 1, perDay: 1000 }
  limiter.consume('key:1', quota)
  limiter.consume('key:2', quota)
  await limiter.close()
  assert.equal(limiter.size(), 0)
  assert.equal(limiter.consume('key:1', quota).allowed, true)
  limiter.consume('key:3', quota)
  assert.equal(limiter.size(), 2)
})

void test('memory: a subject kept across midnight (its wait period still open) starts the new day window at 0', async (t) => {
  let now = Date.UTC(2026, 10, 21, 23, 59, 59, 500)
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 2, perDay: 3 }
  limiter.consume('key:1', quota)
  limiter.consume('key:1', quota)
  assert.equal(limiter.consume('key:1', quota).retryAfterSeconds, 1) // the minute refuses: period until 00:00:00.500
  now = Date.UTC(2026, 10, 22, 0, 0, 0, 200)
  const d = limiter.consume('key:1', quota)
  assert.deepEqual([d.allowed, d.minute.remaining, d.day.remaining], [true, 1, 2])
})

void test('memory: consume and peek refuse a quota that is not whole numbers >= 0, storing nothing', () => {
  const limiter = createMemoryRateLimiter({ now: () => START })
  assert.throws(() => limiter.consume('key:1', { perMinute: 1.5, perDay: 10 }), RangeError)
  assert.throws(() => limiter.peek('key:1', { perMinute: 1, perDay: -1 }), RangeError)
  assert.equal(limiter.size(), 0)
})

void test('memory: each request sweeps exactly two entries: ten stale subjects and one request leave nine', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 10, perDay: 1000 }
  for (let i = 0; i < 10; i++) limiter.consume(`ip:${i}`, quota)
  now += 24 * HOUR // every one of them is stale
  limiter.consume('ip:new', quota)
  assert.equal(limiter.size(), 9)
})

void test('memory: a wait period that ends exactly now no longer keeps a stale subject', async (t) => {
  let now = Date.UTC(2026, 10, 21, 23, 59, 59, 500)
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  const quota = { perMinute: 100, perDay: 1 }
  limiter.consume('key:1', quota)
  assert.equal(limiter.consume('key:1', quota).retryAfterSeconds, 1) // period until 00:00:00.500
  now = Date.UTC(2026, 10, 22, 0, 0, 0, 500)
  limiter.consume('ip:1', quota)
  assert.equal(limiter.size(), 1)
})

void test('memory: a subject created by restoreBan is swept like any other once its ban history is over', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now })
  t.after(() => limiter.close())
  await limiter.restoreBan!('key:1', { startedAt: now, until: now + 15 * MINUTE })
  now += 15 * MINUTE + 24 * HOUR
  limiter.consume('ip:1', { perMinute: 1, perDay: 1 })
  assert.equal(limiter.size(), 1)
})

void test('memory: over the bound, a caller that came back once but then stopped is evicted on a later pass; a ban that ended exactly now protects nothing', async (t) => {
  let now = START + 15 * MINUTE
  const limiter = createMemoryRateLimiter({ now: () => now, maxSubjects: 10 })
  t.after(() => limiter.close())
  const quota = { perMinute: 60, perDay: 1000 }
  await limiter.restoreBan!('key:ended', { startedAt: START, until: now + 1 })
  now += 1 // the ban ends exactly now
  limiter.consume('key:twice', quota)
  limiter.consume('key:twice', quota) // came back once: "recent"
  for (let i = 0; i < 200; i++) limiter.consume(`ip:${i}`, quota)
  assert.equal(limiter.peek('key:twice', quota).minute.remaining, 60, 'evicted: its count is gone')
  // The ended ban's history went with it: a new ban starts again at level 1 (not 2).
  let d
  do d = limiter.consume('key:ended', { perMinute: 0, perDay: 0 })
  while (!d.banStarted)
  assert.equal(d.ban?.level, 1)
})

void test('memory: over the bound, a wait period that ended exactly now protects nothing', async (t) => {
  let now = START
  const limiter = createMemoryRateLimiter({ now: () => now, maxSubjects: 10 })
  t.after(() => limiter.close())
  const quota = { perMinute: 1, perDay: 1000 }
  limiter.consume('key:waited', quota)
  assert.equal(limiter.consume('key:waited', quota).retryAfterSeconds, 30) // period until START + 30 s
  now = START + 30_000
  for (let i = 0; i < 200; i++) limiter.consume(`ip:${i}`, { perMinute: 60, perDay: 1000 })
  assert.equal(limiter.peek('key:waited', quota).day.remaining, 1000, 'evicted: its day count is gone')
})
