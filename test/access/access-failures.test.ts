// The access service when a part it leans on fails outright (src/access/access.service.ts): a
// key store that throws instead of rejecting, an address gate (the limiter's peek) that throws
// or rejects. The request is still charged, and answered, never left hanging. On a real SQLite
// store and the in-process limiter, wrapped only to fail. Written against the survivors of
// `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { createAccessService, type AccessRequest } from '../../src/access/access.service.ts'
import { subjectOfAddress } from '../../src/access/client-subject.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import type { Decision, Quota, RateLimiter } from '../../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'

const ADDRESS = '192.0.2.1'

async function setup (t: TestContext, peek?: (memory: RateLimiter) => RateLimiter['peek']) {
  const clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 30))
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const memory = createMemoryRateLimiter({ now: clock.now })
  const limiter: RateLimiter = peek === undefined ? memory : { ...memory, peek: peek(memory) }
  const access = createAccessService({ keys: stores.keys, limiter, clock })
  const { key, record } = await createKeyAdmin(stores.keys, clock).create({ role: 'customer', plan: 'pro' })
  const request = (k: string | null): AccessRequest => ({
    key: k,
    address: ADDRESS,
    role: 'customer',
    free: false,
    preflight: false,
    keyInQuery: null
  })
  return { stores, access, key, id: record.id, request, memory }
}

test('a key store that throws instead of rejecting: the request is charged to the address and refused with that error', async (t) => {
  const { stores, access, key, request } = await setup(t)
  const bug = new Error('store bug')
  stores.keys.findKeyByHash = () => { throw bug }
  const outcome = access.decide(request(key))
  assert.ok(outcome instanceof Promise)
  const settled = await outcome
  assert.equal(settled.refusal, bug)
  assert.equal(settled.charged, true)
  assert.equal(settled.subject, subjectOfAddress(ADDRESS))
  assert.equal(settled.decision.minute.remaining, 59)
})

test('an address gate that throws does not stop the key from being read: the request is served for the key', async (t) => {
  const { access, key, id, request } = await setup(t, () => () => { throw new Error('limiter bug') })
  const outcome = await access.decide(request(key))
  assert.equal(outcome.refusal, null)
  assert.equal(outcome.principal?.keyId, id)
  assert.equal(outcome.subject, `key:${id}`)
})

test('an address gate that rejects does not stop the key from being read either', async (t) => {
  const { access, key, id, request } = await setup(t, () => async () => { throw new Error('Redis is out') })
  const outcome = await access.decide(request(key))
  assert.equal(outcome.refusal, null)
  assert.equal(outcome.principal?.keyId, id)
})

test('an address gate that answers by promise lets an allowed address read its key', async (t) => {
  const { access, key, id, request } = await setup(
    t,
    (memory) => async (s: string, q: Quota): Promise<Decision> => await memory.peek(s, q)
  )
  const outcome = await access.decide(request(key))
  assert.equal(outcome.refusal, null)
  assert.equal(outcome.principal?.keyId, id)
  assert.equal(outcome.decision.minute.remaining, 299)
})
