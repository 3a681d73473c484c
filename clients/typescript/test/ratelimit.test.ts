// The client keeps the rate-limit contract against the real server (docs/product.md section 4).
// These tests run on the memory limiter and again on Redis (PETSTORE_TEST_LIMITER=redis, from the
// root `npm test`). Waiting moves the server's manual clock, so three minute windows take no time.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { T0 } from '../../../test/helpers/app.ts'
import { PetstoreError } from '../src/index.ts'
import { recordingFetch, serveForClient } from './helpers.ts'

const MINUTE = 60_000

test('150 concurrent pets.list() on a free key (60 a minute) all succeed across three minute windows: never banned, at most maxConcurrency 429s', async (t) => {
  const server = await serveForClient(t)
  const { key } = await server.makeKey('customer', 'free')
  const { fetch, exchanges, maxInFlight } = recordingFetch()
  const client = server.client({ apiKey: key, fetch, maxConcurrency: 8 })

  const pages = await Promise.all(Array.from({ length: 150 }, () => client.pets.list()))

  assert.deepEqual(pages, Array.from({ length: 150 }, () => []))
  const refused = exchanges.filter((e) => e.status !== 200)
  assert.ok(refused.length <= 8, `the server sent ${refused.length} non-200 answers: ${JSON.stringify(refused)}`)
  assert.ok(refused.every((e) => e.status === 429 && e.code === 'rate_limited'), JSON.stringify(refused))
  assert.ok(maxInFlight() <= 8 && maxInFlight() > 1, `${maxInFlight()} requests were in flight at once`)
  t.diagnostic(`${exchanges.length} requests, ${refused.length} answered 429, at most ${maxInFlight()} in flight`)
  // 60 in the minute of T0 (12:00), 60 in the next, 30 in the third.
  const minuteOf = (ms: number) => Math.floor(ms / MINUTE)
  assert.equal(minuteOf(server.clock.now()) - minuteOf(T0), 2, 'three windows were used')
  const status = await client.rateLimit()
  assert.equal(status.ban, null)
  assert.equal(status.windows.minute.remaining, 30)
  assert.equal(status.windows.day.remaining, 1000 - 150)
})

