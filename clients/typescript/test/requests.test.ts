// What the client sends and how its defaults behave, against the real server (src/index.ts), one
// behaviour per test: each pins a fault that mutation testing showed the other client tests would
// let through (docs/testing.md, "Mutation testing").
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PetstoreError, createPetstoreClient } from '../src/index.ts'
import { recordingFetch, seedPets, serveForClient } from './helpers.ts'

/** A fetch that records the URL, method and headers of each request, then lets it through (or through `inner`). */
function sentFetch (inner: typeof fetch = (...args) => fetch(...args)) {
  const sent: { url: string; method: string; headers: Headers; body: string | null }[] = []
  const wrapped: typeof fetch = async (input, init) => {
    sent.push({
      url: String(input),
      method: init?.method ?? 'GET',
      headers: new Headers(init?.headers),
      body: typeof init?.body === 'string' ? init.body : null
    })
    return inner(input, init)
  }
  return { fetch: wrapped, sent }
}

/** The same response with some headers removed (what a proxy that strips them delivers). */
async function without (response: Response, ...names: string[]): Promise<Response> {
  const headers = new Headers(response.headers)
  for (const name of names) headers.delete(name)
  return new Response(await response.arrayBuffer(), { status: response.status, headers })
}

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('baseUrl: trailing slashes are dropped, so paths are joined with one slash', async (t) => {
  const server = await serveForClient(t)
  const { fetch, sent } = sentFetch()
  const client = server.client({ baseUrl: `${server.baseUrl}//`, fetch })
  assert.deepEqual(await client.pets.list(), [])
  assert.equal(sent[0]!.url, `${server.baseUrl}/pets`)
})

test('every request carries Accept and X-API-Key; Content-Type and a JSON body only when there is a body', async (t) => {
  const server = await serveForClient(t)
  const { fetch, sent } = sentFetch()
  const client = server.client({ fetch })
  const category = await client.categories.create({ name: 'Cats' })
  await client.categories.get(category.id)
  assert.deepEqual(sent.map((s) => [s.method, s.headers.get('accept'), s.headers.get('x-api-key'), s.headers.get('content-type'), s.body]), [
    ['POST', 'application/json', server.keys.staff, 'application/json', '{"name":"Cats"}'],
    ['GET', 'application/json', server.keys.staff, null, null]
  ])
})

test('list(query) sends the query: filters, arrays as repeated parameters, null and undefined left out; no "?" without one', async (t) => {
  const server = await serveForClient(t)
  const pets = await seedPets(server, 3)
  const { fetch, sent } = sentFetch()
  const client = server.client({ fetch })
  assert.deepEqual(
    await client.pets.list({ id: [pets[0]!.id, pets[2]!.id], name: undefined as unknown as string, limit: 5 }),
    [pets[0], pets[2]]
  )
  assert.deepEqual(await client.request('get', '/pets', { query: { limit: 1, name: null as unknown as string } }), [pets[0]])
  assert.equal((await client.categories.list({ limit: 1 })).length, 1)
  await client.orders.list({ limit: 1 })
  await client.pets.list()
  assert.deepEqual(sent.map((s) => s.url.slice(server.baseUrl.length)), [
    `/pets?id=${pets[0]!.id}&id=${pets[2]!.id}&limit=5`,
    '/pets?limit=1',
    '/categories?limit=1',
    '/store/orders?limit=1',
    '/pets'
  ])
})

test('path parameters are URL-encoded, and a missing one is a TypeError naming it, before anything is sent', async (t) => {
  const server = await serveForClient(t)
  const { fetch, sent } = sentFetch()
  const client = server.client({ fetch })
  const error = await client.request('get', '/pets/{petId}', { path: { petId: 'a b/c' as unknown as number } }).then(() => null, (e: unknown) => e)
  assert.ok(error instanceof PetstoreError && error.status === 400, String(error))
  assert.equal(sent[0]!.url, `${server.baseUrl}/pets/a%20b%2Fc`)
  await assert.rejects(client.request('get', '/pets/{petId}', {}), { name: 'TypeError', message: 'missing path parameter petId of /pets/{petId}' })
  assert.equal(sent.length, 1)
})

