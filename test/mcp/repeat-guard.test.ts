// The loop breaker of tool calls (src/mcp/repeat.ts), on a clock set by hand: the same tool with
// the same arguments more than `limit` times in one fixed minute, by one key, is refused with how
// many calls there were and the seconds to the minute's end; anything else differing is another
// call. Through /mcp: mcp.http.test.ts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRepeatGuard } from '../../src/mcp/repeat.ts'

function guard (limit: number) {
  let now = 1_000_000
  const repeats = createRepeatGuard({ limit, clock: { now: () => now } })
  return { check: repeats.check, at: (ms: number) => { now = 1_000_000 + ms } }
}

test('the call past the limit within a minute is refused with the count and the seconds left of that minute, rounded up', () => {
  const { check, at } = guard(3)
  for (let i = 0; i < 3; i++) assert.equal(check(7, 'listPets', '{"limit":5}'), null)
  at(10_500)
  assert.deepEqual(check(7, 'listPets', '{"limit":5}'), { calls: 4, retryAfter: 50 })
  at(59_999)
  assert.deepEqual(check(7, 'listPets', '{"limit":5}'), { calls: 5, retryAfter: 1 })
})

test('the minute is fixed from the first call: at its end the count starts again', () => {
  const { check, at } = guard(1)
  assert.equal(check(7, 'getPet', '{"petId":1}'), null)
  at(30_000)
  assert.deepEqual(check(7, 'getPet', '{"petId":1}'), { calls: 2, retryAfter: 30 })
  at(60_000)
  assert.equal(check(7, 'getPet', '{"petId":1}'), null, 'a new minute')
  at(60_001)
  assert.deepEqual(check(7, 'getPet', '{"petId":1}'), { calls: 2, retryAfter: 60 })
})

test('another key, tool or arguments is another call, counted apart', () => {
  const { check } = guard(1)
  assert.equal(check(7, 'getPet', '{"petId":1}'), null)
  assert.equal(check(8, 'getPet', '{"petId":1}'), null)
  assert.equal(check(7, 'getOrder', '{"petId":1}'), null)
  assert.equal(check(7, 'getPet', '{"petId":2}'), null)
  // The parts cannot run into each other: key 7 with tool "1\ngetPet" is not key 71 with getPet.
  assert.equal(check(71, 'getPet', '{"petId":1}'), null)
  assert.equal(check(7, '1\ngetPet', '{"petId":1}'), null)
  assert.deepEqual(check(7, 'getPet', '{"petId":1}'), { calls: 2, retryAfter: 60 })
})

test('a limit of 0 refuses the first call; the guard remembers at most 10,000 calls, the oldest forgotten first', () => {
  assert.deepEqual(guard(0).check(7, 'getPet', '{}'), { calls: 1, retryAfter: 60 })
  const { check } = guard(1)
  for (let i = 0; i < 10_000; i++) check(7, 'getPet', `{"petId":${i}}`)
  assert.deepEqual(check(7, 'getPet', '{"petId":0}'), { calls: 2, retryAfter: 60 }, 'all 10,000 remembered')
  check(7, 'getPet', '{"petId":10000}')
  assert.deepEqual(check(7, 'getPet', '{"petId":1}'), { calls: 2, retryAfter: 60 })
  assert.equal(check(7, 'getPet', '{"petId":0}'), null, 'the oldest was forgotten: its repeat counts as a first call')
})

test('a call whose minute starts again counts as the newest: the calls forgotten first are those older than it', () => {
  // Fault caught: an entry renewed in place kept its first place in the age order, and was the
  // next one forgotten although its minute had just begun.
  const { check, at } = guard(1)
  assert.equal(check(7, 'getPet', '{"petId":"renewed"}'), null)
  for (let i = 0; i < 9_998; i++) check(7, 'getPet', `{"petId":${i}}`)
  at(60_000)
  assert.equal(check(7, 'getPet', '{"petId":"renewed"}'), null, 'a new minute')
  check(7, 'getPet', '{"petId":"a"}')
  check(7, 'getPet', '{"petId":"b"}')
  assert.deepEqual(check(7, 'getPet', '{"petId":"renewed"}'), { calls: 2, retryAfter: 60 })
})
