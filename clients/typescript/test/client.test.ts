// The client's calls, retries and notices against the real server (SQLite by default; the root
// `npm test` also runs the server's suites on PostgreSQL and Redis).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ServiceUnavailableError } from '../../../src/errors.ts'
import { PetstoreError, type DeprecationNotice } from '../src/index.ts'
import { recordingFetch, seedPets, serveForClient } from './helpers.ts'

test('a lost response to the first POST /store/orders is retried with the same Idempotency-Key: one order, one stock decrement', async (t) => {
  const server = await serveForClient(t)
  const staff = server.client()
  const [pet] = await seedPets(server, 1)
  await staff.inventory.set(pet!.id, 5)
  let lost = false
  const { fetch, exchanges } = recordingFetch(async (input, init) => {
    const response = await globalThis.fetch(input, init)
    if (!lost && init?.method === 'POST' && String(input).endsWith('/store/orders')) {
      lost = true
      await response.arrayBuffer() // the server did its work; the answer never reaches the caller
      throw new TypeError('fetch failed', { cause: new Error('socket hang up') })
    }
    return response
  })
  const customer = server.client({ apiKey: server.keys.customer, fetch })

  const order = await customer.orders.place({ petId: pet!.id, quantity: 1 })

  assert.deepEqual(order, { id: order.id, petId: pet!.id, quantity: 1, complete: false, expiresAt: order.expiresAt })
  assert.equal(typeof order.expiresAt, 'string', 'an open order is held until a stated time')
  const posts = exchanges.filter((e) => e.method === 'POST')
  assert.equal(posts.length, 2)
  assert.ok(posts[0]!.idempotencyKey !== null && posts[0]!.idempotencyKey === posts[1]!.idempotencyKey, 'both attempts carry one key')
  assert.deepEqual(await staff.orders.list(), [order])
  assert.deepEqual(await staff.inventory.get(pet!.id), { petId: pet!.id, quantity: 4, status: 'available' })
})

test('a 503 to POST /store/orders is retried after Retry-After with the same Idempotency-Key; a 503 to PATCH is not retried', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  const place = server.stores.orders.placeOrder.bind(server.stores.orders)
  let unavailable = 1
  server.stores.orders.placeOrder = async (input, idempotency) => {
    if (unavailable-- > 0) throw new ServiceUnavailableError('the database is unavailable; retry shortly')
    return place(input, idempotency)
  }
  const { fetch, exchanges } = recordingFetch()
  const client = server.client({ apiKey: server.keys.customer, fetch })

  const order = await client.orders.place({ petId: pet!.id, quantity: 1 })

  assert.deepEqual(exchanges.map((e) => [e.method, e.status]), [['POST', 503], ['POST', 201]])
  assert.equal(exchanges[0]!.idempotencyKey, exchanges[1]!.idempotencyKey)
  server.stores.orders.updateOrder = async () => { throw new ServiceUnavailableError('the database is unavailable; retry shortly') }
  const staff = server.client({ fetch })
  await assert.rejects(staff.orders.complete(order.id), { name: 'PetstoreError', status: 503, code: 'service_unavailable', retryAfter: 5 })
  assert.deepEqual(exchanges.slice(2).map((e) => [e.method, e.status]), [['PATCH', 503]])
})

test('pets.all() visits every pet once, in id order, following Link rel="next" page after page', async (t) => {
  const server = await serveForClient(t)
  const pets = await seedPets(server, 7)
  const { fetch, exchanges } = recordingFetch()
  const client = server.client({ fetch })

  const seen = []
  for await (const pet of client.pets.all({ limit: 3 })) seen.push(pet)

  assert.deepEqual(seen, pets)
  assert.equal(exchanges.length, 3)
  assert.match(exchanges[1]!.url, /\/v1\/pets\?limit=3&cursor=/)
})

test('pets.get of a missing id rejects with 404 not_found and the Request-Id of the answer', async (t) => {
  const server = await serveForClient(t)
  const { fetch, exchanges } = recordingFetch()
  const client = server.client({ fetch })

  const error = await client.pets.get(424242).then(() => null, (e: unknown) => e)

  assert.ok(error instanceof PetstoreError)
  assert.deepEqual(
    { status: error.status, code: error.code, requestId: error.requestId, retryAfter: error.retryAfter },
    { status: 404, code: 'not_found', requestId: exchanges[0]!.requestId, retryAfter: null }
  )
  assert.ok(error.requestId !== null)
  assert.deepEqual(exchanges.map((e) => [e.method, new URL(e.url).pathname + new URL(e.url).search]), [['GET', '/v1/pets?id=424242']])
})

