// A key whose checksum is wrong is refused without any storage read, and charged to the client
// address exactly like an unknown key (issue 32; docs/product.md section 3). Legacy keys, made
// before checksums, still work, and a legacy-form key that is none of them costs no key read
// either (issue 48 finding 7): the instance holds the prefixes of the live legacy keys, read at
// most once a minute. Faults caught: the checksum checked after the lookup (or not at all), so a
// flood of random well-formed keys costs a read each; the same for random legacy-form keys; a
// wrong checksum answered without a charge (free guessing) or otherwise than an unknown key (an
// oracle); legacy keys refused once checksums exist, or for longer than a minute once the
// prefixes are out of date.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { hashKey, keyChecksum } from '../../src/accounts/keys.rules.ts'
import type { KeyStore } from '../../src/accounts/keys.store.ts'
import { subjectOfAddress } from '../../src/access/client-subject.ts'
import { ANONYMOUS_QUOTA } from '../../src/access/principal.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { countKeyReads } from './key-reads.ts'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const randomBase62 = (n: number): string => [...randomBytes(n)].map((b) => BASE62[b % 62]).join('')

/** `psk_`, 43 base62 characters and 6 more that are not their checksum: the shape of a key, not a key. */
function wrongChecksumKey (): string {
  const random = randomBase62(43)
  let checksum = randomBase62(6)
  if (checksum === keyChecksum(random)) checksum = checksum === '000000' ? '000001' : '000000'
  return `psk_${random}${checksum}`
}

test('2,000 random well-formed keys with wrong checksums: each 401 unauthenticated and charged to its address, 0 storage reads', async (t) => {
  const { app, stores, limiter } = await buildTestApp(t)
  const { reads } = countKeyReads(stores.keys)
  // 40 addresses, 50 keys each: under the address quota (60 a minute), so every answer is the key's own.
  for (let a = 0; a < 40; a++) {
    const address = `198.51.100.${a + 1}`
    for (let i = 0; i < 50; i++) {
      const res = await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: address, headers: { 'x-api-key': wrongChecksumKey() } })
      assert.equal(res.statusCode, 401)
      assert.equal(res.json().code, 'unauthenticated')
      assert.equal(res.json().message, 'the API key is not valid (unknown or revoked)', 'the same words as an unknown key')
      assert.equal(res.headers['x-ratelimit-limit'], String(ANONYMOUS_QUOTA.perMinute), 'the address\'s quota')
      assert.equal(res.headers['x-ratelimit-remaining'], String(ANONYMOUS_QUOTA.perMinute - 1 - i), `${address}, key ${i}: charged to the address`)
    }
    const windows = await limiter.peek(subjectOfAddress(address), ANONYMOUS_QUOTA)
    assert.equal(windows.minute.remaining, ANONYMOUS_QUOTA.perMinute - 50, `${address}: 50 charged in the limiter`)
  }
  assert.equal(reads(), 0, 'no key with a wrong checksum is looked up')

  // The spy counts: an unknown key with the right checksum is read once; an unknown legacy key is
  // refused by its prefix, which no live legacy key has (test below).
  const random = randomBase62(43)
  const unknownChecksummed = await app.inject({
    method: 'GET',
    url: '/v1/pets',
    remoteAddress: '198.51.100.200',
    headers: { 'x-api-key': `psk_${random}${keyChecksum(random)}` }
  })
  assert.equal(unknownChecksummed.statusCode, 401)
  const unknownLegacy = await app.inject({
    method: 'GET',
    url: '/v1/pets',
    remoteAddress: '198.51.100.200',
    headers: { 'x-api-key': 'psk_' + randomBytes(32).toString('base64url') }
  })
  assert.equal(unknownLegacy.statusCode, 401)
  assert.equal(reads(), 1)
})

/** Counts the reads of the legacy keys' prefixes. */
function countPrefixReads (keys: KeyStore): () => number {
  let reads = 0
  const list = keys.legacyKeyPrefixes.bind(keys)
  keys.legacyKeyPrefixes = async () => { reads++; return await list() }
  return () => reads
}

/** A key as the service made them before checksums: its hash and a 12-character prefix stored. */
async function storeLegacyKey (h: TestApp): Promise<{ id: number; key: string }> {
  const key = 'psk_' + randomBytes(32).toString('base64url')
  const record = await h.stores.keys.createKey({
    name: 'old partner', role: 'customer', plan: 'pro', perMinute: null, perDay: null,
    hash: hashKey(key), prefix: key.slice(0, 12), now: h.clock.now()
  })
  return { id: record.id, key }
}

