// The resource methods and their helpers in src/index.ts (pets.get, the Idempotency-Key source)
// against the real server, one behaviour per test: each pins a fault that mutation testing of the
// file's second half showed the other client tests would let through (docs/testing.md, "Mutation
// testing"). A file of its own, so an incremental `npm run mutate -- client` reuses what the other
// test files already killed.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runInNewContext } from 'node:vm'
import { PetstoreError, type DeprecationNotice } from '../src/index.ts'
import { recordingFetch, seedPets, serveForClient } from './helpers.ts'

test('pets.get of a missing id rejects with the message "pet ID not found"', async (t) => {
  const server = await serveForClient(t)
  const error = await server.client().pets.get(424242).then(() => null, (e: unknown) => e)
  assert.ok(error instanceof PetstoreError)
  assert.deepEqual([error.status, error.code, error.message], [404, 'not_found', 'pet 424242 not found'])
})

test('pets.get is the operation GET /pets: a deprecation of GET /pets is noticed once, under the path /pets, whether pets.get or pets.list meets it first', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  // A server that deprecates GET /pets, as the onDeprecation test of client.test.ts marks GET /categories.
  const { fetch } = recordingFetch(async (input, init) => {
    const response = await globalThis.fetch(input, init)
    if (new URL(String(input)).pathname !== '/v1/pets') return response
    const headers = new Headers(response.headers)
    headers.set('deprecation', '@1767225600')
    return new Response(await response.arrayBuffer(), { status: response.status, headers })
  })
  const notices: DeprecationNotice[] = []
  const client = server.client({ fetch, onDeprecation: (notice) => notices.push(notice) })
  assert.deepEqual(await client.pets.get(pet!.id), pet)
  assert.deepEqual(await client.pets.list(), [pet])
  assert.deepEqual(notices, [{ method: 'GET', path: '/pets', deprecation: new Date('2026-01-01T00:00:00Z'), sunset: null, successor: null }])
})

test('with crypto.randomUUID, the Idempotency-Key is the UUID it returns, and getRandomValues is not used', async (t) => {
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  const categoryId = (pet as unknown as { categoryId: number }).categoryId
  const { fetch, exchanges } = recordingFetch()
  const client = server.client({ fetch })
  const real = Object.getOwnPropertyDescriptor(globalThis, 'crypto')!
  t.after(() => { Object.defineProperty(globalThis, 'crypto', real) })
  let filled = 0
  const uuids = ['1b4e28ba-2fa1-41d2-883f-0016d3cca427', '6fa459ea-ee8a-4ca4-894e-db77e160355e']
  Object.defineProperty(globalThis, 'crypto', {
    configurable: true,
    value: {
      randomUUID: () => uuids.shift(),
      getRandomValues: (bytes: Uint8Array) => { filled++; return bytes.fill(0x0a) }
    }
  })
  await client.pets.create({ name: 'A', categoryId })
  await client.pets.create({ name: 'B', categoryId })
  Object.defineProperty(globalThis, 'crypto', real)
  assert.deepEqual(exchanges.map((e) => e.idempotencyKey), ['1b4e28ba-2fa1-41d2-883f-0016d3cca427', '6fa459ea-ee8a-4ca4-894e-db77e160355e'])
  assert.equal(filled, 0)
})

test('a notice that returns a rejected promise of another realm (a vm context, another frame) leaves no unhandled rejection', async (t) => {
  // Catches: notify() caught only `instanceof Promise`, which another realm's promise fails.
  const server = await serveForClient(t)
  const [pet] = await seedPets(server, 1)
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => { unhandled.push(reason) }
  process.on('unhandledRejection', onUnhandled)
  t.after(() => { process.off('unhandledRejection', onUnhandled) })
  const ForeignPromise = runInNewContext('Promise') as PromiseConstructor
  let calls = 0
  const client = server.client({
    onDeprecation: () => {
      calls++
      const rejected = ForeignPromise.reject(new Error('onDeprecation failed in another realm'))
      assert.equal(rejected instanceof Promise, false, 'the promise is of another realm')
      return rejected
    }
  })
  assert.deepEqual(await client.request('get', '/pets/{petId}', { path: { petId: pet!.id } }), pet)
  // Unhandled rejections are reported once the microtask queue drains: two turns of the loop.
  await new Promise((resolve) => setImmediate(resolve))
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(calls, 1)
  assert.deepEqual(unhandled, [])
})