test('request() headers are sent in lower case, so an Idempotency-Key given as "Idempotency-Key" makes a POST retryable', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  await server.client().inventory.set(pet!.id, 3)
  let failures = 1
  const { fetch, sent } = sentFetch(async (input, init) => {
    if (failures-- > 0) throw new TypeError('fetch failed')
    return globalThis.fetch(input, init)
  })
  const client = server.client({ apiKey: server.keys.customer, fetch, sleep: async () => {} })
  const order = await client.request('post', '/store/orders', { body: { petId: pet!.id, quantity: 1 }, headers: { 'Idempotency-Key': 'order-1' } })
  assert.equal(order.quantity, 1)
  assert.deepEqual(sent.map((s) => s.headers.get('idempotency-key')), ['order-1', 'order-1'])
})

test('create and place send a random UUID v4 Idempotency-Key when none is given, a new one per call', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  await server.client().inventory.set(pet!.id, 3)
  const { fetch, exchanges } = recordingFetch()
  const client = server.client({ fetch })
  await client.pets.create({ name: 'Rex', categoryId: (pet as unknown as { categoryId: number }).categoryId })
  await client.orders.place({ petId: pet!.id, quantity: 1 })
  const keys = exchanges.map((e) => e.idempotencyKey)
  assert.ok(keys.every((k) => k !== null && UUID_V4.test(k)), JSON.stringify(keys))
  assert.notEqual(keys[0], keys[1])
})

test('without crypto.randomUUID (Node 18), the Idempotency-Key is still a UUID v4: from getRandomValues, or Math.random without Web Crypto', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  const categoryId = (pet as unknown as { categoryId: number }).categoryId
  const { fetch, exchanges } = recordingFetch()
  const client = server.client({ fetch })
  const real = Object.getOwnPropertyDescriptor(globalThis, 'crypto')!
  t.after(() => { Object.defineProperty(globalThis, 'crypto', real) })
  let filled = 0
  Object.defineProperty(globalThis, 'crypto', {
    configurable: true,
    value: { getRandomValues: (bytes: Uint8Array) => { filled++; return bytes.fill(0x0a) } }
  })
  await client.pets.create({ name: 'A', categoryId })
  Object.defineProperty(globalThis, 'crypto', { configurable: true, value: undefined })
  await client.pets.create({ name: 'B', categoryId })
  await client.pets.create({ name: 'C', categoryId })
  Object.defineProperty(globalThis, 'crypto', real)
  const keys = exchanges.map((e) => e.idempotencyKey ?? '')
  assert.equal(filled, 1)
  assert.equal(keys[0], '0a0a0a0a-0a0a-4a0a-8a0a-0a0a0a0a0a0a', 'getRandomValues filled the bytes; version and variant bits set, two hex digits a byte')
  assert.ok(UUID_V4.test(keys[1]!) && UUID_V4.test(keys[2]!), JSON.stringify(keys))
  assert.notEqual(keys[1], keys[2], 'Math.random bytes differ from call to call')
  assert.notEqual(keys[1], '00000000-0000-4000-8000-000000000000')
})

test('maxRetries defaults to 4: a GET that always meets a network error is sent 5 times', async (t) => {
  const server = await serveForClient(t)
  const { fetch, exchanges } = recordingFetch(async () => { throw new TypeError('fetch failed') })
  const client = server.client({ fetch, sleep: async () => {} })
  await assert.rejects(client.pets.list(), { name: 'TypeError' })
  assert.equal(exchanges.length, 5)
})

test('maxConcurrency defaults to 8: 30 concurrent calls never have more than 8 in flight', async (t) => {
  const server = await serveForClient(t)
  const { fetch, maxInFlight } = recordingFetch()
  const client = server.client({ fetch })
  await Promise.all(Array.from({ length: 30 }, () => client.pets.list()))
  assert.ok(maxInFlight() <= 8 && maxInFlight() > 1, String(maxInFlight()))
})

test('backoff of network errors is capped at 20 s (full jitter): the 7th retry waits at most 20 s, not 32 s', async (t) => {
  const server = await serveForClient(t)
  const { fetch } = recordingFetch(async () => { throw new TypeError('fetch failed') })
  const waits: number[] = []
  const client = server.client({ fetch, maxRetries: 7, random: () => 0.999, sleep: async (ms) => { waits.push(ms) } })
  await assert.rejects(client.pets.list(), { name: 'TypeError' })
  assert.deepEqual(waits, [499, 999, 1998, 3996, 7992, 15984, 19980])
})

