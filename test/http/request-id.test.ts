// New request ids (http/request-log.ts, newRequestId): version 4 UUIDs written into a buffer from
// a pool of random bytes. Each is a well-formed UUID with the version and variant bits set, no id
// repeats across pool refills, and every hex digit of every random position occurs.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { newRequestId } from '../../src/http/request-log.ts'

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('request ids are distinct version 4 UUIDs whose random digits take every value', () => {
  // Faults caught: the pool not advanced (repeats), a refill that reuses bytes, a byte written
  // to the wrong place (a dash overwritten, a digit left at its template's zero), a version or
  // variant bit lost.
  const ids = Array.from({ length: 20_000 }, () => newRequestId())
  for (const id of ids) assert.match(id, UUID_V4)
  assert.equal(new Set(ids).size, ids.length, 'no id repeats')
  const seen = Array.from({ length: 36 }, () => new Set<string>())
  for (const id of ids) for (let i = 0; i < 36; i++) seen[i]!.add(id[i]!)
  for (let i = 0; i < 36; i++) {
    const expected = [8, 13, 18, 23].includes(i) ? 1 : i === 14 ? 1 : i === 19 ? 4 : 16
    assert.equal(seen[i]!.size, expected, `position ${i} takes ${expected} values`)
  }
})
