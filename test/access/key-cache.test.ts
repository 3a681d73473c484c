// The key cache on its own (src/access/key-cache.ts), on a real SQLite store: which keys are
// refused without a lookup, how long a resolved or refused key is reused (to the millisecond,
// never past the key's expiry), the stale answer during an outage, eviction, what forget()
// forgets, and the principal a rotated key gives. The store's findKeyByHash is wrapped only to
// count reads and to fail. Written against the survivors of `npm run mutate -- access`
// (docs/testing.md).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { createKeyCache, isRefused, type KeyCacheOptions, type Refused } from '../../src/access/key-cache.ts'
import type { Principal } from '../../src/access/principal.ts'
import { hashKey } from '../../src/accounts/keys.rules.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { countKeyReads, unknownKey } from './key-reads.ts'

const T = Date.UTC(2026, 10, 21, 12, 0, 30)

function setup (t: TestContext, options: Omit<KeyCacheOptions, 'keys'> = {}) {
  const clock = manualClock(T)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const { reads, failWith } = countKeyReads(stores.keys)
  const cache = createKeyCache({ keys: stores.keys, ...options })
  const admin = createKeyAdmin(stores.keys, clock)
  const make = async (more: { expiresAt?: string } = {}) => await admin.create({ role: 'customer', plan: 'pro', ...more })
  return { clock, cache, admin, make, reads, failWith }
}

const principalOf = (value: Principal | Refused | undefined): Principal => {
  assert.ok(value !== undefined && !isRefused(value), `a principal, not ${JSON.stringify(value)}`)
  return value
}

test('a key not of the form psk_ and 43 base64url characters is refused without a lookup', (t) => {
  const { clock, cache } = setup(t)
  const valid = 'psk_' + 'A'.repeat(21) + 'z9_-' + 'b'.repeat(18)
  assert.equal(valid.length, 47)
  assert.equal(cache.cached(valid, clock.now()), undefined, 'well-formed: must be read')
  const malformed = [
    'psk_' + 'a'.repeat(42),
    'psk_' + 'a'.repeat(44),
    'PSK_' + 'a'.repeat(43),
    'psk-' + 'a'.repeat(43),
    'psk_' + 'a'.repeat(42) + '+',
    'psk_' + 'a'.repeat(42) + '=',
    'x' + valid,
    valid + 'x',
    valid + '\n',
    ''
  ]
  for (const key of malformed) {
    const answer = cache.cached(key, clock.now())
    assert.ok(answer !== undefined && isRefused(answer), JSON.stringify(key))
    assert.deepEqual(answer, { expires: Infinity, expiredAt: null, key: null })
  }
})

test('a resolved key is reused for exactly keyCacheMs (2 s by default), then read again', async (t) => {
  const { clock, cache, make, reads } = setup(t)
  const { key, record } = await make()
  assert.equal(principalOf(await cache.read(key, clock.now())).keyId, record.id)
  assert.equal(reads(), 1)
  assert.equal(cache.knows(key), true)
  clock.advance(1999)
  assert.equal(principalOf(cache.cached(key, clock.now())).keyId, record.id)
  clock.advance(1)
  assert.equal(cache.cached(key, clock.now()), undefined, 'at 2 s: read again')
  assert.equal(cache.knows(key), true, 'known, though out of date')

  const short = setup(t, { keyCacheMs: 500 })
  const other = await short.make()
  await short.cache.read(other.key, short.clock.now())
  short.clock.advance(499)
  assert.ok(short.cache.cached(other.key, short.clock.now()) !== undefined)
  short.clock.advance(1)
  assert.equal(short.cache.cached(other.key, short.clock.now()), undefined)
})

test('a refused key is remembered for exactly refusedCacheMs (60 s by default)', async (t) => {
  const { clock, cache, reads } = setup(t)
  const wrong = unknownKey('q')
  const refused = await cache.read(wrong, clock.now())
  assert.deepEqual(refused, { expires: T + 60_000, expiredAt: null, key: null })
  assert.equal(cache.knows(wrong), false, 'a refused key is not a resolved one')
  clock.advance(59_999)
  assert.equal(cache.cached(wrong, clock.now()), refused)
  clock.advance(1)
  assert.equal(cache.cached(wrong, clock.now()), undefined)
  assert.equal(cache.cached(wrong, clock.now()), undefined, 'still to be read')
  assert.equal(reads(), 1)
})