test('maxWaitMs defaults to 60 s: a 429 whose Retry-After is 61 s rejects at once with retryAfter 61, one request sent', async (t) => {
  const server = await serveForClient(t)
  const { fetch, exchanges } = recordingFetch(async (input, init) => {
    const response = await globalThis.fetch(input, init)
    return new Response(JSON.stringify({ code: 'rate_limited', message: 'over quota' }), {
      status: 429,
      headers: { 'retry-after': '61', 'content-type': 'application/json', 'request-id': response.headers.get('request-id') ?? '' }
    })
  })
  const client = server.client({ fetch })
  const error = await client.pets.list().then(() => null, (e: unknown) => e)
  assert.ok(error instanceof PetstoreError)
  assert.deepEqual([error.status, error.code, error.retryAfter, exchanges.length], [429, 'rate_limited', 61, 1])
  const next = await client.pets.list().then(() => null, (e: unknown) => e)
  assert.ok(next instanceof PetstoreError)
  assert.equal(next.message, 'the rate limit allows the next request in 61 s, longer than maxWaitMs (60000 ms)')
  assert.deepEqual([next.status, next.code, next.retryAfter, next.requestId, exchanges.length], [429, 'rate_limited', 61, null, 1], 'the held client sends nothing')
})

test('a 429 without Retry-After is retried after the backoff, holding the client meanwhile', async (t) => {
  const server = await serveForClient(t)
  let first = true
  const { fetch, exchanges } = recordingFetch(async (input, init) => {
    const response = await globalThis.fetch(input, init)
    if (!first) return response
    first = false
    return new Response(JSON.stringify({ code: 'rate_limited', message: 'over quota' }), { status: 429, headers: { 'content-type': 'application/json' } })
  })
  const waits: number[] = []
  const client = server.client({
    fetch,
    random: () => 0.5,
    sleep: async (ms) => { waits.push(ms); server.clock.advance(ms) }
  })
  assert.deepEqual(await client.pets.list(), [])
  assert.deepEqual(exchanges.map((e) => e.status), [429, 200])
  assert.deepEqual(waits, [250 + 500], 'backoff (0.5 of 500 ms), then the gate\'s jitter (0.5 of 1000 ms)')
})

test('a 503 without Retry-After to a GET is retried after the backoff', async (t) => {
  const server = await serveForClient(t)
  let first = true
  const { fetch, exchanges } = recordingFetch(async (input, init) => {
    const response = await globalThis.fetch(input, init)
    if (!first) return response
    first = false
    return without(new Response(JSON.stringify({ code: 'service_unavailable', message: 'down' }), { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '5' } }), 'retry-after')
  })
  const waits: number[] = []
  const client = server.client({ fetch, random: () => 0.5, sleep: async (ms) => { waits.push(ms) } })
  assert.deepEqual(await client.pets.list(), [])
  assert.deepEqual([exchanges.map((e) => e.status), waits], [[503, 200], [250]])
})

test('without the RateLimit field, the reset of X-RateLimit-Reset (Unix seconds) is waited for when the window is spent', async (t) => {
  const server = await serveForClient(t)
  const { key } = await server.makeKey('customer', 'enterprise', { perMinute: 1, perDay: 100 })
  const { fetch, exchanges } = recordingFetch(async (input, init) => without(await globalThis.fetch(input, init), 'ratelimit'))
  const waits: number[] = []
  const client = server.client({
    apiKey: key,
    fetch,
    random: () => 0,
    sleep: async (ms) => { waits.push(ms); server.clock.advance(ms) }
  })
  const start = server.clock.now()
  await client.pets.list()
  await client.pets.list()
  const reset = Math.ceil((start + 1) / 60_000) * 60_000
  assert.deepEqual([exchanges.map((e) => e.status), waits], [[200, 200], [reset - start]])
})

test('lastRateLimit is null before any answer, and a copy: changing it changes nothing in the client', async (t) => {
  const server = await serveForClient(t)
  const client = server.client()
  assert.equal(client.lastRateLimit, null)
  await client.pets.list()
  const state = client.lastRateLimit!
  state.remaining = -5
  assert.notEqual(client.lastRateLimit!.remaining, -5)
  assert.equal(client.lastRateLimit!.remaining, state.limit - 1, 'one call of the minute')
})