test('a 429 rate_limited holds every request of the client until Retry-After, then all succeed; one 429 only', async (t) => {
  const server = await serveForClient(t)
  const { key } = await server.makeKey('customer', 'free')
  // Someone else (another process with the same key) used the whole minute.
  for (let i = 0; i < 60; i++) assert.equal((await server.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  const { fetch, exchanges } = recordingFetch()
  const client = server.client({ apiKey: key, fetch })

  const pages = await Promise.all(Array.from({ length: 20 }, () => client.pets.list()))

  assert.deepEqual(pages, Array.from({ length: 20 }, () => []))
  assert.deepEqual(exchanges.map((e) => e.status), [429, ...Array.from({ length: 20 }, () => 200)])
  assert.ok(server.clock.now() >= T0 + 30_000, 'the retries waited for the next minute')
})

test('a banned key rejects after one request with 429 api_key_banned and its Retry-After', async (t) => {
  const server = await serveForClient(t)
  const { key } = await server.makeKey('customer', 'free')
  // A naive integration: it keeps calling after its first 429 until the 21st call starts a ban.
  let last = ''
  for (let i = 0; i < 100 && last !== 'api_key_banned'; i++) {
    last = (await server.call({ method: 'GET', url: '/v1/pets', key })).json<{ code?: string }>().code ?? ''
  }
  assert.equal(last, 'api_key_banned')
  const { fetch, exchanges } = recordingFetch()
  const client = server.client({ apiKey: key, fetch })

  const error = await client.pets.list().then(() => null, (e: unknown) => e)

  assert.ok(error instanceof PetstoreError)
  assert.deepEqual(
    { status: error.status, code: error.code, requestId: error.requestId, retryAfter: error.retryAfter },
    { status: 429, code: 'api_key_banned', requestId: exchanges[0]!.requestId, retryAfter: 15 * 60 }
  )
  assert.equal(exchanges.length, 1)
})

test('lastRateLimit holds the last response\'s X-RateLimit-* as numbers, and onRateLimit fires below 10% of the window', async (t) => {
  const server = await serveForClient(t)
  const { key } = await server.makeKey('customer', 'enterprise', { perMinute: 20, perDay: 1000 })
  const seen: unknown[] = []
  const client = server.client({ apiKey: key, onRateLimit: (state) => seen.push(state) })
  assert.equal(client.lastRateLimit, null)

  for (let i = 0; i < 20; i++) await client.pets.list()

  const reset = Math.ceil((T0 + 1) / MINUTE) * MINUTE / 1000
  assert.deepEqual(client.lastRateLimit, { limit: 20, remaining: 0, reset })
  assert.deepEqual(seen, [{ limit: 20, remaining: 1, reset }, { limit: 20, remaining: 0, reset }])
})

test('maxConcurrency caps the requests in flight: 30 concurrent calls with maxConcurrency 3 never have more than 3 at once', async (t) => {
  const server = await serveForClient(t)
  const { fetch, exchanges, maxInFlight } = recordingFetch()
  const client = server.client({ fetch, maxConcurrency: 3 })

  await Promise.all(Array.from({ length: 30 }, () => client.pets.list()))

  assert.equal(exchanges.length, 30)
  assert.equal(maxInFlight(), 3)
})

const nextUtcDay = (ms: number) => Math.floor(ms / 86_400_000) * 86_400_000 + 86_400_000

test('maxWaitMs: once the day quota is spent, the next calls reject at once with 429 rate_limited and retryAfter to the next UTC day, sending nothing; onRateLimit reported the spent window', async (t) => {
  // Catches: a spent day quota held every later promise until the next UTC day.
  const server = await serveForClient(t)
  const { key } = await server.makeKey('customer', 'enterprise', { perMinute: 3, perDay: 5 })
  const { fetch, exchanges } = recordingFetch()
  const seen: { limit: number; remaining: number; reset: number }[] = []
  const client = server.client({ apiKey: key, fetch, onRateLimit: (state) => seen.push(state) })

  // 3 in this minute, a wait (under a minute) for the next, 2 more: the day is spent.
  for (let i = 0; i < 5; i++) assert.deepEqual(await client.pets.list(), [])
  const spentAt = server.clock.now()
  assert.ok(spentAt > T0 + 29_000 && spentAt < T0 + 31_000, 'the minute wait (30 s and jitter) was waited')
  const results = await Promise.allSettled([client.pets.list(), client.pets.list(), client.rateLimit()])

  const retryAfter = Math.ceil((nextUtcDay(spentAt) - spentAt) / 1000)
  for (const result of results) {
    assert.equal(result.status, 'rejected')
    const error: unknown = result.reason
    assert.ok(error instanceof PetstoreError, String(error))
    assert.deepEqual(
      { status: error.status, code: error.code, retryAfter: error.retryAfter },
      { status: 429, code: 'rate_limited', retryAfter }
    )
  }
  assert.equal(exchanges.length, 5, 'nothing was sent for the refused calls')
  assert.equal(server.clock.now(), spentAt, 'and nothing was waited')
  assert.deepEqual(seen.at(-1), { limit: 5, remaining: 0, reset: nextUtcDay(spentAt) / 1000 })
  assert.equal(
    (await server.call({ method: 'GET', url: '/v1/rate_limit', key }))
      .json<{ windows: { day: { remaining: number } } }>()
      .windows.day.remaining,
    0
  )
})

test('maxWaitMs: a 429 whose Retry-After is longer rejects at once with that 429 (its requestId); a larger maxWaitMs waits it out and succeeds the next day', async (t) => {
  const server = await serveForClient(t)
  const { key } = await server.makeKey('customer', 'enterprise', { perMinute: 5, perDay: 5 })
  // Another process with the same key spent the day.
  for (let i = 0; i < 5; i++) assert.equal((await server.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  const { fetch, exchanges } = recordingFetch()

  const error = await server.client({ apiKey: key, fetch }).pets.list().then(() => null, (e: unknown) => e)

  assert.ok(error instanceof PetstoreError)
  const retryAfter = Math.ceil((nextUtcDay(T0) - T0) / 1000)
  assert.deepEqual(
    { status: error.status, code: error.code, retryAfter: error.retryAfter, requestId: error.requestId },
    { status: 429, code: 'rate_limited', retryAfter, requestId: exchanges[0]!.requestId }
  )
  assert.deepEqual(exchanges.map((e) => e.status), [429])
  assert.equal(server.clock.now(), T0, 'nothing was waited')

  const patient = server.client({ apiKey: key, fetch, maxWaitMs: 86_400_000 })
  assert.deepEqual(await patient.pets.list(), [])
  assert.deepEqual(exchanges.map((e) => e.status), [429, 429, 200])
  assert.ok(server.clock.now() >= nextUtcDay(T0), 'served on the next UTC day')
})
