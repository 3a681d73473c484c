// key.banned and key.unbanned (issue 31), on both engines: a ban the limiter starts is recorded
// with exactly one key.banned event, also when its record comes late after a failure, and is
// delivered to a webhook subscribed to key.*; a lift through the admin API writes key.unbanned;
// a ban that runs out writes nothing.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BAN_RETRY_MS } from '../../src/access/access.service.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { startReceiver } from '../webhooks/receiver.ts'
import { received, subscribe, verified } from '../webhooks/helpers.ts'
import { barrier, eventsOf } from './feed.ts'

const FREE_PER_MINUTE = 60

/** A free customer key's 60 allowed requests, 20 refused, and the 21st refused one that starts the ban. */
async function banKey (h: TestApp, key: string): Promise<void> {
  for (let i = 0; i < FREE_PER_MINUTE + 20; i++) {
    const res = await h.call({ method: 'GET', url: '/v1/pets', key })
    assert.equal(res.statusCode, i < FREE_PER_MINUTE ? 200 : 429, `request ${i + 1}`)
  }
  const banned = await h.call({ method: 'GET', url: '/v1/pets', key })
  assert.equal(banned.json().code, 'api_key_banned')
}

test('a limiter ban writes exactly one key.banned (its key, end and strike); an admin lift writes key.unbanned, a ban that runs out none', async (t) => {
  const h = await buildTestApp(t)
  const { id, key } = await h.makeKey('customer', 'free')
  const other = await h.makeKey('customer', 'free')
  await banKey(h, key)
  // Calls while banned start no second ban.
  for (let i = 0; i < 5; i++) assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 429)
  const until = new Date(h.clock.now() + 15 * 60_000).toISOString()
  const [banned, ...more] = await eventsOf(h, 'key.banned', 1)
  assert.deepEqual(banned?.data, { keyId: id, until, strike: 1 })
  assert.deepEqual(more, [])

  h.clock.advance(60_000)
  const lift = await h.call({ method: 'DELETE', url: `/v1/admin/keys/${id}/ban` })
  assert.equal(lift.statusCode, 204)
  const [unbanned, ...moreLifts] = await eventsOf(h, 'key.unbanned', 1)
  assert.deepEqual(unbanned?.data, { keyId: id, until: new Date(h.clock.now()).toISOString(), strike: 1 })
  assert.equal(unbanned?.createdAt, new Date(h.clock.now()).toISOString())
  assert.deepEqual(moreLifts, [])
  // Its holder sees both; another customer neither.
  assert.deepEqual((await eventsOf(h, 'key.banned,key.unbanned', 2, { key })).map((e) => e.id), [banned!.id, unbanned!.id])
  assert.deepEqual(await eventsOf(h, 'key.banned,key.unbanned', 0, { key: other.key }), [])
  // Lifting again lifts nothing and writes nothing.
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/admin/keys/${id}/ban` })).statusCode, 204)

  // The next minute: a second ban (strike 2, 30 minutes) that runs out on its own.
  h.clock.advance(60_000)
  await banKey(h, key)
  h.clock.advance(31 * 60_000)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200, 'the ban ran out')
  await barrier(h)
  const events = await eventsOf(h, 'key.banned,key.unbanned', 3)
  assert.deepEqual(events.map((e) => [e.type, e.data.strike]), [['key.banned', 1], ['key.unbanned', 1], ['key.banned', 2]])
})

test('a ban whose record failed writes its one key.banned when the record is retried, and recording it again writes none', async (t) => {
  const h = await buildTestApp(t)
  const { id, key } = await h.makeKey('customer', 'free')
  const recordBan = h.stores.keys.recordBan.bind(h.stores.keys)
  let failing = true
  h.stores.keys.recordBan = async (ban) => {
    if (failing) throw new Error('database is out')
    return await recordBan(ban)
  }
  await banKey(h, key)
  await barrier(h)
  assert.deepEqual(await eventsOf(h, 'key.banned', 0), [], 'no record, no event')
  failing = false
  h.clock.advance(BAN_RETRY_MS)
  // The next charged request retries the record (in the background).
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 429)
  const [banned] = await eventsOf(h, 'key.banned', 1)
  assert.equal(banned?.data.keyId, id)
  // The same ban recorded again (a retry after a commit whose answer was lost): one record, one event.
  const [ban] = await h.stores.keys.banHistory(id, 10)
  await h.stores.keys.recordBan({
    keyId: id,
    subject: ban!.subject,
    startedAt: ban!.startedAt,
    endsAt: ban!.endsAt,
    reason: ban!.reason,
    strike: 1
  })
  assert.equal((await h.stores.keys.banHistory(id, 10)).length, 1)
  await barrier(h)
  assert.equal((await eventsOf(h, 'key.banned', 1)).length, 1)
})

test('key.banned is delivered to a webhook endpoint subscribed to key.*, signed', async (t) => {
  // A fixed clock near the real time: the ban's minute cannot end mid-test, and the receiver's
  // check of webhook-timestamp (5 minutes) passes.
  const clock = manualClock(Math.floor(Date.now() / 60_000) * 60_000 + 1000)
  const h = await buildTestApp(t, {
    env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50' },
    deps: { clock },
    // The limiter on the same clock: the ban starts, and its event is dated, after the subscription.
    limiter: () => createMemoryRateLimiter({ now: clock.now })
  })
  const receiver = await startReceiver(t)
  const hook = await subscribe(h, receiver, ['key.*'])
  const { id, key } = await h.makeKey('customer', 'free')
  await banKey(h, key)
  // The test's keys are made on a clock of their own (before the subscription): key.banned only.
  const deliveries = await received(receiver, 1, 10_000)
  const payloads = deliveries.map((d) => verified(d, hook.secret))
  assert.deepEqual(payloads.map((p) => p.type), ['key.banned'])
  assert.deepEqual(payloads[0]!.data, {
    keyId: id,
    until: new Date(clock.now() + 15 * 60_000).toISOString(),
    strike: 1
  })
  assert.equal(deliveries[0]!.headers['webhook-id'], (await eventsOf(h, 'key.banned', 1))[0]!.id)
})