test('every() follows only the query of Link rel="next" on its own base URL, whatever path a proxy wrote', async (t) => {
  const server = await serveForClient(t)
  const pets = await seedPets(server, 3)
  const { fetch, sent } = sentFetch(async (input, init) => {
    const response = await globalThis.fetch(input, init)
    const link = response.headers.get('link')
    if (link === null) return response
    const headers = new Headers(response.headers)
    headers.set('link', link.replace('/v1/pets', '/internal/petstore/v1/pets'))
    return new Response(await response.arrayBuffer(), { status: response.status, headers })
  })
  const client = server.client({ fetch })
  const seen = []
  for await (const pet of client.pets.all({ limit: 2 })) seen.push(pet)
  assert.deepEqual(seen, pets)
  assert.ok(sent.every((s) => s.url.startsWith(`${server.baseUrl}/pets?`)), JSON.stringify(sent.map((s) => s.url)))
  assert.equal(sent.length, 2)
})

test('answers without rate-limit headers (a proxy strips them) end probing: concurrent calls go out together, not one at a time', async (t) => {
  const server = await serveForClient(t)
  const { fetch, exchanges, maxInFlight } = recordingFetch(async (input, init) => without(
    await globalThis.fetch(input, init),
    'x-ratelimit-limit',
    'x-ratelimit-remaining',
    'x-ratelimit-reset',
    'ratelimit',
    'ratelimit-policy'
  ))
  const client = server.client({ fetch, maxConcurrency: 4 })
  await client.pets.list()
  await Promise.all(Array.from({ length: 12 }, () => client.pets.list()))
  assert.equal(exchanges.length, 13)
  assert.equal(maxInFlight(), 4, 'after the first unmetered answer, maxConcurrency is the only cap')
  assert.equal(client.lastRateLimit, null)
})

test('a client clock an hour off still waits the reset the RateLimit field gives in seconds from now, not X-RateLimit-Reset', async (t) => {
  const server = await serveForClient(t)
  const fields: (string | null)[] = []
  const { fetch, exchanges } = recordingFetch(async (input, init) => {
    const response = await globalThis.fetch(input, init)
    fields.push(response.headers.get('ratelimit'))
    return response
  })
  const waits: number[] = []
  for (const skew of [3_600_000, -3_600_000]) {
    waits.length = 0
    exchanges.length = 0
    fields.length = 0
    const { key } = await server.makeKey('customer', 'enterprise', { perMinute: 1, perDay: 100 })
    const client = server.client({
      apiKey: key,
      fetch,
      random: () => 0,
      now: () => server.clock.now() + skew,
      sleep: async (ms) => { waits.push(ms); server.clock.advance(ms) }
    })
    await client.pets.list()
    await client.pets.list()
    const t = Number(/"minute";r=0;t=(\d+)/.exec(fields[0] ?? '')?.[1])
    assert.ok(t > 0 && t <= 60, `RateLimit: ${fields[0]}`)
    assert.deepEqual([exchanges.map((e) => e.status), waits], [[200, 200], [t * 1000]], `clock off by ${skew} ms`)
  }
})

for (const code of ['api_key_banned', 'address_banned'] as const) {
  test(`a 429 ${code} rejects at once and holds nothing: the client's next call is sent without a wait`, async (t) => {
    const server = await serveForClient(t)
    let first = true
    const { fetch, exchanges } = recordingFetch(async (input, init) => {
      const response = await globalThis.fetch(input, init)
      if (!first) return response
      first = false
      return new Response(JSON.stringify({ code, message: 'banned' }), { status: 429, headers: { 'content-type': 'application/json', 'retry-after': '30' } })
    })
    const waits: number[] = []
    const client = server.client({ fetch, sleep: async (ms) => { waits.push(ms); server.clock.advance(ms) } })
    await assert.rejects(client.pets.list(), { status: 429, code, retryAfter: 30 })
    assert.deepEqual(await client.pets.list(), [])
    assert.deepEqual([exchanges.map((e) => e.status), waits], [[429, 200], []])
  })
}

