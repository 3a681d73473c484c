// Two real server processes side by side on one PostgreSQL schema and one Redis (docs/product.md
// sections 4 and 8: "several instances can run side by side on PostgreSQL and Redis with no other
// coordination"): quotas, bans and lifts, stock and idempotency hold across them.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  awaitMinuteRoom,
  call,
  cleanupStack,
  cli,
  createKey,
  isolatedRedis,
  pollUntil,
  requireServices,
  schemaDatabaseUrl,
  startServerProcess,
  type Answer
} from './helpers.ts'

test('two instances on one PostgreSQL and one Redis behave as one service', { timeout: 90_000 }, async (t) => {
  if (!await requireServices(t, ['postgres', 'redis'])) return
  const cleanup = cleanupStack(t)
  const db = await schemaDatabaseUrl(t)
  const redis = isolatedRedis(cleanup)
  const env = { DATABASE_URL: db.url(), REDIS_URL: redis.url(), LOG_LEVEL: 'warn' }

  // Keys come from the CLI, like an operator's (this also applies the migrations, before the
  // servers start).
  const staff = await createKey(env, 'staff', 'pro')
  const customer = await createKey(env, 'customer', 'enterprise', { perMinute: 1000, perDay: 10_000 })
  const metered = await createKey(env, 'customer', 'enterprise', { perMinute: 40, perDay: 1000 })
  const rogue = await createKey(env, 'customer', 'enterprise', { perMinute: 2, perDay: 1000 })

  const [a, b] = await Promise.all([startServerProcess(cleanup, env), startServerProcess(cleanup, env)])
  const both = [a.url, b.url] as const

  // The instances count in fixed UTC minutes of the system clock, so the two rate-limit checks
  // below (about 100 requests, a second or two) must not straddle a minute boundary: with fewer
  // than 15 s left in this minute, wait for the next one (a bounded poll, at most ~16 s).
  await awaitMinuteRoom(15)

  await t.test('a key\'s calls across both instances hit the limit at exactly its quota', async () => {
    const answers: Answer[] = []
    for (let i = 0; i < 60; i++) answers.push(await call(both[i % 2]!, '/v1/pets', { key: metered.key }))
    assert.deepEqual(answers.map((r) => r.status), [...Array<number>(40).fill(200), ...Array<number>(20).fill(429)])
    // One counter: the remaining count falls by one per call, whichever instance answers.
    assert.deepEqual(
      answers.slice(0, 40).map((r) => Number(r.headers.get('x-ratelimit-remaining'))),
      Array.from({ length: 40 }, (_, i) => 39 - i)
    )
    for (const r of answers.slice(40)) {
      assert.equal(r.body.code, 'rate_limited', JSON.stringify(r.body))
      assert.match(r.headers.get('retry-after') ?? '', /^\d+$/)
    }
  })

  await t.test('a ban made on one instance holds on the other; `keys unban` lifts it on both within 5 s', async () => {
    // Quota 2: two calls pass, the third is the first 429, and the 21st call after it (the 23rd)
    // is the ban; all on A.
    const onA: Answer[] = []
    for (let i = 0; i < 23; i++) onA.push(await call(a.url, '/v1/pets', { key: rogue.key }))
    assert.deepEqual(onA.slice(0, 2).map((r) => r.status), [200, 200])
    assert.deepEqual(onA.slice(2, 22).map((r) => r.body.code), Array<string>(20).fill('rate_limited'))
    assert.equal(onA[22]!.status, 429)
    assert.equal(onA[22]!.body.code, 'api_key_banned')

    const onB = await call(b.url, '/v1/pets', { key: rogue.key })
    assert.equal(onB.status, 429)
    assert.equal(onB.body.code, 'api_key_banned', JSON.stringify(onB.body))
    assert.ok(Number(onB.headers.get('retry-after')) > 14 * 60, `Retry-After ${onB.headers.get('retry-after')} should run to the ban's end (15 min)`)
    const status = await call(b.url, '/v1/rate_limit', { key: rogue.key })
    assert.equal(status.status, 200)
    assert.notEqual(status.body.ban, null)

    assert.deepEqual(await cli(env, ['keys', 'unban', String(rogue.id)]), [`key ${rogue.id}: ban lifted`])
    const lifted = await pollUntil(async () => {
      const views = await Promise.all(both.map((url) => call(url, '/v1/rate_limit', { key: rogue.key })))
      return views.every((v) => v.status === 200 && v.body.ban === null) ? views : undefined
    }, { timeoutMs: 5000, intervalMs: 100, message: 'the lift did not reach both instances within 5 s' })
    t.diagnostic(`ban lift seen by both instances after ${lifted.ms} ms`)

    // Served again: no longer banned. Its minute quota is still spent, so within this minute the
    // answer is an ordinary 429 rate_limited with a wait of at most a minute; past it, a 200.
    for (const url of both) {
      const r = await call(url, '/v1/pets', { key: rogue.key })
      if (r.status !== 200) {
        assert.equal(r.status, 429)
        assert.equal(r.body.code, 'rate_limited', JSON.stringify(r.body))
        assert.ok(Number(r.headers.get('retry-after')) <= 60)
      }
    }
  })

  await t.test('concurrent orders split across both instances never oversell', async () => {
    const category = await call(a.url, '/v1/categories', { method: 'POST', key: staff.key, body: { name: 'Birds' } })
    assert.equal(category.status, 201)
    const pet = await call(b.url, '/v1/pets', { method: 'POST', key: staff.key, body: { name: 'Kiwi', categoryId: category.body.id } })
    assert.equal(pet.status, 201)
    const petId = pet.body.id as number
    assert.equal((await call(a.url, `/v1/store/inventory/${petId}`, { method: 'PUT', key: staff.key, body: { quantity: 10 } })).status, 200)

    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      call(both[i % 2]!, '/v1/store/orders', { method: 'POST', key: customer.key, body: { petId, quantity: 1 } })))
    const accepted = answers.filter((r) => r.status === 201)
    assert.equal(accepted.length, 10)
    assert.equal(new Set(accepted.map((r) => r.body.id)).size, 10)
    for (const r of answers.filter((r) => r.status !== 201)) {
      assert.equal(r.status, 409, JSON.stringify(r.body))
      assert.ok(['insufficient_stock', 'pet_not_available'].includes(r.body.code as string), JSON.stringify(r.body))
    }
    // Both instances see the same end state.
    for (const url of both) {
      assert.deepEqual((await call(url, `/v1/store/inventory/${petId}`, { key: customer.key })).body, { petId, quantity: 0, status: 'pending' })
      assert.equal((await call(url, `/v1/store/orders?petId=${petId}&limit=100`, { key: staff.key })).body.length, 10)
    }
  })

  await t.test('an Idempotency-Key used on one instance replays on the other', async () => {
    const category = await call(a.url, '/v1/categories', { method: 'POST', key: staff.key, body: { name: 'Cats' } })
    const pet = await call(a.url, '/v1/pets', { method: 'POST', key: staff.key, body: { name: 'Tom', categoryId: category.body.id } })
    const petId = pet.body.id as number
    await call(a.url, `/v1/store/inventory/${petId}`, { method: 'PUT', key: staff.key, body: { quantity: 5 } })
    const headers = { 'idempotency-key': `order-${petId}` }

    const first = await call(a.url, '/v1/store/orders', { method: 'POST', key: customer.key, headers, body: { petId, quantity: 2 } })
    assert.equal(first.status, 201, JSON.stringify(first.body))
    const replay = await call(b.url, '/v1/store/orders', { method: 'POST', key: customer.key, headers, body: { petId, quantity: 2 } })
    assert.equal(replay.status, 201)
    assert.deepEqual(replay.body, first.body)
    assert.equal(replay.headers.get('location'), first.headers.get('location'))
    const other = await call(b.url, '/v1/store/orders', { method: 'POST', key: customer.key, headers, body: { petId, quantity: 3 } })
    assert.equal(other.status, 409)
    assert.equal(other.body.code, 'idempotency_key_reused')

    assert.equal((await call(b.url, `/v1/store/orders?petId=${petId}&limit=100`, { key: staff.key })).body.length, 1)
    assert.equal((await call(a.url, `/v1/store/inventory/${petId}`, { key: customer.key })).body.quantity, 3)
  })

  assert.deepEqual(await Promise.all([a.stop(), b.stop()]), [0, 0])
})
