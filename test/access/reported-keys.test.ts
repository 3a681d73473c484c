// The leaked-key report's charge when reports of one address race, and when the address is banned
// (src/access/reported-keys.ts; issue 48 finding 6), on the real in-process limiter. A report first
// peeks at what is left, then takes one unit per key: two reports at once can both see room, and the
// one that runs out part-way must be refused, not served past the allowance. Its refused units are
// strikes like any refusal, so enough of them ban the address's reporting, and a banned address is
// refused whatever its windows hold, told to wait for the ban's end. Faults caught: a racing report
// served although the limiter refused some of its keys; a ban not refused, or told the minute's
// Retry-After; a report refused for its minute told to wait for the day's end when the day still
// holds it.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { REPORTED_KEYS_QUOTA, reportedKeysCharge, reportedKeysSubject } from '../../src/access/reported-keys.ts'
import { AppError } from '../../src/errors.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'

/** 12:00:30 UTC: mid-minute, 30 s from the minute's end. */
const T0 = Date.UTC(2026, 10, 21, 12, 0, 30)
const MINUTE = 60_000

function setup () {
  const clock = manualClock(T0)
  const limiter = createMemoryRateLimiter({ now: clock.now })
  // The units taken from the limiter: with Redis each is a round trip, so a refused report must
  // take none (issue 48 finding 6: the work of one request bounded by what it may do).
  const taken = { count: 0 }
  const charge = reportedKeysCharge({
    peek: (subject, quota) => limiter.peek(subject, quota),
    consume: (subject, quota) => { taken.count++; return limiter.consume(subject, quota) }
  }, clock)
  /** The report's outcome: null when charged, else its AppError. */
  const report = (address: string, count: number): Promise<AppError | null> =>
    charge(address, count).then(() => null, (error: unknown) => {
      assert.ok(error instanceof AppError, String(error))
      return error
    })
  /** Keys the address may still report: [this minute, today]. */
  const left = async (address: string): Promise<[number, number]> => {
    const room = await limiter.peek(reportedKeysSubject(address), REPORTED_KEYS_QUOTA)
    return [room.minute.remaining, room.day.remaining]
  }
  return { clock, report, left, taken }
}

const retryAfter = (error: AppError | null): string | undefined => error?.headers?.['retry-after']

test('two reports of 60 keys at once from one address: one is charged, the other is refused 429 when the minute runs out part-way', async () => {
  const { clock, report, left, taken } = setup()
  const outcomes = await Promise.all([report('192.0.2.20', 60), report('192.0.2.20', 60)])
  assert.equal(taken.count, 120, 'both saw room: each took a unit per key')
  const refused = outcomes.filter((outcome) => outcome !== null)
  assert.equal(refused.length, 1, 'one of the two is refused')
  assert.equal(refused[0]!.code, 'rate_limited')
  assert.equal(refused[0]!.message, 'a client address may report 100 keys a minute and 1000 a day; this report of 60 does not fit in what is left: retry in 30 s')
  assert.equal(retryAfter(refused[0]!), '30')
  // The limiter has no refunds: the refused report's 40 that fitted stay taken.
  assert.deepEqual(await left('192.0.2.20'), [0, 900])
  assert.deepEqual(await left('192.0.2.21'), [100, 1000], 'another address is untouched')

  // Its 20 refused keys were 20 strikes in the wait period: one more charge would start a ban, so
  // the next report is told the ban's 15 minutes rather than the minute's 30 s (the limiter's peek
  // answers as its consume would), and is charged nothing. That wait is longer than needed: a
  // refused report starts no ban, so a report fits again at the minute's end (below).
  const next = await report('192.0.2.20', 1)
  assert.equal(next?.code, 'rate_limited')
  assert.equal(retryAfter(next), '900')
  assert.deepEqual(await left('192.0.2.20'), [0, 900])
  assert.equal(taken.count, 120, 'the refused report took nothing, so it started no ban')
  // The wait period ends with the minute, and no ban was started: a full report fits.
  clock.advance(30_000)
  assert.equal(await report('192.0.2.20', 100), null)
  assert.deepEqual(await left('192.0.2.20'), [0, 800])
})

test('an address whose racing reports earned a ban is refused while it lasts, whatever its windows hold, and told the ban\'s end', async () => {
  const { clock, report, left, taken } = setup()
  // The second report gets 40 keys in, then 30 refused: the 21st refusal in the wait period bans.
  const outcomes = await Promise.all([report('192.0.2.30', 60), report('192.0.2.30', 70)])
  assert.equal(outcomes.filter((outcome) => outcome !== null).length, 1)
  const bannedAt = clock.now()

  // The next minute: 100 keys of room in the minute and 900 in the day, but the ban holds.
  clock.advance(MINUTE)
  assert.deepEqual(await left('192.0.2.30'), [100, 900])
  const before = taken.count
  const refused = await report('192.0.2.30', 100)
  assert.equal(refused?.code, 'rate_limited')
  assert.equal(retryAfter(refused), String((bannedAt + 15 * MINUTE - clock.now()) / 1000), '840 s: the ban\'s end')
  assert.match(refused?.message ?? '', /this report of 100 does not fit in what is left: retry in 840 s$/)
  assert.deepEqual(await left('192.0.2.30'), [100, 900], 'a refused report is charged nothing')
  assert.equal(taken.count, before, 'and is refused on one look: not a unit taken, not 100 refusals')

  // Past the ban, a full report fits again.
  clock.set(bannedAt + 15 * MINUTE)
  assert.equal(await report('192.0.2.30', 100), null)
  assert.deepEqual(await left('192.0.2.30'), [0, 800])
})

test('a report refused because the minute ran out is told the minute\'s end when the day still holds it, even exactly', async () => {
  const { clock, report, left } = setup()
  const address = '192.0.2.40'
  // 840 keys reported today before this minute: 160 left in the day.
  for (let m = 0; m < 8; m++) {
    assert.equal(await report(address, 100), null)
    clock.advance(MINUTE)
  }
  assert.equal(await report(address, 40), null)
  clock.advance(MINUTE)
  assert.deepEqual(await left(address), [100, 160])
  // Two reports of 60 at once: the second gets 40 in, so the day has exactly 60 left when its
  // 41st key is refused for the minute: it fits in the day, so the wait is the minute's 30 s.
  const outcomes = await Promise.all([report(address, 60), report(address, 60)])
  const refused = outcomes.filter((outcome) => outcome !== null)
  assert.equal(refused.length, 1)
  assert.equal(retryAfter(refused[0]!), '30')
  assert.deepEqual(await left(address), [0, 60])
})