test('a 429 whose Retry-After is exactly maxWaitMs is waited out and retried, not refused', async (t) => {
  const server = await serveForClient(t)
  let first = true
  const { fetch, exchanges } = recordingFetch(async (input, init) => {
    const response = await globalThis.fetch(input, init)
    if (!first) return response
    first = false
    return new Response(JSON.stringify({ code: 'rate_limited', message: 'over quota' }), { status: 429, headers: { 'content-type': 'application/json', 'retry-after': '30' } })
  })
  const waits: number[] = []
  const client = server.client({
    fetch,
    maxWaitMs: 30_000,
    random: () => 0,
    sleep: async (ms) => { waits.push(ms); server.clock.advance(ms) }
  })
  assert.deepEqual(await client.pets.list(), [])
  assert.deepEqual([exchanges.map((e) => e.status), waits], [[429, 200], [30_000]])
})

test('ifMatch of every write method is sent as If-Match: a stale version is refused with 412 and changes nothing; the current one applies; none is sent without it', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  const id = pet!.id
  const categoryId = (pet as unknown as { categoryId: number }).categoryId
  const other = await server.client().categories.create({ name: 'Other' })
  await server.client().inventory.set(id, 5)
  const order = await server.client({ apiKey: server.keys.customer }).orders.place({ petId: id, quantity: 1 })
  const { fetch, sent } = sentFetch()
  const client = server.client({ fetch })
  const stale = { ifMatch: '"999"' }
  const writes: [string, () => Promise<unknown>][] = [
    ['pets.replace', () => client.pets.replace(id, { name: 'Changed', categoryId }, stale)],
    ['pets.update', () => client.pets.update(id, { name: 'Changed' }, stale)],
    ['pets.delete', () => client.pets.delete(id, stale)],
    ['categories.replace', () => client.categories.replace(other.id, { name: 'Changed' }, stale)],
    ['categories.delete', () => client.categories.delete(other.id, stale)],
    ['orders.complete', () => client.orders.complete(order.id, undefined, stale)],
    ['orders.cancel', () => client.orders.cancel(order.id, stale)],
    ['inventory.set', () => client.inventory.set(id, 9, stale)]
  ]
  for (const [name, write] of writes) await assert.rejects(write(), { status: 412, code: 'precondition_failed' }, name)
  assert.deepEqual(sent.map((s) => s.headers.get('if-match')), writes.map(() => '"999"'))
  // Nothing changed: the rows as the server's store holds them.
  assert.equal((await server.stores.pets.getPet(id))?.name, pet!.name)
  assert.equal((await server.stores.categories.getCategory(other.id))?.name, 'Other')
  assert.equal((await client.inventory.get(id)).quantity, 4)
  assert.equal((await client.orders.get(order.id)).complete, false)

  const etag = (await server.call({ method: 'GET', url: `/v1/pets/${id}` })).headers.etag as string
  await client.pets.update(id, { name: 'Changed' }, { ifMatch: etag })
  assert.equal((await server.stores.pets.getPet(id))?.name, 'Changed')
  sent.length = 0
  await client.pets.update(id, { name: 'Again' })
  assert.equal(sent[0]!.headers.has('if-match'), false)
  assert.equal((await server.stores.pets.getPet(id))?.name, 'Again')
})

test('categories.all() visits every category once, in id order, across pages', async (t) => {
  const server = await serveForClient(t)
  const staff = server.client()
  const made = []
  for (const name of ['A', 'B', 'C']) made.push(await staff.categories.create({ name }))
  const { fetch, sent } = sentFetch()
  const seen = []
  for await (const category of server.client({ fetch }).categories.all({ limit: 2 })) seen.push(category)
  assert.deepEqual(seen, made)
  assert.deepEqual(sent.map((s) => new URL(s.url).pathname.slice(new URL(server.baseUrl).pathname.length)), ['/categories', '/categories'])
})

