// The access service on its own: synchronous when it can be, and bounded caches.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { createAccessService, type AccessRequest } from '../../src/access/access.service.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { unknownKey } from './key-reads.ts'

async function setup (t: TestContext, options: { keyCacheMax?: number; refusedCacheMax?: number } = {}) {
  const clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 30))
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  let reads = 0
  const find = stores.keys.findKeyByHash.bind(stores.keys)
  stores.keys.findKeyByHash = async (hash) => { reads++; return find(hash) }
  const access = createAccessService({
    keys: stores.keys,
    limiter: createMemoryRateLimiter({ now: clock.now }),
    clock,
    ...options
  })
  const admin = createKeyAdmin(stores.keys, clock)
  const make = async () => (await admin.create({ role: 'customer', plan: 'pro' })).key
  const request = (key: string | null): AccessRequest => ({
    key,
    address: '192.0.2.1',
    role: 'customer',
    free: false,
    preflight: false,
    keyInQuery: null
  })
  return { access, clock, make, request, stores, reads: () => reads }
}

test('decide answers synchronously (no promise) once the key is cached and the limiter is in memory', async (t) => {
  const { access, make, request } = await setup(t)
  const key = await make()
  const first = access.decide(request(key))
  assert.ok(first instanceof Promise, 'the first request reads the key')
  assert.equal((await first).refusal, null)
  const second = access.decide(request(key))
  assert.ok(!(second instanceof Promise))
  assert.equal(second.refusal, null)
  assert.equal(second.decision.minute.remaining, 298)
  const anonymous = access.decide(request(null))
  assert.ok(!(anonymous instanceof Promise))
  assert.equal(anonymous.refusal?.message, 'an API key is required: send it as X-API-Key or Authorization: Bearer')
})

test('the key cache holds at most keyCacheMax keys, evicting the oldest first', async (t) => {
  const { access, make, request, reads } = await setup(t, { keyCacheMax: 2 })
  const [a, b, c] = [await make(), await make(), await make()]
  for (const key of [a, b, c]) await access.decide(request(key))
  assert.equal(reads(), 3)
  assert.ok(!(access.decide(request(c)) instanceof Promise), 'c is held')
  assert.ok(!(access.decide(request(b)) instanceof Promise), 'b is held')
  await access.decide(request(a))
  assert.equal(reads(), 4, 'a was evicted and read again')
})

test('the refused-key cache holds at most refusedCacheMax hashes, each for 60 s', async (t) => {
  const { access, clock, request, reads } = await setup(t, { refusedCacheMax: 2 })
  const wrong = (i: number) => unknownKey(String(i).padStart(43, 'z'), 1)
  for (const i of [1, 2, 3]) await access.decide(request(wrong(i)))
  assert.equal(reads(), 3)
  await access.decide(request(wrong(3)))
  await access.decide(request(wrong(2)))
  assert.equal(reads(), 3, 'held')
  await access.decide(request(wrong(1)))
  assert.equal(reads(), 4, 'evicted')
  clock.advance(60_001)
  await access.decide(request(wrong(3)))
  assert.equal(reads(), 5, 'expired')
})

test('a key\'s day count continues from the usage the database recorded today, put back on its first request (day-seed.ts)', async (t) => {
  // Fault caught: the charge step no longer asked the day seeder, so after a restart a key that
  // had spent its day quota started the day again at 0.
  const { clock, request, stores } = await setup(t)
  const admin = createKeyAdmin(stores.keys, clock)
  const spent = await admin.create({ role: 'customer', plan: 'pro' })
  const fresh = await admin.create({ role: 'customer', plan: 'pro' })
  await stores.keys.recordUsage({
    counts: [{ keyId: spent.record.id, day: '2026-11-21', allowed: 9_990, limited: 0, banned: 0 }],
    lastUsed: []
  })
  // A new service with a new limiter: an instance after a restart, on the same database.
  const restarted = createAccessService({
    keys: stores.keys,
    limiter: createMemoryRateLimiter({ now: clock.now }),
    clock
  })
  for (const key of [spent.key, fresh.key]) await restarted.decide(request(key))
  await new Promise((resolve) => setTimeout(resolve, 20))
  const dayLeft = async (key: string) => (await restarted.decide(request(key))).decision.day.remaining
  assert.equal(await dayLeft(spent.key), 10_000 - 9_990 - 1)
  assert.equal(await dayLeft(fresh.key), 10_000 - 2)
})
