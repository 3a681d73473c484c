// The free reads' allowance and the leaked-key report's charge per key, on their own (issue 48
// findings 5 and 6; docs/product.md 3.7 and 4.8). Faults caught: an allowance that is not per key
// and per address, that charges one side when the other refuses, that never comes back or comes
// back mid-minute, or forgets a subject it should hold; a report charged less than its keys, or
// charged when refused, or told a wrong Retry-After.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createFreeReads, FREE_READS_PER_ADDRESS, FREE_READS_PER_KEY, type FreeReads } from '../../src/access/free-reads.ts'
import { REPORTED_KEYS_QUOTA, reportedKeysCharge, reportedKeysSubject } from '../../src/access/reported-keys.ts'
import { AppError } from '../../src/errors.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'

/** 12:00:30 UTC: mid-minute. */
const T0 = Date.UTC(2026, 10, 21, 12, 0, 30)

/** `n` reads of `key` from `address`: whether each was free. */
const takes = (reads: FreeReads, key: string, address: string, n: number): boolean[] =>
  Array.from({ length: n }, () => reads.take(key, address, T0))

test('free reads: 30 a minute per key and 120 per address by default, all or nothing, back at the next minute', () => {
  assert.deepEqual([FREE_READS_PER_KEY, FREE_READS_PER_ADDRESS], [30, 120])
  const reads = createFreeReads()
  assert.deepEqual(takes(reads, 'key:1', 'ip:192.0.2.1', 31), [...Array(30).fill(true), false])
  // The refused read took nothing from the address: 90 left there, for three more keys.
  for (const key of ['key:2', 'key:3', 'key:4']) assert.ok(takes(reads, key, 'ip:192.0.2.1', 30).every(Boolean), key)
  assert.equal(reads.take('key:5', 'ip:192.0.2.1', T0), false, 'the address is spent')
  assert.equal(reads.take('key:5', 'ip:192.0.2.2', T0), true, 'key 5 from elsewhere')
  assert.equal(reads.take('key:1', 'ip:192.0.2.2', T0), false, 'key 1 is spent from anywhere')
  // Minutes are aligned to the epoch: the last millisecond of this one still refuses, the next serves.
  const nextMinute = (Math.floor(T0 / 60_000) + 1) * 60_000
  assert.equal(reads.take('key:1', 'ip:192.0.2.1', nextMinute - 1), false)
  assert.equal(reads.take('key:1', 'ip:192.0.2.1', nextMinute), true)
  assert.equal(reads.take('key:5', 'ip:192.0.2.1', nextMinute), true)
})

test('free reads: other bounds are taken as given; the subjects held are bounded, the oldest forgotten first', () => {
  const reads = createFreeReads(2, 3)
  assert.deepEqual(takes(reads, 'key:1', 'ip:a', 3), [true, true, false])
  assert.deepEqual(takes(reads, 'key:2', 'ip:a', 2), [true, false], 'the address\'s third, then none')
  // 10,000 other subjects pushed through: key 1 and address a are forgotten, and start afresh.
  for (let i = 0; i < 5000; i++) reads.take(`key:x${i}`, `ip:x${i}`, T0)
  assert.deepEqual(takes(reads, 'key:1', 'ip:a', 3), [true, true, false])
  // A subject used recently is kept: key 1 was just used, so 9,998 more leave it spent.
  for (let i = 0; i < 4999; i++) reads.take(`key:y${i}`, `ip:y${i}`, T0)
  assert.equal(reads.take('key:1', 'ip:b', T0), false)
})

test('a report is charged one per key to its address\'s reported keys, 100 a minute and 1,000 a day; a report that does not fit is 429 and charged nothing', async () => {
  const clock = manualClock(T0)
  const limiter = createMemoryRateLimiter({ now: clock.now })
  const charge = reportedKeysCharge(limiter, clock)
  const subject = reportedKeysSubject('192.0.2.9')
  assert.equal(subject, 'reported:ip:192.0.2.9')
  assert.equal(reportedKeysSubject('2001:db8:1:2::7'), 'reported:ip6:2001:db8:1:2::/64')
  const left = async () => {
    const room = await limiter.peek(subject, REPORTED_KEYS_QUOTA)
    return [room.minute.remaining, room.day.remaining]
  }

  await charge('192.0.2.9', 60)
  assert.deepEqual(await left(), [40, 940])
  const refused = await charge('192.0.2.9', 41).then(() => null, (error: unknown) => error)
  assert.ok(refused instanceof AppError)
  assert.equal(refused.code, 'rate_limited')
  assert.equal(refused.message, 'a client address may report 100 keys a minute and 1000 a day; this report of 41 does not fit in what is left: retry in 30 s')
  assert.deepEqual(refused.headers, { 'retry-after': '30' })
  assert.deepEqual(await left(), [40, 940], 'a refused report is charged nothing')
  await charge('192.0.2.9', 40)
  assert.deepEqual(await left(), [0, 900])
  await charge('192.0.2.10', 100)
  assert.deepEqual(await left(), [0, 900], 'another address has its own')

  // Nine more minutes of full reports spend the day: then the wait runs to the end of the UTC day.
  for (let m = 1; m <= 9; m++) {
    clock.advance(60_000)
    await charge('192.0.2.9', 100)
  }
  clock.advance(60_000)
  const dayEnd = (Math.floor(clock.now() / 86_400_000) + 1) * 86_400_000
  const spent = await charge('192.0.2.9', 1).then(() => null, (error: unknown) => error as AppError)
  assert.deepEqual(spent?.headers, { 'retry-after': String(Math.ceil((dayEnd - clock.now()) / 1000)) })
})