test('only a GET or a POST with an Idempotency-Key is retried: a PUT that carries one meets a 503 and rejects at once, changing nothing', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  await server.client().inventory.set(pet!.id, 3)
  let first = true
  const { fetch, exchanges } = recordingFetch(async (input, init) => {
    if (!first) return globalThis.fetch(input, init)
    first = false
    return new Response(JSON.stringify({ code: 'service_unavailable', message: 'down' }), { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '1' } })
  })
  const client = server.client({ fetch })
  await assert.rejects(
    client.request('put', '/store/inventory/{petId}', {
      path: { petId: pet!.id },
      body: { quantity: 9 },
      headers: { 'Idempotency-Key': 'put-1' }
    }),
    { status: 503 }
  )
  assert.equal(exchanges.length, 1)
  assert.equal((await client.inventory.get(pet!.id)).quantity, 3)
})

test('without now and sleep, a wait runs on the real clock and timer: a 429 with Retry-After 2 is retried only once 2 s have passed', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 })
  const statuses = [429, 200]
  const sentAt: number[] = []
  const fetch: typeof globalThis.fetch = async () => {
    sentAt.push(Date.now())
    const status = statuses.shift()!
    return status === 429
      ? new Response(JSON.stringify({ code: 'rate_limited', message: 'over quota' }), { status, headers: { 'content-type': 'application/json', 'retry-after': '2' } })
      : new Response('[]', { status, headers: { 'content-type': 'application/json' } })
  }
  const client = createPetstoreClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'psk_test', fetch, random: () => 0 })
  let done = false
  const call = client.pets.list().then((pets) => { done = true; return pets })
  const turns = async () => { for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve)) }
  await turns()
  assert.deepEqual([sentAt, done], [[1_000_000], false])
  t.mock.timers.tick(1999)
  await turns()
  assert.deepEqual([sentAt, done], [[1_000_000], false], 'still held at 1999 ms')
  t.mock.timers.tick(1)
  await turns()
  assert.deepEqual(await call, [])
  assert.deepEqual(sentAt, [1_000_000, 1_002_000])
})

test('a 503 with Retry-After to a GET waits that many seconds plus jitter (random() of a second) before the retry', async (t) => {
  const server = await serveForClient(t)
  let first = true
  const { fetch, exchanges } = recordingFetch(async (input, init) => {
    if (!first) return globalThis.fetch(input, init)
    first = false
    return new Response(JSON.stringify({ code: 'service_unavailable', message: 'down' }), { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '2' } })
  })
  const waits: number[] = []
  const client = server.client({ fetch, random: () => 0.5, sleep: async (ms) => { waits.push(ms) } })
  assert.deepEqual(await client.pets.list(), [])
  assert.deepEqual([exchanges.map((e) => e.status), waits], [[503, 200], [2500]])
})

test('maxWaitMs caps a 503 as a 429: a Retry-After past it rejects the GET at once with that 503, sleeping nothing; one of exactly maxWaitMs is waited out', async (t) => {
  // Catches: a 503's Retry-After (an hour of maintenance, say) held the call's promise that long.
  const server = await serveForClient(t)
  const unavailable = (seconds: number) => new Response(JSON.stringify({ code: 'service_unavailable', message: 'down for maintenance' }), {
    status: 503,
    headers: { 'content-type': 'application/json', 'retry-after': String(seconds), 'request-id': `maintenance-${seconds}` }
  })
  const long = recordingFetch(async () => unavailable(3600))
  const waits: number[] = []
  const impatient = server.client({
    fetch: long.fetch,
    maxWaitMs: 30_000,
    random: () => 0,
    sleep: async (ms) => { waits.push(ms) }
  })
  const error = await impatient.pets.list().then(() => assert.fail('resolved'), (e: unknown) => e as PetstoreError)
  assert.deepEqual(
    { status: error.status, code: error.code, retryAfter: error.retryAfter, requestId: error.requestId },
    { status: 503, code: 'service_unavailable', retryAfter: 3600, requestId: 'maintenance-3600' }
  )
  assert.deepEqual([long.exchanges.length, waits], [1, []])

  let first = true
  const exact = recordingFetch(async (input, init) => {
    if (!first) return globalThis.fetch(input, init)
    first = false
    return unavailable(30)
  })
  const patient = server.client({
    fetch: exact.fetch,
    maxWaitMs: 30_000,
    random: () => 0,
    sleep: async (ms) => { waits.push(ms) }
  })
  assert.deepEqual(await patient.pets.list(), [])
  assert.deepEqual([exact.exchanges.map((e) => e.status), waits], [[503, 200], [30_000]])
})
