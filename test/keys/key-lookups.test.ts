// The keys port's lookups for a leaked-key report and for legacy keys (issue 48 findings 6 and 7),
// on the test's engine (SQLite, or PostgreSQL with PETSTORE_TEST_ENGINE=postgres). Faults caught:
// a batch lookup that misses a key, finds one whose hash was not asked, or leaves out a revoked
// key (the caller decides); legacy prefixes that include a revoked or checksummed key's, or leave
// out an expired legacy key (still answered api_key_expired, so it must be read).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { openTestStores } from '../helpers/stores.ts'

test('findKeysByHashes finds every key asked, revoked ones included, in one call; legacyKeyPrefixes lists the legacy keys not revoked', async (t) => {
  const { keys } = await openTestStores(t)
  const make = (hash: string, prefix: string, expiresAt: number | null = null) => keys.createKey({
    name: null, role: 'customer', plan: 'free', perMinute: null, perDay: null, hash, prefix, now: 1000, expiresAt
  })
  const a = await make('hash-a', 'psk_AAAAAAAAAAAA')
  const b = await make('hash-b', 'psk_BBBBBBBB')
  const c = await make('hash-c', 'psk_CCCCCCCC', 2000)
  const d = await make('hash-d', 'psk_DDDDDDDD')
  const revoked = await keys.revokeKey(d.id, 1500, null)

  const found = await keys.findKeysByHashes(['hash-b', 'hash-x', 'hash-a', 'hash-d', 'hash-a'])
  assert.deepEqual(found.sort((x, y) => x.id - y.id), [a, b, revoked])
  assert.deepEqual(await keys.findKeysByHashes([]), [])
  assert.deepEqual(await keys.findKeysByHashes(['nothing']), [])
  const many = await keys.findKeysByHashes([...Array.from({ length: 99 }, (_, i) => `unknown-${i}`), 'hash-c'])
  assert.deepEqual(many, [c])

  // Legacy prefixes are 12 characters long (accounts/keys.rules.ts); the expired one is kept.
  assert.deepEqual((await keys.legacyKeyPrefixes()).sort(), ['psk_BBBBBBBB', 'psk_CCCCCCCC'])
})
