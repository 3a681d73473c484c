// Which subjects the free reads' allowance forgets when it is full (src/access/free-reads.ts; issue
// 48 finding 5). It holds 10,000 subjects and forgets the one read least recently: a banned key
// that keeps reading its own record must stay counted however many other subjects pass, or it
// could wash its count away with a flood of other addresses and read without bound. Fault caught:
// subjects forgotten in the order they were first seen rather than last used.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createFreeReads } from '../../src/access/free-reads.ts'

/** 12:00:30 UTC: mid-minute, so every read below falls in one minute. */
const T0 = Date.UTC(2026, 10, 21, 12, 0, 30)

test('free reads: a key still reading is kept when 10,000 subjects pass, since the one read least recently is forgotten first', () => {
  const reads = createFreeReads(3, 1000)
  assert.equal(reads.take('key:old', 'ip:o', T0), true)
  assert.equal(reads.take('key:old', 'ip:o', T0), true)
  // 9,996 other subjects: with the key's and its address's, 9,998 held, none forgotten yet.
  for (let i = 0; i < 4998; i++) reads.take(`key:x${i}`, `ip:x${i}`, T0)
  // Its third read: now the most recently used of all.
  assert.equal(reads.take('key:old', 'ip:o', T0), true)
  // Four more subjects: two are forgotten, the two read longest ago (the first pair of the flood).
  reads.take('key:y0', 'ip:y0', T0)
  reads.take('key:y1', 'ip:y1', T0)
  assert.equal(reads.take('key:old', 'ip:o', T0), false, 'the key has spent its 3: it was not forgotten')
  assert.equal(reads.take('key:x0', 'ip:x0', T0), true, 'the first pair of the flood was forgotten')
  assert.equal(reads.take('key:x1', 'ip:x1', T0), true)
})
