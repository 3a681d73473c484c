// events.listen() against the real server: where it starts (now, a cursor, an instant), each event
// once and in feed order, the cursor it resolves with, and what it outlives (a failed read, a rate
// limit longer than maxWaitMs) or not (a refused key, a handler that throws). Waiting moves the
// server's manual clock, so backoff and Retry-After take no real time.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PetstoreError, type Event, type ListenRetry } from '../src/index.ts'
import { recordingFetch, serveForClient } from './helpers.ts'

const nameOf = (event: Event): string => `${event.type}:${String((event.data as { name?: string }).name)}`

test('events.listen() starts now: it hands only what is written after it caught up, once each and in feed order, and resolves with the cursor when aborted; from that cursor, only what came later', async (t) => {
  // Catches: a listen that hands the feed's past (no skip to now), an event handed twice or out
  // of order, a cursor that does not resume where it stopped.
  const server = await serveForClient(t)
  const staff = server.client()
  await staff.categories.create({ name: 'Old 1' })
  await staff.categories.create({ name: 'Old 2' })

  const stop = new AbortController()
  const handed: string[] = []
  let ready = 0
  const writes: Array<Promise<unknown>> = []
  const { cursor } = await staff.events.listen(async (event) => {
    handed.push(nameOf(event))
    if (handed.length === 3) stop.abort()
  }, {
    type: 'category.*',
    pollMs: 5,
    signal: stop.signal,
    onReady: () => {
      ready++
      writes.push((async () => {
        for (const name of ['New 1', 'New 2', 'New 3']) await staff.categories.create({ name })
      })())
    }
  })
  await Promise.all(writes)
  assert.deepEqual(handed, ['category.created:New 1', 'category.created:New 2', 'category.created:New 3'])
  assert.equal(ready, 1, 'ready once')
  assert.equal(typeof cursor, 'string')

  await staff.categories.create({ name: 'Later' })
  const resumed = new AbortController()
  const later: string[] = []
  const again = await staff.events.listen((event) => { later.push(nameOf(event)) }, {
    type: 'category.*',
    cursor: cursor!,
    pollMs: 5,
    signal: resumed.signal,
    onReady: () => { resumed.abort() }
  })
  assert.deepEqual(later, ['category.created:Later'])
  assert.notEqual(again.cursor, cursor)
})

test('events.listen({ since }) hands the kept events from that instant on, then the new ones', async (t) => {
  // Catches: `since` ignored (everything handed) or taken as "now" (the recent past lost).
  const server = await serveForClient(t)
  const staff = server.client()
  await staff.categories.create({ name: 'Before' })
  server.clock.advance(60_000)
  const since = new Date(server.clock.now())
  await staff.categories.create({ name: 'After' })

  const stop = new AbortController()
  const handed: string[] = []
  await staff.events.listen((event) => {
    handed.push(nameOf(event))
    if (handed.length === 2) stop.abort()
  }, {
    type: 'category.*',
    since: since.toISOString(),
    pollMs: 5,
    signal: stop.signal,
    onReady: () => { void staff.categories.create({ name: 'New' }) }
  })
  assert.deepEqual(handed, ['category.created:After', 'category.created:New'])
})

test('events.listen() outlives failed reads: it tries again with growing backoff from the same cursor, losing and repeating nothing', async (t) => {
  // Catches: a listen that dies on a network error, retries at once in a loop, or moves on past a
  // page it never read.
  const server = await serveForClient(t)
  const writer = server.client()
  let failing = 0
  const { fetch, exchanges } = recordingFetch(async (input, init) => {
    if (failing > 0 && String(input).includes('/events')) {
      failing--
      throw new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } })
    }
    return await globalThis.fetch(input, init)
  })
  const reader = server.client({ fetch, maxRetries: 0 })
  const stop = new AbortController()
  const handed: string[] = []
  const retries: ListenRetry[] = []
  const writes: Array<Promise<unknown>> = []
  await reader.events.listen((event) => {
    handed.push(nameOf(event))
    if (handed.length === 2) {
      stop.abort()
      return
    }
    // The server goes away for three reads, while the next event is written.
    failing = 3
    writes.push(writer.categories.create({ name: 'Two' }))
  }, {
    type: 'category.*',
    pollMs: 5,
    signal: stop.signal,
    onReady: () => { writes.push(writer.categories.create({ name: 'One' })) },
    onRetry: (retry) => { retries.push(retry) }
  })
  await Promise.all(writes)
  assert.deepEqual(handed, ['category.created:One', 'category.created:Two'])
  assert.deepEqual(retries.map((r) => r.failures), [1, 2, 3])
  const bounds = [[500, 1000], [1000, 2000], [2000, 4000]]
  retries.forEach((r, i) => {
    assert.ok(r.waitMs >= bounds[i]![0]! && r.waitMs <= bounds[i]![1]!, `wait ${i + 1}: ${r.waitMs} ms`)
    assert.equal((r.error as Error).message, 'fetch failed')
  })
  assert.equal(exchanges.filter((e) => e.status === null).length, 3, 'three reads failed, and were not retried by the call itself')
})

test('events.listen() waits out a 429 longer than maxWaitMs for its Retry-After, sends nothing meanwhile, and goes on', async (t) => {
  // Catches: polling through a rate limit (which leads to a ban), or stopping at the first 429.
  const server = await serveForClient(t)
  const { key } = await server.makeKey('customer', 'enterprise', { perMinute: 3, perDay: 1000 })
  // Another process with the same key used the whole minute.
  for (let i = 0; i < 3; i++) assert.equal((await server.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  const { fetch, exchanges } = recordingFetch()
  const reader = server.client({ apiKey: key, fetch, maxWaitMs: 0 })
  const stop = new AbortController()
  const retries: ListenRetry[] = []
  const refusedAt = server.clock.now()
  await reader.events.listen(() => {}, {
    pollMs: 5,
    signal: stop.signal,
    onRetry: (retry) => { retries.push(retry) },
    onReady: () => { stop.abort() }
  })
  assert.equal(retries.length, 1)
  const [{ error, waitMs }] = retries as [ListenRetry]
  assert.ok(error instanceof PetstoreError && error.code === 'rate_limited' && error.retryAfter !== null, String(error))
  assert.ok(waitMs >= error.retryAfter * 1000 && waitMs < error.retryAfter * 1000 + 1000, `${waitMs} ms for Retry-After ${error.retryAfter}`)
  assert.ok(server.clock.now() >= refusedAt + error.retryAfter * 1000, 'the next read came after Retry-After')
  const statuses = exchanges.map((e) => e.status)
  assert.deepEqual(statuses, [429, ...statuses.slice(1).map(() => 200)])
  assert.ok(statuses.length >= 2)
})

test('events.listen() rejects with a refused key\'s 401, and with what the handler throws', async (t) => {
  const server = await serveForClient(t)
  await assert.rejects(
    server.client({ apiKey: `psk_${'x'.repeat(49)}` }).events.listen(() => {}),
    (error: unknown) => error instanceof PetstoreError && error.status === 401
  )
  const staff = server.client()
  await staff.categories.create({ name: 'Kept' })
  const broken = new Error('the handler failed')
  await assert.rejects(
    staff.events.listen(() => { throw broken }, { since: new Date(0) }),
    (error: unknown) => error === broken
  )
})
