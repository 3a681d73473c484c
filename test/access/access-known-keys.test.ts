// The address gate of the access service (src/access/access.service.ts) spares the keys this
// instance resolved before: a key it knows is read again when its cache entry is out of date,
// even from an exhausted address, and served on its own quota; a key it never resolved is not
// read from there. Written against the survivors of `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createAccessService, type AccessRequest } from '../../src/access/access.service.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { unknownKey } from './key-reads.ts'

test('from an exhausted address, a key resolved before is read again once out of date and served; a key never resolved waits for the address\'s lookup of the second', async (t) => {
  const clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 10))
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  let reads = 0
  const find = stores.keys.findKeyByHash.bind(stores.keys)
  stores.keys.findKeyByHash = async (hash) => { reads++; return await find(hash) }
  const access = createAccessService({ keys: stores.keys, limiter: createMemoryRateLimiter({ now: clock.now }), clock })
  const admin = createKeyAdmin(stores.keys, clock)
  const known = await admin.create({ role: 'customer', plan: 'pro' })
  const stranger = await admin.create({ role: 'customer', plan: 'pro' })
  const request = (key: string | null): AccessRequest => ({
    key,
    address: '192.0.2.1',
    role: 'customer',
    free: false,
    preflight: false,
    keyInQuery: null
  })
  assert.equal((await access.decide(request(known.key))).refusal, null)
  for (let i = 0; i < 60; i++) await access.decide(request(null))
  clock.advance(2000) // the key's cache entry is out of date; the address is still exhausted
  assert.equal((await access.decide(request(null))).decision.allowed, false)
  const again = await access.decide(request(known.key))
  assert.equal(reads, 2, 'read again')
  assert.equal(again.refusal, null)
  assert.equal(again.subject, `key:${known.record.id}`)
  assert.equal(again.decision.minute.remaining, 298)
  // A key never resolved here waits for the address's lookup of the second (a guess took it).
  await access.decide(request(unknownKey('g')))
  assert.equal(reads, 3, 'the guess took this second\'s lookup')
  const refused = await access.decide(request(stranger.key))
  assert.equal(reads, 3, 'never resolved here: not read in the same second')
  assert.equal((refused.refusal as { code?: string } | null)?.code, 'rate_limited')
  clock.advance(1000)
  assert.equal((await access.decide(request(stranger.key))).refusal, null, 'the next second\'s lookup serves it')
  assert.equal(reads, 4)
})