test('a flood of random legacy-form keys from one address: each 401 and charged to it, no key read, one read of the prefixes a minute', async (t) => {
  const h = await buildTestApp(t)
  const live = await storeLegacyKey(h)
  const { reads } = countKeyReads(h.stores.keys)
  const prefixReads = countPrefixReads(h.stores.keys)
  const address = '198.51.100.50'
  // Some at once (one read of the prefixes serves them all), then one at a time.
  const flood = () => h.app.inject({
    method: 'GET', url: '/v1/pets', remoteAddress: address,
    headers: { 'x-api-key': 'psk_' + randomBytes(32).toString('base64url') }
  })
  const answers = [...await Promise.all(Array.from({ length: 10 }, flood))]
  for (let i = 0; i < 40; i++) answers.push(await flood())
  for (const [i, res] of answers.entries()) {
    assert.equal(res.statusCode, 401, `key ${i}`)
    assert.equal(res.json().message, 'the API key is not valid (unknown or revoked)', 'the words of an unknown key')
  }
  assert.equal(answers.at(-1)!.headers['x-ratelimit-remaining'], String(ANONYMOUS_QUOTA.perMinute - 50), 'charged to the address')
  assert.equal(reads(), 0, 'no random legacy-form key is looked up')
  assert.equal(prefixReads(), 1)

  // The live legacy key is read and served; within the minute the prefixes are not read again.
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: live.key })).statusCode, 200)
  assert.equal(reads(), 1)
  assert.equal(prefixReads(), 1)

  // A minute on, the next legacy-form key has them read again, once, whatever the flood.
  h.clock.advance(60_000)
  await Promise.all(Array.from({ length: 5 }, flood))
  assert.equal(prefixReads(), 2)
  assert.equal(reads(), 1)
})

test('a legacy key that appears after the prefixes were read is served once they are read again (a minute); a revoked one is refused by its prefix', async (t) => {
  const h = await buildTestApp(t)
  const first = await storeLegacyKey(h)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: first.key })).statusCode, 200)
  // Restored from a backup, say: no legacy key is made by the service any more.
  const late = await storeLegacyKey(h)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: late.key })).statusCode, 401, 'not among the prefixes read')
  h.clock.advance(60_000)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: late.key })).statusCode, 200)

  assert.equal((await h.call({ method: 'DELETE', url: `/v1/admin/keys/${first.id}` })).statusCode, 204)
  h.clock.advance(60_000)
  const { reads } = countKeyReads(h.stores.keys)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: first.key })).statusCode, 401)
  assert.equal(reads(), 0, 'a revoked legacy key\'s prefix is no longer held')
})

test('a key refused for its checksum and an unknown key get byte-identical answers but for the request id', async (t) => {
  const { app } = await buildTestApp(t)
  const random = randomBase62(43)
  const unknown = await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: '198.51.100.7', headers: { 'x-api-key': `psk_${random}${keyChecksum(random)}` } })
  const wrong = await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: '198.51.100.8', headers: { 'x-api-key': wrongChecksumKey() } })
  const strip = (body: string) => body.replace(/"requestId":"[^"]+"/, '')
  assert.equal(strip(wrong.body), strip(unknown.body))
  const { 'request-id': _a, date: _b, 'x-ratelimit-reset': _c, ratelimit: _d, ...wrongHeaders } = wrong.headers
  const { 'request-id': _e, date: _f, 'x-ratelimit-reset': _g, ratelimit: _h, ...unknownHeaders } = unknown.headers
  assert.deepEqual(wrongHeaders, unknownHeaders)
})

test('a legacy key (psk_ and 43 base64url characters, no checksum) keeps working, and the key list flags it legacy', async (t) => {
  const { call, stores, clock } = await buildTestApp(t)
  // A key as the service made them before checksums: its hash and a 12-character prefix stored.
  const legacy = 'psk_' + randomBytes(32).toString('base64url')
  const record = await stores.keys.createKey({
    name: 'old partner',
    role: 'customer',
    plan: 'pro',
    perMinute: null,
    perDay: null,
    hash: hashKey(legacy),
    prefix: legacy.slice(0, 12),
    now: clock.now()
  })
  const served = await call({ method: 'GET', url: '/v1/pets', key: legacy })
  assert.equal(served.statusCode, 200)
  assert.equal(served.headers['x-ratelimit-limit'], '300', 'charged to the key\'s pro quota')

  const made = await call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'pro' } })
  assert.equal(made.json().format, 'checksummed')
  const listed = (await call({ method: 'GET', url: '/v1/admin/keys?limit=100' })).json() as Array<{ id: number; format: string; prefix: string }>
  assert.deepEqual(listed.map((k) => [k.id, k.format]), [[1, 'checksummed'], [2, 'checksummed'], [3, 'checksummed'], [record.id, 'legacy'], [made.json().id, 'checksummed']])
  assert.equal((await call({ method: 'GET', url: `/v1/admin/keys/${record.id}` })).json().format, 'legacy')

  // Rotating it gives a checksummed successor; the legacy key works through its grace period.
  const rotated = await call({ method: 'POST', url: `/v1/admin/keys/${record.id}/rotate`, payload: { gracePeriodSeconds: 60 } })
  assert.equal(rotated.statusCode, 201)
  assert.equal(rotated.json().format, 'checksummed')
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key: rotated.json().key })).statusCode, 200)
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key: legacy })).statusCode, 200)
  clock.advance(61_000)
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key: legacy })).json().code, 'api_key_expired')
})
