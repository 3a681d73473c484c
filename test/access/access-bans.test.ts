// The access service when a caller is refused (src/access/access.service.ts): a ban started by a
// key or by an address, counted and recorded with its key id; a ban whose record fails, answered
// all the same and recorded later; and a free operation over the quota, which is served. On a
// real SQLite store and the in-process limiter. Written against the survivors of
// `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { BAN_RETRY_MS, createAccessService, type AccessRequest } from '../../src/access/access.service.ts'
import { subjectOfAddress } from '../../src/access/client-subject.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import type { Quota } from '../../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'

const ADDRESS = '192.0.2.1'
const T = Date.UTC(2026, 10, 21, 12, 0, 30)

async function setup (t: TestContext, options: { promises?: boolean } = {}) {
  const clock = manualClock(T)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const record = stores.keys.recordBan.bind(stores.keys)
  let failure: Error | null = null
  let attempts = 0
  stores.keys.recordBan = async (ban) => {
    attempts++
    if (failure !== null) throw failure
    return await record(ban)
  }
  const memory = createMemoryRateLimiter({ now: clock.now })
  const limiter = options.promises === true
    ? {
        ...memory,
        consume: async (s: string, q: Quota) => await memory.consume(s, q),
        peek: async (s: string, q: Quota) => await memory.peek(s, q)
      }
    : memory
  const decisions: string[] = []
  const bans: unknown[][] = []
  const notRecorded: unknown[][] = []
  const access = createAccessService({
    keys: stores.keys,
    limiter,
    clock,
    onDecision: (d) => decisions.push(d),
    onBan: (...args) => bans.push(args),
    onBanNotRecorded: (...args) => notRecorded.push(args)
  })
  const { key, record: keyRecord } = await createKeyAdmin(stores.keys, clock).create({
    role: 'customer',
    plan: 'enterprise',
    perMinute: 1,
    perDay: 1000
  })
  const request = (k: string | null, more: Partial<AccessRequest> = {}): AccessRequest => ({
    key: k,
    address: ADDRESS,
    role: 'customer',
    free: false,
    preflight: false,
    keyInQuery: null,
    ...more
  })
  /** One allowed request, then 21 refused ones: the last starts a ban. */
  const banBy = async (k: string | null, perMinute: number) => {
    for (let i = 0; i < perMinute; i++) await access.decide(request(k))
    for (let i = 0; i < 20; i++) await access.decide(request(k))
    return await access.decide(request(k))
  }
  return {
    clock,
    stores,
    access,
    key,
    id: keyRecord.id,
    request,
    banBy,
    decisions,
    bans,
    notRecorded,
    attempts: () => attempts,
    failWith: (e: Error | null) => { failure = e }
  }
}

for (const promises of [false, true]) {
  test(`a key that keeps calling after 429 is banned, counted banned, and recorded with its key id (limiter answering ${promises ? 'by promise' : 'at once'})`, async (t) => {
    const { clock, stores, access, key, id, request, banBy, decisions, bans } = await setup(t, { promises })
    const banned = await banBy(key, 1)
    assert.equal(banned.decision.banStarted, true)
    assert.equal((banned.refusal as { code?: string } | null)?.code, 'api_key_banned')
    assert.equal(banned.banNotRecorded, undefined)
    assert.deepEqual(decisions, ['allowed', ...Array(20).fill('limited'), 'banned'])
    const stored = await stores.keys.activeBan(id, clock.now())
    assert.deepEqual(
      stored && [stored.keyId, stored.subject, stored.startedAt, stored.endsAt],
      [id, `key:${id}`, T, T + 15 * 60_000]
    )
    assert.deepEqual(bans, [[`key:${id}`, id, T + 15 * 60_000]])
    const after = await access.decide(request(key))
    assert.equal((after.refusal as { code?: string } | null)?.code, 'api_key_banned')
    assert.equal(decisions.at(-1), 'banned')
  })
}

test('an address that keeps calling without a key is banned and recorded with no key id', async (t) => {
  const { clock, stores, banBy, bans } = await setup(t)
  const banned = await banBy(null, 60)
  assert.equal(banned.decision.banStarted, true)
  assert.equal(banned.subject, subjectOfAddress(ADDRESS))
  const stored = await stores.keys.activeBans(clock.now(), 10)
  assert.deepEqual(stored.map((b) => [b.keyId, b.subject]), [[null, 'ip:192.0.2.1']])
  assert.deepEqual(bans, [['ip:192.0.2.1', null, T + 15 * 60_000]])
})

test('a ban whose record fails is answered all the same, carries the failure, and is recorded by a refused request BAN_RETRY_MS later', async (t) => {
  const { clock, stores, access, key, id, request, banBy, bans, notRecorded, attempts, failWith } = await setup(t)
  const outage = new Error('database is out')
  failWith(outage)
  const banned = await banBy(key, 1)
  assert.equal((banned.refusal as { code?: string } | null)?.code, 'api_key_banned')
  assert.equal(banned.banNotRecorded, outage)
  assert.deepEqual(notRecorded, [[`key:${id}`, T + 15 * 60_000, outage]])
  assert.equal(attempts(), 1)
  failWith(null)
  clock.advance(BAN_RETRY_MS - 1)
  await access.decide(request(key))
  assert.equal(attempts(), 1, 'not due yet')
  clock.advance(1)
  const refused = access.decide(request(key))
  assert.ok(!(refused instanceof Promise), 'the retry does not hold the answer')
  assert.equal(attempts(), 2, 'due: the refused request started the retry')
  assert.equal(await access.retryPendingBans(), 0)
  assert.notEqual(await stores.keys.activeBan(id, clock.now()), null)
  assert.deepEqual(bans, [[`key:${id}`, id, T + 15 * 60_000]])
})

test('retryPendingBans records what is pending and says how many are left', async (t) => {
  const { clock, stores, access, key, id, banBy, failWith } = await setup(t)
  failWith(new Error('database is out'))
  await banBy(key, 1)
  assert.equal(await access.retryPendingBans(), 1)
  failWith(null)
  assert.equal(await access.retryPendingBans(), 0)
  assert.notEqual(await stores.keys.activeBan(id, clock.now()), null)
})

test('a free operation is served to a key over its quota, uncharged and uncounted; a charged one is refused', async (t) => {
  const { access, key, request, decisions } = await setup(t)
  await access.decide(request(key))
  const free = await access.decide(request(key, { free: true }))
  assert.equal(free.charged, false)
  assert.equal(free.decision.allowed, false, 'the windows say no')
  assert.equal(free.refusal, null, 'but it costs nothing, so it is served')
  assert.deepEqual(decisions, ['allowed'])
  const charged = await access.decide(request(key))
  assert.equal((charged.refusal as { code?: string } | null)?.code, 'rate_limited')
})
