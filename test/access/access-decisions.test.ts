// The access service's decisions on their own (src/access/access.service.ts): what a request is
// charged to, when it is charged at all, when the key is read, and what is refused. Written
// against the survivors of `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { createAccessService, type AccessRequest } from '../../src/access/access.service.ts'
import { subjectOfAddress } from '../../src/access/client-subject.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import type { Quota } from '../../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { countKeyReads, unknownKey } from './key-reads.ts'

const ADDRESS = '192.0.2.1'

async function setup (t: TestContext) {
  const clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 30))
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const { reads, failWith } = countKeyReads(stores.keys)
  const decisions: string[] = []
  const access = createAccessService({
    keys: stores.keys,
    limiter: createMemoryRateLimiter({ now: clock.now }),
    clock,
    onDecision: (d) => decisions.push(d)
  })
  const admin = createKeyAdmin(stores.keys, clock)
  const make = async (role: 'customer' | 'admin' = 'customer') => await admin.create({ role, plan: 'pro' })
  const request = (key: string | null, more: Partial<AccessRequest> = {}): AccessRequest => ({
    key,
    address: ADDRESS,
    role: 'customer',
    free: false,
    preflight: false,
    keyInQuery: null,
    ...more
  })
  return { access, admin, clock, make, request, decisions, reads, failWith }
}

test('a preflight never reads its key, is not charged, and is answered for the client address', async (t) => {
  const { access, make, request, reads, decisions } = await setup(t)
  const { key } = await make()
  const outcome = await access.decide(request(key, { preflight: true }))
  assert.equal(reads(), 0)
  assert.equal(outcome.charged, false)
  assert.equal(outcome.principal, null)
  assert.equal(outcome.subject, subjectOfAddress(ADDRESS))
  assert.equal(outcome.refusal, null)
  assert.equal(outcome.decision.minute.remaining, 60, 'the address window is untouched')
  assert.deepEqual(decisions, [], 'an uncharged request is not counted')
})

test('a free operation costs a valid key nothing, and a wrong key is charged to the address', async (t) => {
  const { access, make, request, decisions } = await setup(t)
  const { key } = await make()
  await access.decide(request(key))
  const free = await access.decide(request(key, { free: true }))
  assert.equal(free.charged, false)
  assert.equal(free.refusal, null)
  assert.equal(free.decision.minute.remaining, 299, 'only the first request was charged')
  const wrong = await access.decide(request(unknownKey('z'), { free: true }))
  assert.equal(wrong.charged, true)
  assert.equal(wrong.subject, subjectOfAddress(ADDRESS))
  assert.equal(wrong.decision.minute.remaining, 59)
  assert.equal((wrong.refusal as { code?: string } | null)?.code, 'unauthenticated')
  assert.deepEqual(decisions, ['allowed', 'allowed'])
})

test('a valid key is charged to its caller with its plan quota', async (t) => {
  const { access, make, request } = await setup(t)
  const created = await make()
  const outcome = await access.decide(request(created.key))
  assert.equal(outcome.charged, true)
  assert.equal(outcome.principal?.keyId, created.record.id)
  assert.equal(outcome.subject, `key:${created.record.id}`)
  assert.deepEqual(outcome.quota, { perMinute: 300, perDay: 10_000 })
})

test('an exhausted address gets its 429 for the address without a database read, but for one lookup a second, which serves a valid key', async (t) => {
  const { access, clock, make, request, reads, decisions } = await setup(t)
  const { key } = await make()
  for (let i = 0; i < 60; i++) await access.decide(request(null))
  const wrong = await access.decide(request(unknownKey('w')))
  assert.equal(reads(), 1, 'the lookup of this second')
  assert.equal((wrong.refusal as { code?: string } | null)?.code, 'rate_limited')
  const outcome = await access.decide(request(key))
  assert.equal(reads(), 1, 'no second lookup in the same second')
  assert.equal(outcome.charged, true)
  assert.equal(outcome.principal, null)
  assert.equal(outcome.subject, subjectOfAddress(ADDRESS))
  assert.equal((outcome.refusal as { code?: string } | null)?.code, 'rate_limited')
  assert.equal(decisions.at(-1), 'limited')
  assert.equal(decisions.filter((d) => d === 'allowed').length, 60)
  clock.advance(999)
  assert.equal((await access.decide(request(key))).principal, null, 'not yet')
  clock.advance(1)
  const served = await access.decide(request(key))
  assert.equal(reads(), 2)
  assert.equal(served.refusal, null)
  assert.equal(served.subject, served.principal?.caller.subject)
})

