// The free reads are bounded (issue 48 finding 5; docs/product.md 4.8 and 9.11): a banned key
// is served GET /keys/me, /keys/me/bans and /rate_limit without charge up to 30 a minute (its
// client address up to 120), then answered 429 api_key_banned, which moves neither the ban's end
// nor its level. Faults caught: free reads without a bound (a banned key once read its own record
// 28,862 times in 8 s, each a database read); a bound that escalates or extends the ban; one
// key's reads spending another key's allowance; an allowance that never comes back; a key in good
// standing counted against it.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { FREE_READS_PER_ADDRESS, FREE_READS_PER_KEY } from '../../src/access/free-reads.ts'
import { PLAN_QUOTAS } from '../../src/accounts/plans.ts'
import type { KeyStore } from '../../src/accounts/keys.store.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

const MINUTE = 60_000
const READS = ['/v1/keys/me', '/v1/keys/me/bans', '/v1/rate_limit'] as const

async function freeKey (h: TestApp): Promise<{ id: number; key: string }> {
  const res = await h.call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'free' } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

/** Drives a free key (60 a minute) into a ban: 60 allowed, 20 refused, the 21st refusal bans it. */
async function ban (h: TestApp, key: string): Promise<void> {
  for (let i = 0; i < 60; i++) assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  const codes: string[] = []
  for (let i = 0; i < 21; i++) codes.push((await h.call({ method: 'GET', url: '/v1/pets', key })).json().code)
  assert.deepEqual(codes, [...Array(20).fill('rate_limited'), 'api_key_banned'])
}

/** Counts the database reads of the key holder's views (getKey, activeBan, banHistory). */
function countViewReads (keys: KeyStore): () => number {
  let reads = 0
  for (const name of ['getKey', 'activeBan', 'banHistory'] as const) {
    const original = (keys[name] as (...args: unknown[]) => Promise<unknown>).bind(keys)
    const counted = async (...args: unknown[]): Promise<unknown> => { reads++; return await original(...args) }
    Object.assign(keys, { [name]: counted })
  }
  return () => reads
}

test('a banned key\'s own reads are free up to 30 a minute, then 429 api_key_banned with no database read; the ban\'s end and level do not move; another key is served', async (t) => {
  const h = await buildTestApp(t)
  const { id, key } = await freeKey(h)
  await ban(h, key)
  h.clock.advance(2 * MINUTE)
  const banState = async () => {
    const limiter = await h.limiter.peek(`key:${id}`, PLAN_QUOTAS.free)
    const history = await h.stores.keys.banHistory(id, 50)
    const recorded = history.map((b) => [b.startedAt, b.endsAt])
    return { until: limiter.ban?.until, level: limiter.ban?.level, recorded }
  }
  const before = await banState()
  assert.deepEqual(before, { until: T0 + 15 * MINUTE, level: 1, recorded: [[T0, T0 + 15 * MINUTE]] })

  const reads = countViewReads(h.stores.keys)
  for (let i = 0; i < FREE_READS_PER_KEY; i++) {
    const url = READS[i % READS.length]!
    const res = await h.call({ method: 'GET', url, key })
    assert.equal(res.statusCode, 200, `${url}, read ${i + 1}: ${res.body}`)
  }
  const served = reads()
  assert.ok(served >= FREE_READS_PER_KEY / 3 * 2, 'the views read the database')

  for (let i = 0; i < 3 * READS.length; i++) {
    const url = READS[i % READS.length]!
    const res = await h.call({ method: 'GET', url, key })
    assert.equal(res.statusCode, 429, `${url} past the allowance`)
    assert.equal(res.json().code, 'api_key_banned')
    assert.match(res.json().message, /its own reads \(GET \/keys\/me, \/keys\/me\/bans, \/keys\/me\/requests and \/rate_limit\) are served free up to 30 a minute per key and 120 per client address, and this minute's are spent; the ban's end is unchanged$/)
    assert.equal(res.headers['retry-after'], String(13 * 60), 'Retry-After: until the ban ends, as before')
  }
  assert.equal(reads(), served, 'a refused read costs no database read')
  assert.deepEqual(await banState(), before, 'the ban neither extended nor escalated')

  // Another key, behind the same address, has an allowance of its own.
  const other = await freeKey(h)
  await ban(h, other.key)
  assert.equal((await h.call({ method: 'GET', url: '/v1/keys/me', key: other.key })).statusCode, 200)

  // The next minute, the banned key's reads are served again.
  h.clock.advance(MINUTE)
  assert.equal((await h.call({ method: 'GET', url: '/v1/keys/me', key })).statusCode, 200)
  assert.deepEqual(await banState(), before)
})

test('an unbanned key\'s GET /rate_limit stays free; a client address has 120 free reads a minute for all its banned keys', async (t) => {
  const h = await buildTestApp(t)
  const status = (key: string, remoteAddress: string) =>
    h.call({ method: 'GET', url: '/v1/rate_limit', key, remoteAddress })
  // A key in good standing asks as often as it likes: a peek of the limiter, no database read.
  const fine = await h.makeKey('customer', 'pro')
  for (let i = 0; i < 2 * FREE_READS_PER_KEY; i++) {
    const res = await status(fine.key, '198.51.100.1')
    assert.equal(res.statusCode, 200)
    assert.equal(res.json().windows.minute.remaining, PLAN_QUOTAS.pro.perMinute)
  }

  // Five banned keys behind one address: four spend its 120 free reads, the fifth is refused there.
  // Each a key of 1 request a minute, banned by its 22nd request (1 served, 20 refused, then the ban).
  const banned = []
  for (let i = 0; i < 5; i++) {
    const made = await h.makeKey('customer', 'enterprise', { perMinute: 1, perDay: 1000 })
    const codes: string[] = []
    for (let r = 0; r < 22; r++) codes.push((await h.call({ method: 'GET', url: '/v1/pets', key: made.key })).json().code)
    assert.equal(codes.at(-1), 'api_key_banned')
    banned.push(made)
  }
  assert.equal(FREE_READS_PER_ADDRESS, 4 * FREE_READS_PER_KEY)
  for (const k of banned.slice(0, 4)) {
    for (let i = 0; i < FREE_READS_PER_KEY; i++) assert.equal((await status(k.key, '198.51.100.1')).statusCode, 200)
  }
  const fifth = banned[4]!
  const refused = await status(fifth.key, '198.51.100.1')
  assert.equal(refused.statusCode, 429, 'the address\'s free reads are spent')
  assert.equal(refused.json().code, 'api_key_banned')
  assert.equal((await status(fifth.key, '198.51.100.2')).statusCode, 200, 'from another address it is served')
  assert.equal((await status(fine.key, '198.51.100.1')).statusCode, 200, 'an unbanned key is not counted')

  h.clock.advance(MINUTE)
  assert.equal((await status(fifth.key, '198.51.100.1')).statusCode, 200, 'a new minute, a new allowance')
})
