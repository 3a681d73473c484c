// POST /v1/keys/leaked (issue 32; docs/product.md, leaked keys): anyone who finds keys exposed
// reports them without a key; each valid one is revoked with its rotation pair, on both engines,
// and key.revoked says `reason: "leaked"`. The answer is one and the same whatever was sent: it is
// no oracle. Faults caught: a report that revokes nothing, or only one key of a rotation pair (or
// the partner without its own event and audit entry); an answer that differs for a valid key (an
// oracle); a report that needs a key, or is not charged to the address; more than 100 keys
// accepted; the reported keys written to the log.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { keyChecksum } from '../../src/accounts/keys.rules.ts'
import { ANONYMOUS_QUOTA } from '../../src/access/principal.ts'
import { loadConfig } from '../../src/config.ts'
import { ServiceUnavailableError } from '../../src/errors.ts'
import { createLogger } from '../../src/server.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { pollUntil } from '../helpers/server.ts'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const randomBase62 = (n: number): string => [...randomBytes(n)].map((b) => BASE62[b % 62]).join('')
/** A key of the right shape and checksum that no one was ever given. */
const unknownKey = (): string => { const r = randomBase62(43); return `psk_${r}${keyChecksum(r)}` }
const wrongChecksum = (): string => { const r = randomBase62(43); return `psk_${r}${keyChecksum(r) === '000000' ? '000001' : '000000'}` }

/** The report, sent without any key. */
const report = (h: TestApp, keys: unknown[], remoteAddress = '203.0.113.9') =>
  h.app.inject({ method: 'POST', url: '/v1/keys/leaked', remoteAddress, payload: { keys } })

test('a leaked key reported without a key: it and its rotation pair answer 401, key.revoked says reason leaked, and the answer is 202', async (t) => {
  const h = await buildTestApp(t)
  const { call } = h
  const made = await call({ method: 'POST', url: '/v1/admin/keys', payload: { name: 'Partner', role: 'customer', plan: 'pro' } })
  const old = made.json() as { id: number; key: string }
  const rotated = await call({ method: 'POST', url: `/v1/admin/keys/${old.id}/rotate`, payload: { gracePeriodSeconds: 3600 } })
  const successor = rotated.json() as { id: number; key: string }
  const bystander = await h.makeKey('customer', 'pro')
  for (const key of [old.key, successor.key, bystander.key]) {
    assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  }

  const res = await report(h, [old.key, 'garbage'])
  assert.equal(res.statusCode, 202, res.body)
  assert.deepEqual(res.json(), { status: 'accepted', message: 'Every valid key among those sent is revoked, with the keys of its rotation; this answer is the same whether any key was valid or not.' })

  // Both keys of the pair stop at once on this instance; the bystander goes on.
  for (const key of [old.key, successor.key]) {
    const refused = await call({ method: 'GET', url: '/v1/pets', key })
    assert.equal(refused.statusCode, 401)
    assert.equal(refused.json().code, 'unauthenticated')
  }
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key: bystander.key })).statusCode, 200)
  for (const id of [old.id, successor.id]) assert.notEqual((await h.stores.keys.getKey(id))!.revokedAt, null, `key ${id} revoked in the database`)

  // On PostgreSQL the feed shows an event once every older transaction of the cluster has ended
  // (docs/product.md, the feed): another test's running transaction can hold it back a moment.
  const revokedEvents = async (count: number) => (await pollUntil(async () => {
    const list = (await call({ method: 'GET', url: '/v1/events?type=key.revoked&limit=100' })).json() as Array<{
      type: string
      data: { id: number; reason?: string; revokedAt: string | null }
    }>
    return list.length >= count ? list : undefined
  }, { timeoutMs: 10_000, intervalMs: 20, message: `${count} key.revoked events in the feed` })).value
  const events = await revokedEvents(2)
  // One event per key revoked: the key reported and its rotation partner, each saying why.
  assert.deepEqual(events.map((e) => [e.type, e.data.id, e.data.reason]).sort(), [['key.revoked', old.id, 'leaked'], ['key.revoked', successor.id, 'leaked']])
  for (const event of events) assert.notEqual(event.data.revokedAt, null)

  // The audit log (storage's event append) names the reporter by its address, not a key, for both keys.
  const audit = (await call({ method: 'GET', url: '/v1/admin/audit?action=key.revoke&limit=100' })).json() as Array<{
    actor: { type: string }
    target: { id: string }
    address: string | null
  }>
  assert.deepEqual(
    audit.map((e) => [e.actor.type, e.target.id, e.address]).sort(),
    [['address', String(old.id), '203.0.113.9'], ['address', String(successor.id), '203.0.113.9']]
  )

  // An admin's revocation says requested.
  assert.equal((await call({ method: 'DELETE', url: `/v1/admin/keys/${bystander.id}` })).statusCode, 204)
  const after = await revokedEvents(3)
  assert.deepEqual(after.map((e) => [e.data.id, e.data.reason]), [[old.id, 'leaked'], [successor.id, 'leaked'], [bystander.id, 'requested']])
})

