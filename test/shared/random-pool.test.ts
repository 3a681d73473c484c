// The pool of random bytes behind request ids and event ids (src/shared/random-pool.ts): each
// byte handed out once, a fresh draw when what is left is too short.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { RandomPool } from '../../src/shared/random-pool.ts'

test('random pool: takes never overlap, and one that does not fit comes from a new draw', () => {
  const pool = new RandomPool()
  const seen = new Set<string>()
  let draws = 0
  let last: Buffer | null = null
  for (const n of [16, 10, 4000, 16, 70, 4096, 1, 10, 16]) {
    const at = pool.take(n)
    if (pool.bytes !== last) { draws++; last = pool.bytes }
    assert.ok(at >= 0 && at + n <= pool.bytes.length, `take(${n}) at ${at} inside ${pool.bytes.length} bytes`)
    // The same region of the same draw twice would repeat an id's randomness.
    for (let i = at; i < at + n; i++) {
      const where = `${draws}:${i}`
      assert.ok(!seen.has(where), `byte ${where} handed out twice`)
      seen.add(where)
    }
  }
  // 16 + 10 + 4000 + 16 fit the first draw of 4,096 bytes; 70 does not; 4,096 needs one of its
  // own; 1 + 10 + 16 share the last.
  assert.equal(draws, 4)
  // 4 KiB of zeros (an unfilled buffer) would be no randomness at all.
  assert.ok(pool.bytes.some((b) => b !== 0))
})