test('a key that cannot be read is charged to the address and refused with the store\'s failure', async (t) => {
  const { access, make, request, failWith, reads } = await setup(t)
  const { key } = await make()
  const outage = new Error('database is out')
  failWith(outage)
  const outcome = await access.decide(request(key))
  assert.equal(reads(), 1)
  assert.equal(outcome.refusal, outage)
  assert.equal(outcome.charged, true)
  assert.equal(outcome.subject, subjectOfAddress(ADDRESS))
  assert.equal(outcome.decision.minute.remaining, 59)
  failWith(null)
  const later = await access.decide(request(key))
  assert.equal(later.refusal, null, 'the failure is not cached as a refusal')
  assert.equal(reads(), 2)
})

test('a key in the query is refused with validation_failed after the request is charged', async (t) => {
  const { access, make, request } = await setup(t)
  const { key } = await make()
  const outcome = await access.decide(request(key, { keyInQuery: 'api_key' }))
  assert.equal(outcome.charged, true)
  assert.equal(outcome.decision.minute.remaining, 299)
  assert.equal((outcome.refusal as { code?: string } | null)?.code, 'validation_failed')
})

test('a role below the operation\'s is refused with forbidden, and an unknown key with unauthenticated', async (t) => {
  const { access, make, request } = await setup(t)
  const { key } = await make()
  const forbidden = await access.decide(request(key, { role: 'admin' }))
  assert.equal((forbidden.refusal as { code?: string } | null)?.code, 'forbidden')
  const unknown = await access.decide(request(unknownKey('y')))
  assert.equal((unknown.refusal as { code?: string } | null)?.code, 'unauthenticated')
})

test('forgetKey makes the next request read the key again, so a revocation takes effect', async (t) => {
  const { access, admin, make, request, reads } = await setup(t)
  const created = await make()
  await access.decide(request(created.key))
  assert.equal((access.decide(request(created.key)) as { refusal: unknown }).refusal, null, 'cached')
  await admin.revoke(created.record.id, null)
  access.forgetKey(created.record.id)
  const outcome = await access.decide(request(created.key))
  assert.equal(reads(), 2)
  assert.equal((outcome.refusal as { code?: string } | null)?.code, 'unauthenticated')
})

test('with a limiter that answers by promise (Redis), decisions and the address gate are awaited', async (t) => {
  const clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 30))
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const memory = createMemoryRateLimiter({ now: clock.now })
  const limiter = {
    ...memory,
    consume: async (s: string, q: Quota) => await memory.consume(s, q),
    peek: async (s: string, q: Quota) => await memory.peek(s, q)
  }
  const access = createAccessService({ keys: stores.keys, limiter, clock })
  const { key } = await createKeyAdmin(stores.keys, clock).create({ role: 'customer', plan: 'pro' })
  const request = (k: string | null): AccessRequest => ({
    key: k,
    address: ADDRESS,
    role: 'customer',
    free: false,
    preflight: false,
    keyInQuery: null
  })
  const first = await access.decide(request(key))
  assert.equal(first.decision.allowed, true)
  assert.equal(first.decision.minute.remaining, 299)
  assert.equal(first.refusal, null)
  for (let i = 0; i < 60; i++) await access.decide(request(null))
  const gated = await access.decide(request(unknownKey('x')))
  assert.equal((gated.refusal as { code?: string } | null)?.code, 'rate_limited')
})
