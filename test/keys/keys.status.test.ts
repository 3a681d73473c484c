// A key's status (src/accounts/keys.status.ts, docs/product.md rule 10.2): the first that applies of
// revoked, rotated, expired, banned, expiring, active, each at its boundary instant; and the key
// list's status filter, which the SQL of the store applies (storage/key-filters.ts), agreeing with
// it key by key. Faults caught: a rule out of order, a boundary off by one millisecond, and the SQL
// and the function drifting apart (the console shows one, filters by the other).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EXPIRING_WITHIN_MS, KEY_STATUSES, keyStatus, type KeyStatus } from '../../src/accounts/keys.status.ts'
import { openTestStores } from '../helpers/stores.ts'

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0)
const live = { revokedAt: null, replacedBy: null, expiresAt: null }

test('keyStatus: the first rule that applies wins, in the order revoked, rotated, expired, banned, expiring, active', () => {
  const banned = { endsAt: NOW + 1 }
  const everything = { revokedAt: NOW - 1, replacedBy: 2, expiresAt: NOW - 1 }
  assert.equal(keyStatus(everything, banned, NOW), 'revoked')
  assert.equal(keyStatus({ ...everything, revokedAt: null }, banned, NOW), 'rotated')
  assert.equal(keyStatus({ ...everything, revokedAt: null, replacedBy: null }, banned, NOW), 'expired')
  assert.equal(keyStatus({ ...live, expiresAt: NOW + 1 }, banned, NOW), 'banned', 'banned before expiring')
  assert.equal(keyStatus({ ...live, expiresAt: NOW + 1 }, null, NOW), 'expiring')
  assert.equal(keyStatus(live, null, NOW), 'active')
  assert.equal(keyStatus({ ...live, replacedBy: 2, expiresAt: NOW + 1000 }, null, NOW), 'rotated', 'rotated during its grace period too')
})

test('keyStatus boundaries: expired from expiresAt on; banned until the ban\'s end (exclusive); expiring within 7 days (inclusive)', () => {
  assert.equal(EXPIRING_WITHIN_MS, 7 * 86_400_000)
  assert.equal(keyStatus({ ...live, expiresAt: NOW }, null, NOW), 'expired')
  assert.equal(keyStatus({ ...live, expiresAt: NOW + 1 }, null, NOW), 'expiring')
  assert.equal(keyStatus(live, { endsAt: NOW }, NOW), 'active', 'a ban ending now is over')
  assert.equal(keyStatus(live, { endsAt: NOW + 1 }, NOW), 'banned')
  assert.equal(keyStatus({ ...live, expiresAt: NOW + EXPIRING_WITHIN_MS }, null, NOW), 'expiring')
  assert.equal(keyStatus({ ...live, expiresAt: NOW + EXPIRING_WITHIN_MS + 1 }, null, NOW), 'active')
})

test('the key list\'s status filter (the store\'s SQL) puts each key where keyStatus does, at the boundaries too', async (t) => {
  const stores = await openTestStores(t)
  const keys = stores.keys
  let n = 0
  const make = (expiresAt: number | null = null) => keys.createKey({
    name: null, role: 'customer', plan: 'free', perMinute: null, perDay: null,
    hash: `h${n}`, prefix: `psk_status${n++}`, now: NOW - 10_000, expiresAt
  })
  const revoked = await make(NOW - 1)
  await keys.revokeKey(revoked.id, NOW - 5000, null)
  const rotated = await make()
  await keys.rotateKey(rotated.id, { hash: 'h-rot', prefix: 'psk_rotated0', now: NOW - 5000, graceEndsAt: NOW + 1000 })
  await make(NOW) // expired at this instant
  const bannedKey = await make(NOW + 1)
  await keys.recordBan({
    keyId: bannedKey.id,
    subject: `key:${bannedKey.quotaKeyId}`,
    startedAt: NOW - 1000,
    endsAt: NOW + 1,
    reason: 'test'
  })
  const banOver = await make()
  await keys.recordBan({ keyId: banOver.id, subject: `key:${banOver.quotaKeyId}`, startedAt: NOW - 1000, endsAt: NOW, reason: 'test' })
  await make(NOW + EXPIRING_WITHIN_MS)
  await make(NOW + EXPIRING_WITHIN_MS + 1)
  await make()
  // Active: the ban that ended, the key expiring in 7 days and 1 ms, the plain key, and the rotated key's successor.

  const all = await keys.listKeys({ afterId: null, limit: 100 })
  const expected = new Map<KeyStatus, number[]>(KEY_STATUSES.map((s) => [s, []]))
  for (const record of all) expected.get(keyStatus(record, await keys.activeBan(record.id, NOW), NOW))!.push(record.id)
  for (const status of KEY_STATUSES) {
    const filtered = await keys.listKeys({ afterId: null, limit: 100 }, { status, now: NOW })
    assert.deepEqual(filtered.map((r) => r.id), expected.get(status), status)
  }
  assert.deepEqual(
    Object.fromEntries([...expected].map(([s, ids]) => [s, ids.length])),
    { active: 4, expiring: 1, expired: 1, revoked: 1, rotated: 1, banned: 1 }
  )
})
