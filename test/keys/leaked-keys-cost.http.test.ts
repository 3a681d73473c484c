// What a leaked-key report costs (issue 48 finding 6; docs/product.md 3.7): its keys are looked up
// in one query, and each key sent is charged to the reporter's address, 100 a minute and 1,000 a
// day; a report past that is 429 rate_limited before any read, and revokes nothing. Faults caught:
// one lookup per key (20 reports of 100 keys once made 2,000 lookups, and raised another caller's
// p50 fivefold); a report charged as one request whatever it carries; a refused report that still
// reads or revokes; a charge taken from the address's requests instead of its reported keys.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { keyChecksum } from '../../src/accounts/keys.rules.ts'
import { ANONYMOUS_QUOTA } from '../../src/access/principal.ts'
import { REPORTED_KEYS_QUOTA, reportedKeysSubject } from '../../src/access/reported-keys.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
/** A key of the right shape and checksum that no one was ever given. */
function unknownKey (): string {
  const random = [...randomBytes(43)].map((b) => BASE62[b % 62]).join('')
  return `psk_${random}${keyChecksum(random)}`
}

/** Counts the store's key lookups: one by hash, and by a list of hashes (with the list's length). */
function countLookups (h: TestApp): { single: () => number; batches: () => number[] } {
  let single = 0
  const batches: number[] = []
  const one = h.stores.keys.findKeyByHash.bind(h.stores.keys)
  const many = h.stores.keys.findKeysByHashes.bind(h.stores.keys)
  h.stores.keys.findKeyByHash = async (hash) => { single++; return await one(hash) }
  h.stores.keys.findKeysByHashes = async (hashes) => { batches.push(hashes.length); return await many(hashes) }
  return { single: () => single, batches: () => [...batches] }
}

const report = (h: TestApp, keys: string[], remoteAddress: string) =>
  h.app.inject({ method: 'POST', url: '/v1/keys/leaked', remoteAddress, payload: { keys } })

test('a report of 100 keys makes one lookup and is charged 100 to its address; the next one is 429 rate_limited, reads nothing and revokes nothing', async (t) => {
  const h = await buildTestApp(t)
  const [leaked, partner, spared] = [await h.makeKey('customer', 'pro'), await h.makeKey('staff', 'pro'), await h.makeKey('customer')]
  const lookups = countLookups(h)
  const address = '203.0.113.40'
  const left = async () => {
    const room = await h.limiter.peek(reportedKeysSubject(address), REPORTED_KEYS_QUOTA)
    return [room.minute.remaining, room.day.remaining]
  }

  // Two valid keys, garbage and unknown keys: 100 in all.
  const keys = [leaked.key, partner.key, 'not a key', ...Array.from({ length: 97 }, unknownKey)]
  const res = await report(h, keys, address)
  assert.equal(res.statusCode, 202, res.body)
  assert.deepEqual(lookups.batches(), [99], 'one query, for the 99 keys of a valid format')
  assert.equal(lookups.single(), 0)
  assert.deepEqual(await left(), [0, 900], 'charged 100')
  assert.equal(res.headers['x-ratelimit-remaining'], String(ANONYMOUS_QUOTA.perMinute - 1), 'and one request to the address, as before')
  for (const key of [leaked.key, partner.key]) {
    assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).json().code, 'unauthenticated')
  }

  const refused = await report(h, [spared.key], address)
  assert.equal(refused.statusCode, 429)
  assert.deepEqual(refused.json(), {
    code: 'rate_limited',
    status: 429,
    message: 'a client address may report 100 keys a minute and 1000 a day; this report of 1 does not fit in what is left: retry in 30 s',
    requestId: refused.headers['request-id']
  })
  assert.equal(refused.headers['retry-after'], '30', 'the minute ends in 30 s')
  assert.equal(refused.headers['x-ratelimit-remaining'], String(ANONYMOUS_QUOTA.perMinute - 2), 'the request is charged like any')
  assert.deepEqual(lookups.batches(), [99], 'no lookup')
  assert.deepEqual(await left(), [0, 900], 'nothing more charged')
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: spared.key })).statusCode, 200, 'nothing revoked')

  // Another address reports the same key: its own allowance.
  assert.equal((await report(h, [spared.key], '203.0.113.41')).statusCode, 202)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: spared.key })).statusCode, 401)
  // The next minute the first address may report again.
  h.clock.advance(30_000)
  assert.equal((await report(h, [unknownKey()], address)).statusCode, 202)
  assert.deepEqual(await left(), [99, 899])
})