test('a key that expires is cached no longer than its expiry, and refused as expired after it', async (t) => {
  const { clock, cache, make } = setup(t)
  const { key, record } = await make({ expiresAt: new Date(T + 1000).toISOString() })
  principalOf(await cache.read(key, clock.now()))
  clock.advance(999)
  principalOf(cache.cached(key, clock.now()))
  clock.advance(1)
  assert.equal(cache.cached(key, clock.now()), undefined, 'expired: not served from the cache')
  assert.deepEqual(await cache.read(key, clock.now()), {
    expires: T + 1000 + 60_000,
    expiredAt: T + 1000,
    // Whose request log keeps the refusal (key-requests/): the key's id and state, never the key.
    key: { keyId: record.id, state: 'expired', since: T + 1000, replacedBy: null }
  })
  assert.equal(cache.knows(key), false, 'a refused key is forgotten as a resolved one')
})

test('a revoked key is refused without an expiry, even past its expiry', async (t) => {
  const { clock, cache, admin, make } = setup(t)
  const created = await make({ expiresAt: new Date(T + 1000).toISOString() })
  await admin.revoke(created.record.id, null)
  const revoked = { keyId: created.record.id, state: 'revoked', since: T, replacedBy: null }
  assert.deepEqual(await cache.read(created.key, clock.now()), { expires: T + 60_000, expiredAt: null, key: revoked })
  clock.advance(5000)
  assert.deepEqual(await cache.read(created.key, clock.now()), {
    expires: T + 5000 + 60_000, expiredAt: null, key: revoked
  })
})

test('during an outage a key\'s last principal serves for staleIfErrorMs (5 min) after it was read, never past its expiry', async (t) => {
  const { clock, cache, make, failWith } = setup(t)
  const lasting = await make()
  const expiring = await make({ expiresAt: new Date(T + 10_000).toISOString() })
  await cache.read(lasting.key, clock.now())
  await cache.read(expiring.key, clock.now())
  const outage = new Error('database is out')
  failWith(outage)
  clock.advance(9999)
  assert.equal(principalOf(await cache.read(lasting.key, clock.now())).keyId, lasting.record.id)
  assert.equal(principalOf(await cache.read(expiring.key, clock.now())).keyId, expiring.record.id)
  clock.advance(1)
  await assert.rejects(cache.read(expiring.key, clock.now()), outage, 'expired: no stale answer')
  clock.set(T + 5 * 60_000 - 1)
  assert.equal(principalOf(await cache.read(lasting.key, clock.now())).keyId, lasting.record.id)
  clock.set(T + 5 * 60_000)
  await assert.rejects(cache.read(lasting.key, clock.now()), outage)
  await assert.rejects(cache.read(unknownKey('n'), clock.now()), outage, 'a key never read has no stale answer')
})

test('staleIfErrorMs can be set', async (t) => {
  const { clock, cache, make, failWith } = setup(t, { staleIfErrorMs: 3000 })
  const { key } = await make()
  await cache.read(key, clock.now())
  failWith(new Error('database is out'))
  clock.advance(2999)
  principalOf(await cache.read(key, clock.now()))
  clock.advance(1)
  await assert.rejects(cache.read(key, clock.now()), /database is out/)
})

test('reading a cached key again keeps the others: a full cache evicts only when a new key comes in, the oldest first', async (t) => {
  const { clock, cache, make } = setup(t, { keyCacheMax: 2 })
  const [a, b, c] = [await make(), await make(), await make()]
  await cache.read(a.key, clock.now())
  await cache.read(b.key, clock.now())
  await cache.read(b.key, clock.now()) // b again: a stays
  principalOf(cache.cached(a.key, clock.now()))
  await cache.read(a.key, clock.now()) // a again: now b is the oldest
  await cache.read(c.key, clock.now())
  assert.equal(cache.cached(b.key, clock.now()), undefined, 'b evicted')
  principalOf(cache.cached(a.key, clock.now()))
  principalOf(cache.cached(c.key, clock.now()))
})

test('a refused-key cache of refusedCacheMax keeps its others when a refused key is refused again', async (t) => {
  const { clock, cache } = setup(t, { refusedCacheMax: 2 })
  const [x, y, z] = ['x', 'y', 'z'].map((c) => unknownKey(c)) as [string, string, string]
  await cache.read(x, clock.now())
  await cache.read(y, clock.now())
  await cache.read(y, clock.now())
  assert.ok(cache.cached(x, clock.now()) !== undefined, 'x kept')
  await cache.read(z, clock.now())
  assert.equal(cache.cached(x, clock.now()), undefined, 'x, the oldest, evicted for z')
  assert.ok(cache.cached(y, clock.now()) !== undefined)
})