test('pets.get of an existing id resolves to the pet; a validation_failed carries its details', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  const client = server.client()
  assert.deepEqual(await client.pets.get(pet!.id), pet)

  const error = await client.pets.update(pet!.id, { name: '' }).then(() => null, (e: unknown) => e)
  assert.ok(error instanceof PetstoreError)
  assert.equal(error.code, 'validation_failed')
  assert.equal(error.status, 400)
  assert.ok(Array.isArray(error.details) && error.details.length > 0, JSON.stringify(error.details))
})

test('503s that never stop: a GET is retried maxRetries times honouring Retry-After, then rejects with the last 503', async (t) => {
  const server = await serveForClient(t)
  server.stores.pets.listPets = async () => { throw new ServiceUnavailableError('the database is unavailable; retry shortly') }
  const { fetch, exchanges } = recordingFetch()
  const waits: number[] = []
  const client = server.client({
    fetch,
    maxRetries: 2,
    sleep: async (ms) => { waits.push(ms); server.clock.advance(ms) }
  })

  const error = await client.pets.list().then(() => null, (e: unknown) => e)

  assert.ok(error instanceof PetstoreError)
  assert.deepEqual(exchanges.map((e) => e.status), [503, 503, 503])
  assert.deepEqual(
    { status: error.status, code: error.code, requestId: error.requestId, retryAfter: error.retryAfter },
    { status: 503, code: 'service_unavailable', requestId: exchanges[2]!.requestId, retryAfter: 5 }
  )
  assert.equal(waits.length, 2)
  for (const ms of waits) assert.ok(ms >= 5000 && ms < 6000, `waited ${ms} ms: Retry-After plus jitter`)
})

test('network errors that never stop: a GET rejects with the last network error after maxRetries retries with backoff', async (t) => {
  const server = await serveForClient(t)
  let n = 0
  const { fetch, exchanges } = recordingFetch(async () => { throw new TypeError(`fetch failed ${++n}`) })
  const waits: number[] = []
  const client = server.client({ fetch, maxRetries: 3, random: () => 0.5, sleep: async (ms) => { waits.push(ms) } })

  await assert.rejects(client.pets.list(), { name: 'TypeError', message: 'fetch failed 4' })
  assert.equal(exchanges.length, 4)
  assert.deepEqual(waits, [250, 500, 1000], 'full jitter (0.5 here) of 500 ms doubling')
})

test('a PUT, and a POST without Idempotency-Key, are never retried: a network error rejects at once', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  const { fetch, exchanges } = recordingFetch(async () => { throw new TypeError('fetch failed') })
  const client = server.client({ fetch })

  await assert.rejects(client.inventory.set(pet!.id, 3), { name: 'TypeError' })
  await assert.rejects(client.categories.create({ name: 'Cats' }), { name: 'TypeError' }, 'a POST without Idempotency-Key is not retried either')
  assert.equal(exchanges.length, 2)
})

test('onDeprecation fires once per operation, with the Deprecation, Sunset and successor of its answers', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  // A second deprecated operation: this wrapper marks GET /categories as a server would.
  const { fetch } = recordingFetch(async (input, init) => {
    const response = await globalThis.fetch(input, init)
    if (new URL(String(input)).pathname !== '/v1/categories') return response
    const headers = new Headers(response.headers)
    headers.set('deprecation', '@1767225600')
    return new Response(await response.arrayBuffer(), { status: response.status, headers })
  })
  const notices: DeprecationNotice[] = []
  const client = server.client({ fetch, onDeprecation: (notice) => notices.push(notice) })

  assert.deepEqual(await client.request('get', '/pets/{petId}', { path: { petId: pet!.id } }), pet)
  await client.request('get', '/pets/{petId}', { path: { petId: pet!.id } })
  await client.categories.list()
  await client.categories.list()
  await client.pets.list()

  assert.deepEqual(notices, [
    { method: 'GET', path: '/pets/{petId}', deprecation: new Date('2026-11-21T00:00:00Z'), sunset: new Date('2027-05-21T00:00:00Z'), successor: `/v1/pets?id=${pet!.id}` },
    { method: 'GET', path: '/categories', deprecation: new Date('2026-01-01T00:00:00Z'), sunset: null, successor: null }
  ])
})

