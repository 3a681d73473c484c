// WEBHOOK_RETRY_SCHEDULE: the waits before each retry, and when the next attempt is due.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DEFAULT_RETRY_SCHEDULE, nextAttemptAt, parseRetrySchedule } from '../../src/webhooks/schedule.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

test('the default schedule is 5s, 5m, 30m, 2h, 5h, 10h, 10h in milliseconds', () => {
  assert.deepEqual(parseRetrySchedule(DEFAULT_RETRY_SCHEDULE), {
    ok: true,
    delaysMs: [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]
  })
})

test('every unit is read, spaces around items are allowed, and one item is a schedule', () => {
  assert.deepEqual(parseRetrySchedule(' 250ms, 2s ,1m,1h'), { ok: true, delaysMs: [250, 2 * SECOND, MINUTE, HOUR] })
  assert.deepEqual(parseRetrySchedule('1ms'), { ok: true, delaysMs: [1] })
  assert.deepEqual(parseRetrySchedule('24h'), { ok: true, delaysMs: [24 * HOUR] })
  assert.deepEqual(parseRetrySchedule(Array(20).fill('1s').join(',')).ok, true)
})

test('empty items, signs, fractions, exponents, unknown or capital units, zero, more than 24h and more than 20 retries are refused, naming the item', () => {
  const refused = ['', ' ', '5s,,5m', '5s,', ',5s', '-5s', '+5s', '1.5h', '1e3ms', '5', 's', '5d', '5S', '5 s', 'Infinity', 'NaNs',
    '0s', '0ms', '25h', '1441m', '86400001ms', '9999999999h', Array(21).fill('1s').join(',')]
  for (const text of refused) {
    const result = parseRetrySchedule(text)
    assert.equal(result.ok, false, JSON.stringify(text))
  }
  assert.deepEqual(parseRetrySchedule('5s,0m'), { ok: false, error: 'item 2 ("0m") is zero' })
  assert.deepEqual(parseRetrySchedule('5s,2h,30h'), { ok: false, error: 'item 3 ("30h") is longer than 24h' })
  assert.deepEqual(parseRetrySchedule('5s,5x'), { ok: false, error: 'item 2 ("5x") is not a whole number followed by ms, s, m or h' })
})

test('nextAttemptAt: the retry after attempt n waits the n-th delay; after the last retry there is none', () => {
  const delays = [5 * SECOND, 5 * MINUTE, 30 * MINUTE]
  const at = Date.UTC(2026, 10, 20, 10, 0, 0)
  assert.equal(nextAttemptAt(1, at, delays), at + 5 * SECOND)
  assert.equal(nextAttemptAt(2, at, delays), at + 5 * MINUTE)
  assert.equal(nextAttemptAt(3, at, delays), at + 30 * MINUTE)
  assert.equal(nextAttemptAt(4, at, delays), null)
  assert.equal(nextAttemptAt(1, at, []), null)
  for (const attempt of [0, -1, 1.5, Number.NaN]) assert.throws(() => nextAttemptAt(attempt, at, delays), RangeError)
})