test('forget(id) forgets the key and every key of its rotation chain, and no other', async (t) => {
  const { clock, cache, admin, make } = setup(t)
  const first = await make()
  const other = await make()
  const rotated = await admin.rotate(first.record.id, { gracePeriodSeconds: 3600 })
  for (const key of [first.key, rotated.key, other.key]) await cache.read(key, clock.now())
  const successor = principalOf(cache.cached(rotated.key, clock.now()))
  assert.equal(successor.keyId, rotated.record.id, 'the key presented')
  assert.deepEqual(successor.caller, { keyId: first.record.id, role: 'customer', plan: 'pro', subject: `key:${first.record.id}` }, 'the caller: the first key of the chain')
  assert.deepEqual(successor.quota, { perMinute: 300, perDay: 10_000 })
  cache.forget(first.record.id) // by the caller's identity: the whole chain
  assert.equal(cache.cached(first.key, clock.now()), undefined)
  assert.equal(cache.cached(rotated.key, clock.now()), undefined)
  principalOf(cache.cached(other.key, clock.now()))
  await cache.read(rotated.key, clock.now())
  cache.forget(rotated.record.id) // by the key's own id
  assert.equal(cache.cached(rotated.key, clock.now()), undefined)
  principalOf(cache.cached(other.key, clock.now()))
})

test('a legacy-form key is refused by its prefix, without a read, from the prefixes read for exactly legacyPrefixesMs (60 s by default)', async (t) => {
  const clock = manualClock(T)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const { reads, failWith } = countKeyReads(stores.keys)
  let prefixReads = 0
  const list = stores.keys.legacyKeyPrefixes.bind(stores.keys)
  stores.keys.legacyKeyPrefixes = async () => { prefixReads++; return await list() }
  const cache = createKeyCache({ keys: stores.keys })
  const legacy = (c: string) => 'psk_' + c.repeat(43)
  const live = legacy('L')
  await stores.keys.createKey({
    name: null, role: 'customer', plan: 'pro', perMinute: null, perDay: null,
    hash: hashKey(live), prefix: live.slice(0, 12), now: T
  })

  assert.equal(cache.cached(legacy('r'), clock.now()), undefined, 'no prefixes yet: read to decide')
  assert.deepEqual(await Promise.all([cache.read(legacy('r'), T), cache.read(legacy('s'), T)]), [
    { expires: Infinity, expiredAt: null, key: null }, { expires: Infinity, expiredAt: null, key: null }
  ])
  assert.deepEqual([prefixReads, reads()], [1, 0], 'one read of the prefixes for both, no key read')
  assert.deepEqual(cache.cached(legacy('t'), clock.now()), { expires: Infinity, expiredAt: null, key: null }, 'refused from memory')
  principalOf(await cache.read(live, clock.now()))
  assert.deepEqual([prefixReads, reads()], [1, 1], 'a live legacy key is read')

  clock.set(T + 59_999)
  assert.deepEqual(cache.cached(legacy('t'), clock.now()), { expires: Infinity, expiredAt: null, key: null })
  clock.set(T + 60_000)
  assert.equal(cache.cached(legacy('t'), clock.now()), undefined, 'out of date: read again')
  await cache.read(legacy('t'), clock.now())
  assert.deepEqual([prefixReads, reads()], [2, 1])

  // When the prefixes cannot be read, the key is read (and its failure is the answer).
  clock.set(T + 120_000)
  stores.keys.legacyKeyPrefixes = async () => { prefixReads++; throw new Error('out') }
  failWith(new Error('the database is out'))
  await assert.rejects(cache.read(legacy('u'), clock.now()), /the database is out/)
  assert.deepEqual([prefixReads, reads()], [3, 2])
})

test('legacyPrefixesMs can be set', async (t) => {
  const { clock, cache } = setup(t, { legacyPrefixesMs: 1000 })
  const key = 'psk_' + 'v'.repeat(43)
  await cache.read(key, clock.now())
  clock.advance(999)
  assert.deepEqual(cache.cached(key, clock.now()), { expires: Infinity, expiredAt: null, key: null })
  clock.advance(1)
  assert.equal(cache.cached(key, clock.now()), undefined)
})