test('the resource methods reach their operations: categories, orders (place, get, complete, cancel), inventory', async (t) => {
  const server = await serveForClient(t)
  const staff = server.client()
  const customer = server.client({ apiKey: server.keys.customer })
  const category = await staff.categories.create({ name: 'Birds' })
  assert.deepEqual(await staff.categories.get(category.id), category)
  assert.deepEqual(await staff.categories.replace(category.id, { name: 'Parrots' }), { ...category, name: 'Parrots' })
  const pet = await staff.pets.create({ name: 'Polly', categoryId: category.id }, { idempotencyKey: 'polly-1' })
  assert.deepEqual(await staff.pets.create({ name: 'Polly', categoryId: category.id }, { idempotencyKey: 'polly-1' }), pet, 'a replay returns the first result')
  assert.deepEqual(await staff.pets.replace(pet.id, { name: 'Polly II', categoryId: category.id }), { ...pet, name: 'Polly II' })
  await staff.inventory.set(pet.id, 2)

  const first = await customer.orders.place({ petId: pet.id, quantity: 1 })
  const second = await customer.orders.place({ petId: pet.id, quantity: 1 })
  assert.deepEqual(await customer.orders.get(first.id), first)
  const completed = await staff.orders.complete(first.id, '2026-11-22T10:00:00.000Z')
  // A complete order is no longer held, so it has no expiry (issue 19 item 6).
  assert.deepEqual(completed, { ...first, complete: true, expiresAt: null, shipDate: '2026-11-22T10:00:00.000Z' })
  assert.equal(await customer.orders.cancel(second.id), undefined)
  const all = []
  for await (const order of staff.orders.all()) all.push(order)
  assert.deepEqual(all, [completed])
  assert.deepEqual(await staff.pets.update(pet.id, { status: 'available' }), { ...pet, name: 'Polly II', status: 'available' })
  assert.equal(await staff.pets.delete(pet.id), undefined)
  assert.equal(await staff.pets.get(pet.id).then(() => 'found', (e: PetstoreError) => e.code), 'not_found')
  assert.deepEqual(await customer.rateLimit().then((r) => [r.role, r.plan, r.ban]), ['customer', 'enterprise', null])
})

test('callbacks that throw or reject never fail or stall a call: after maxConcurrency throwing onRateLimit calls, later calls still run (issue 18.3)', async (t) => {
  // Catches: the client called onRateLimit / onDeprecation before it released the request's
  // concurrency slot, so each throw rejected the call and leaked a slot, and after
  // maxConcurrency throws every later call waited forever.
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  const { key } = await server.makeKey('customer', 'enterprise', { perMinute: 20, perDay: 1000 })
  let rateLimitCalls = 0
  let deprecationCalls = 0
  const client = server.client({
    apiKey: key,
    maxConcurrency: 2,
    onRateLimit: () => { rateLimitCalls++; throw new Error('onRateLimit failed') },
    // An async callback that rejects: an unhandled rejection would fail this test.
    onDeprecation: async () => { deprecationCalls++; throw new Error('onDeprecation failed') }
  })

  assert.deepEqual(await client.request('get', '/pets/{petId}', { path: { petId: pet!.id } }), pet)
  // Requests 2 to 20 of the minute; the 19th and 20th leave less than 10% and call onRateLimit.
  for (let i = 0; i < 19; i++) assert.deepEqual(await client.pets.list(), [pet])
  assert.deepEqual({ rateLimitCalls, deprecationCalls }, { rateLimitCalls: 2, deprecationCalls: 1 })
  // Both slots would have leaked by now: these wait for the next minute and are served.
  const pages = await Promise.all(Array.from({ length: 5 }, () => client.pets.list()))

  assert.deepEqual(pages, Array.from({ length: 5 }, () => [pet]))
  const status = await client.rateLimit()
  assert.equal(status.windows.day.remaining, 1000 - 25, 'every call reached the server')
})