test('the answer is byte for byte the same for a valid key, an unknown one, a wrong checksum, garbage, a revoked key and a repeat', async (t) => {
  const h = await buildTestApp(t)
  const valid = await h.makeKey('customer', 'pro')
  const legacyShaped = 'psk_' + randomBytes(32).toString('base64url')
  const sets: unknown[][] = [
    [valid.key],
    [unknownKey()],
    [wrongChecksum()],
    ['not a key at all'],
    [legacyShaped],
    [valid.key],
    [valid.key, valid.key, unknownKey(), 'x']
  ]
  const answers = []
  // Each from an address of its own: the rate-limit headers are then the same too.
  for (const [i, keys] of sets.entries()) answers.push(await report(h, keys, `203.0.113.${i + 1}`))
  for (const res of answers) {
    assert.equal(res.statusCode, 202)
    assert.equal(res.body, answers[0]!.body)
    const { 'request-id': _a, date: _b, ...headers } = res.headers
    const { 'request-id': _c, date: _d, ...first } = answers[0]!.headers
    assert.deepEqual(headers, first)
  }
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: valid.key })).statusCode, 401, 'the valid key was revoked by the first report')
})

test('the report needs no key and is charged to the client address, a wrong key with it too, up to the address\'s quota', async (t) => {
  const h = await buildTestApp(t)
  for (let i = 0; i < 3; i++) {
    const res = await report(h, [unknownKey()])
    assert.equal(res.statusCode, 202)
    assert.equal(res.headers['x-ratelimit-limit'], String(ANONYMOUS_QUOTA.perMinute))
    assert.equal(res.headers['x-ratelimit-remaining'], String(ANONYMOUS_QUOTA.perMinute - 1 - i))
  }
  // A wrong key with it changes nothing: it is still a request without a valid key, never a 401.
  const withWrongKey = await h.app.inject({
    method: 'POST',
    url: '/v1/keys/leaked',
    remoteAddress: '203.0.113.9',
    headers: { 'x-api-key': wrongChecksum() },
    payload: { keys: ['x'] }
  })
  assert.equal(withWrongKey.statusCode, 202)
  assert.equal(withWrongKey.headers['x-ratelimit-remaining'], String(ANONYMOUS_QUOTA.perMinute - 4))
  // The address's quota binds it like any anonymous request.
  for (let i = 4; i < ANONYMOUS_QUOTA.perMinute; i++) assert.equal((await report(h, ['x'])).statusCode, 202)
  const limited = await report(h, ['x'])
  assert.equal(limited.statusCode, 429)
  assert.equal(limited.json().code, 'rate_limited')
})

test('101 keys, none, or a key longer than 200 characters is 400 validation_failed, and revokes nothing', async (t) => {
  const h = await buildTestApp(t)
  const valid = await h.makeKey('customer', 'pro')
  const many = [valid.key, ...Array.from({ length: 100 }, unknownKey)]
  for (const keys of [many, [], [valid.key, 'x'.repeat(201)]]) {
    const res = await report(h, keys)
    assert.equal(res.statusCode, 400)
    assert.equal(res.json().code, 'validation_failed')
  }
  assert.equal((await report(h, many.slice(1))).statusCode, 202, '100 keys are taken')
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: valid.key })).statusCode, 200, 'a refused report revoked nothing')
})

test('the reported keys are in no log line, and a database failure is 503 with the error object', async (t) => {
  const chunks: string[] = []
  const logger = createLogger(loadConfig({ LOG_LEVEL: 'info' }), { write: (chunk: string) => { chunks.push(chunk) } })
  const h = await buildTestApp(t, { deps: { logger } })
  const valid = await h.makeKey('customer', 'pro')
  const unknown = unknownKey()
  assert.equal((await h.call({ method: 'POST', url: '/v1/keys/leaked', key: null, payload: { keys: [valid.key, unknown] } })).statusCode, 202)
  h.stores.keys.findKeysByHashes = async () => { throw new ServiceUnavailableError('the database is unreachable') }
  const failed = await h.call({ method: 'POST', url: '/v1/keys/leaked', key: null, payload: { keys: [unknown] } })
  assert.equal(failed.statusCode, 503)
  assert.equal(failed.json().code, 'service_unavailable')
  const log = chunks.join('')
  assert.match(log, /keys\/leaked/, 'the requests were logged')
  for (const key of [valid.key, unknown]) assert.ok(!log.includes(key.slice(4, 16)), 'no reported key in the log')
})
