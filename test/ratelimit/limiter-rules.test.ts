// The limiter's pure rules at their edges (issue 22: the survivors of the mutation run of
// src/ratelimit/limiter.ts). Each test names the fault it catches.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  BAN_MAX_LEVEL,
  BAN_REASON,
  DAY_MS,
  MINUTE_MS,
  banLevelOf,
  checkQuota,
  nextBanLevel,
  quotaRetryAfterSeconds
} from '../../src/ratelimit/limiter.ts'

test('a restored ban longer than the longest level is read back as the top level, not one past it (and the reading ends)', () => {
  // Faults caught: the level cap dropped (the loop never ends: a day-long level stays under two
  // days) or made inclusive (level 9, one past the top).
  assert.equal(banLevelOf(0, 2 * DAY_MS), BAN_MAX_LEVEL)
  assert.equal(banLevelOf(0, DAY_MS + 1), BAN_MAX_LEVEL)
  assert.equal(banLevelOf(1_000, 1_000 + DAY_MS), BAN_MAX_LEVEL)
})

test('a subject with no ban history starts at level 1, even on a clock that reads less than a day since the epoch', () => {
  // Fault caught: "no history" (lastStartedAt 0) taken for a ban that started at the epoch, which
  // escalates a first ban on a clock near 0 (the tests' manual clocks start there).
  assert.equal(nextBanLevel(0, 3, MINUTE_MS), 1)
  assert.equal(nextBanLevel(0, 3, 0), 1)
  assert.equal(nextBanLevel(MINUTE_MS, 3, 2 * MINUTE_MS), 4)
})

test('Retry-After for a quota that is not exhausted is 1 s, not the wait until the next minute', () => {
  // Fault caught: the minute's reset taken whatever the minute's count.
  const now = 30 * MINUTE_MS + 20_000 // 40 s before the next minute
  assert.equal(quotaRetryAfterSeconds(0, 0, { perMinute: 10, perDay: 100 }, now), 1)
  assert.equal(quotaRetryAfterSeconds(10, 0, { perMinute: 10, perDay: 100 }, now), 40)
})

test('a bad quota is refused with a message that names both values', () => {
  // Fault caught: an empty RangeError that tells an operator nothing.
  assert.throws(() => checkQuota({ perMinute: -1, perDay: 5 }), { name: 'RangeError', message: 'quota must be whole numbers >= 0, got -1/min and 5/day' })
})

test('the ban reason says why, as the admin API shows it', () => {
  // Fault caught: a ban recorded with an empty reason.
  assert.match(BAN_REASON, /^kept calling while rate limited: \d+ requests before Retry-After had passed$/)
})
