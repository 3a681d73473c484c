// The guard decides on the route the router matched, never on the spelling of the URL
// (docs/product.md section 3). Every operation of the OpenAPI document is sent without a key,
// with a customer key and with a staff key, in every spelling a client can give the same path,
// over a real socket, and each answer's status is asserted exactly: 401, 403, the operation's
// success status, or 404 for the spellings that are not the canonical path.
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test } from 'node:test'
import type { FeedPosition } from '../../src/events/events.store.ts'
import type { Role } from '../../src/accounts/plans.ts'
import { ROLE_RANK } from '../../src/accounts/plans.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

/** `key`: the key to call with instead of the caller's default one (an operation that uses it up, such as a self-rotation). */
interface Prepared { path: string; body?: unknown; key?: string }
interface Fixture {
  /** The least role the product gives the operation (docs/product.md section 3); none: no key needed. */
  role: Role | 'none'
  success: number
  /** A fresh target for one call that is expected to succeed, made as admin; `caller` is the key that will call. */
  prepare (h: Harness, caller: Role): Promise<Prepared>
}
interface Harness extends TestApp { ids: { category: () => Promise<number>; pet: (stock?: number) => Promise<number>; order: (role: Role) => Promise<number>; key: () => Promise<number>; event: (role: Role) => Promise<string>; webhook: (role: Role) => Promise<string>; clearWebhooks: (role: Role) => Promise<void> } }

const FIXTURES: Record<string, Fixture> = {
  'GET /pets': { role: 'customer', success: 200, prepare: async () => ({ path: '/pets' }) },
  'POST /pets': { role: 'staff', success: 201, prepare: async (h) => ({ path: '/pets', body: { name: 'Rex', categoryId: await h.ids.category() } }) },
  'GET /pets/{petId}': { role: 'customer', success: 200, prepare: async (h) => ({ path: `/pets/${await h.ids.pet()}` }) },
  'PUT /pets/{petId}': { role: 'staff', success: 200, prepare: async (h) => ({ path: `/pets/${await h.ids.pet()}`, body: { name: 'Max', categoryId: await h.ids.category() } }) },
  'PATCH /pets/{petId}': { role: 'staff', success: 200, prepare: async (h) => ({ path: `/pets/${await h.ids.pet()}`, body: { name: 'Max' } }) },
  'DELETE /pets/{petId}': { role: 'staff', success: 204, prepare: async (h) => ({ path: `/pets/${await h.ids.pet()}` }) },
  'GET /categories': { role: 'customer', success: 200, prepare: async () => ({ path: '/categories' }) },
  'POST /categories': { role: 'staff', success: 201, prepare: async () => ({ path: '/categories', body: { name: 'Dogs' } }) },
  'GET /categories/{categoryId}': { role: 'customer', success: 200, prepare: async (h) => ({ path: `/categories/${await h.ids.category()}` }) },
  'PUT /categories/{categoryId}': { role: 'staff', success: 200, prepare: async (h) => ({ path: `/categories/${await h.ids.category()}`, body: { name: 'Hounds' } }) },
  'DELETE /categories/{categoryId}': { role: 'staff', success: 204, prepare: async (h) => ({ path: `/categories/${await h.ids.category()}` }) },
  'GET /store/inventory': { role: 'customer', success: 200, prepare: async () => ({ path: '/store/inventory' }) },
  'GET /store/inventory/{petId}': { role: 'customer', success: 200, prepare: async (h) => ({ path: `/store/inventory/${await h.ids.pet()}` }) },
  'PUT /store/inventory/{petId}': { role: 'staff', success: 200, prepare: async (h) => ({ path: `/store/inventory/${await h.ids.pet()}`, body: { quantity: 7 } }) },
  'GET /store/orders': { role: 'customer', success: 200, prepare: async () => ({ path: '/store/orders' }) },
  'POST /store/orders': { role: 'customer', success: 201, prepare: async (h) => ({ path: '/store/orders', body: { petId: await h.ids.pet(5), quantity: 1 } }) },
  'GET /store/orders/{orderId}': { role: 'customer', success: 200, prepare: async (h, caller) => ({ path: `/store/orders/${await h.ids.order(caller)}` }) },
  'PATCH /store/orders/{orderId}': { role: 'staff', success: 200, prepare: async (h, caller) => ({ path: `/store/orders/${await h.ids.order(caller)}`, body: { complete: true } }) },
  'DELETE /store/orders/{orderId}': { role: 'customer', success: 204, prepare: async (h, caller) => ({ path: `/store/orders/${await h.ids.order(caller)}` }) },
  'GET /admin/keys': { role: 'admin', success: 200, prepare: async () => ({ path: '/admin/keys' }) },
  'POST /admin/keys': { role: 'admin', success: 201, prepare: async () => ({ path: '/admin/keys', body: { role: 'admin', plan: 'enterprise', perMinute: 1000000, perDay: 100000000 } }) },
  'GET /admin/keys/{keyId}': { role: 'admin', success: 200, prepare: async (h) => ({ path: `/admin/keys/${await h.ids.key()}` }) },
  'PATCH /admin/keys/{keyId}': { role: 'admin', success: 200, prepare: async (h) => ({ path: `/admin/keys/${await h.ids.key()}`, body: { role: 'admin' } }) },
  'DELETE /admin/keys/{keyId}': { role: 'admin', success: 204, prepare: async (h) => ({ path: `/admin/keys/${await h.ids.key()}` }) },
  'POST /admin/keys/{keyId}/rotate': { role: 'admin', success: 201, prepare: async (h) => ({ path: `/admin/keys/${await h.ids.key()}/rotate`, body: { gracePeriodSeconds: 60 } }) },
  'GET /admin/keys/{keyId}/usage': { role: 'admin', success: 200, prepare: async (h) => ({ path: `/admin/keys/${await h.ids.key()}/usage` }) },
  'DELETE /admin/keys/{keyId}/ban': { role: 'admin', success: 204, prepare: async (h) => ({ path: `/admin/keys/${await h.ids.key()}/ban` }) },
  'GET /admin/keys/{keyId}/rate_limit': { role: 'admin', success: 200, prepare: async (h) => ({ path: `/admin/keys/${await h.ids.key()}/rate_limit` }) },
  'GET /admin/keys/{keyId}/bans': { role: 'admin', success: 200, prepare: async (h) => ({ path: `/admin/keys/${await h.ids.key()}/bans` }) },
  'GET /admin/deprecations': { role: 'admin', success: 200, prepare: async () => ({ path: '/admin/deprecations' }) },
  'GET /admin/audit': { role: 'admin', success: 200, prepare: async () => ({ path: '/admin/audit' }) },
  'GET /admin/audit/head': { role: 'admin', success: 200, prepare: async () => ({ path: '/admin/audit/head' }) },
  'POST /keys/leaked': { role: 'none', success: 202, prepare: async () => ({ path: '/keys/leaked', body: { keys: ['psk_not-a-key'] } }) },
  'GET /rate_limit': { role: 'customer', success: 200, prepare: async () => ({ path: '/rate_limit' }) },
  'GET /keys/me': { role: 'customer', success: 200, prepare: async () => ({ path: '/keys/me' }) },
  'GET /keys/me/usage': { role: 'customer', success: 200, prepare: async () => ({ path: '/keys/me/usage' }) },
  'GET /keys/me/bans': { role: 'customer', success: 200, prepare: async () => ({ path: '/keys/me/bans' }) },
  // A key is rotated once: each call rotates a fresh key of the caller's role.
  'POST /keys/me/rotate': { role: 'customer', success: 201, prepare: async (h, caller) => ({ path: '/keys/me/rotate', body: { gracePeriodSeconds: 60 }, key: (await h.makeKey(caller)).key }) },
  'GET /events': { role: 'customer', success: 200, prepare: async () => ({ path: '/events' }) },
  'GET /events/{eventId}': { role: 'customer', success: 200, prepare: async (h, caller) => ({ path: `/events/${await h.ids.event(caller)}` }) },
  // A public literal address passes the URL guard without DNS; the test app never connects to it.
  'POST /webhooks': { role: 'customer', success: 201, prepare: async (h, caller) => { await h.ids.clearWebhooks(caller); return { path: '/webhooks', body: { url: HOOK_URL, types: ['order.created'] } } } },
  'GET /webhooks': { role: 'customer', success: 200, prepare: async () => ({ path: '/webhooks' }) },
  'GET /webhooks/{webhookId}': { role: 'customer', success: 200, prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}` }) },
  'PATCH /webhooks/{webhookId}': { role: 'customer', success: 200, prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}`, body: { description: 'changed' } }) },
  'DELETE /webhooks/{webhookId}': { role: 'customer', success: 204, prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}` }) },
  'POST /webhooks/{webhookId}/rotate_secret': { role: 'customer', success: 200, prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}/rotate_secret` }) },
  'POST /webhooks/{webhookId}/test': { role: 'customer', success: 202, prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}/test` }) },
  'GET /webhooks/{webhookId}/deliveries': { role: 'customer', success: 200, prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}/deliveries` }) },
  'POST /webhooks/{webhookId}/replay': { role: 'customer', success: 202, prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}/replay`, body: { since: '2026-01-01T00:00:00.000Z' } }) }
}

const HOOK_URL = 'https://93.184.215.14/petstore-hook'

/**
 * The spellings of one path. The router decodes percent-escapes and takes the path of an
 * absolute-form target, so those reach the route and are guarded like the plain form; a trailing
 * or doubled slash is not the canonical path and matches nothing (404, charged, never served).
 */
const SPELLINGS: Array<{ name: string; target: (path: string, port: number) => string; canonical: boolean }> = [
  { name: 'plain', target: (p) => `/v1${p}`, canonical: true },
  { name: '/v%31', target: (p) => `/v%31${p}`, canonical: true },
  { name: '/%761', target: (p) => `/%761${p}`, canonical: true },
  { name: '/%76%31', target: (p) => `/%76%31${p}`, canonical: true },
  { name: 'absolute-form', target: (p, port) => `http://127.0.0.1:${port}/v1${p}`, canonical: true },
  { name: 'trailing slash', target: (p) => `/v1${p}/`, canonical: false },
  { name: 'doubled slash', target: (p) => `/v1/${p}`, canonical: false }
]

const CALLERS: Array<Role | null> = [null, 'customer', 'staff']

/** One HTTP/1.1 request written as is on a socket, so the request target reaches the server untouched. */
async function raw (port: number, method: string, target: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; text: string }> {
  const payload = body === undefined ? '' : JSON.stringify(body)
  const lines = [`${method} ${target} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Connection: close']
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
  if (body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(payload)}`)
  const socket = connect(port, '127.0.0.1')
  // write, not end: a client that half-closes makes Node abort the request still in flight (its
  // http server does not allow half-open sockets), which an answer waiting on PostgreSQL is;
  // Connection: close has the server end the socket after its answer.
  socket.write(lines.join('\r\n') + '\r\n\r\n' + payload)
  const chunks: Buffer[] = []
  for await (const chunk of socket) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1])
  return { status, text }
}

async function harness (t: Parameters<typeof buildTestApp>[0]): Promise<{ h: Harness; port: number }> {
  const base = await buildTestApp(t)
  const create = async (url: string, payload: unknown, key?: string) => {
    const res = await base.call({ method: 'POST', url, payload: payload as object, ...(key !== undefined && { key }) })
    assert.equal(res.statusCode, 201, `setup POST ${url}: ${res.body}`)
    return res.json().id as number
  }
  const ids: Harness['ids'] = {
    category: async () => create('/v1/categories', { name: 'Cats' }),
    pet: async (stock = 1) => {
      const id = await create('/v1/pets', { name: 'Tom', categoryId: await ids.category() })
      if (stock !== 1) assert.equal((await base.call({ method: 'PUT', url: `/v1/store/inventory/${id}`, payload: { quantity: stock } })).statusCode, 200)
      return id
    },
    // A customer may see and cancel only its own orders, so the order is placed by the caller.
    order: async (role) => create('/v1/store/orders', { petId: await ids.pet(5), quantity: 1 }, base.keys[role]),
    key: async () => (await base.makeKey('customer', 'free')).id,
    // An event the caller may see: its own order's order.created (the feed shows it once older
    // transactions on the database server have ended).
    event: async (role) => {
      const orderId = await ids.order(role)
      for (let i = 0; i < 100; i++) {
        let after: FeedPosition | null = null
        for (;;) {
          const page = await base.stores.events.listEvents({ visibility: { role: 'admin' }, types: { exact: ['order.created'], prefixes: [] }, after, limit: 100 })
          const found = page.find((e) => (e.data as { id: number }).id === orderId)
          if (found !== undefined) return found.id
          if (page.length === 0) break
          after = page.at(-1)!.position
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      throw new Error(`no order.created for order ${orderId}`)
    },
    // At most 10 endpoints per holder: each target starts from none.
    clearWebhooks: async (role) => {
      const listed = (await base.call({ method: 'GET', url: '/v1/webhooks?limit=100', key: base.keys[role] })).json() as Array<{ id: string }>
      for (const hook of listed) assert.equal((await base.call({ method: 'DELETE', url: `/v1/webhooks/${hook.id}` })).statusCode, 204)
    },
    webhook: async (role) => {
      await ids.clearWebhooks(role)
      const res = await base.call({ method: 'POST', url: '/v1/webhooks', payload: { url: HOOK_URL, types: ['order.created'] }, key: base.keys[role] })
      assert.equal(res.statusCode, 201, `setup POST /v1/webhooks: ${res.body}`)
      return res.json().id as string
    }
  }
  await base.app.listen({ port: 0, host: '127.0.0.1' })
  const address = base.app.server.address()
  assert.ok(address !== null && typeof address === 'object')
  return { h: { ...base, ids }, port: address.port }
}

test('every operation in every spelling answers exactly 401 without a key, 403 below its role and its success status otherwise', async (t) => {
  const { h, port } = await harness(t)
  const document = h.app.swagger() as { paths: Record<string, Record<string, unknown>> }
  const operations: string[] = []
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of Object.keys(item)) operations.push(`${method.toUpperCase()} ${path}`)
  }
  // The table covers the document exactly: a new operation needs its fixture (and its role) here.
  assert.deepEqual([...operations].sort(), Object.keys(FIXTURES).sort())

  const failures: string[] = []
  for (const operation of operations) {
    const [method, template] = operation.split(' ') as [string, string]
    const fixture = FIXTURES[operation]!
    // GET routes answer HEAD too, under the same guard.
    for (const verb of method === 'GET' ? ['GET', 'HEAD'] : [method]) {
      for (const spelling of SPELLINGS) {
        for (const caller of CALLERS) {
          // Anonymous calls are charged to the address at the free quota: a new minute for each.
          h.clock.advance(60_000)
          const { path, body, key } = await fixture.prepare(h, caller ?? 'customer')
          // Role none (POST /keys/leaked) needs no key: served whoever calls.
          const needed = fixture.role
          const expected = !spelling.canonical
            ? 404
            : needed === 'none' ? fixture.success : caller === null ? 401 : ROLE_RANK[caller] < ROLE_RANK[needed] ? 403 : fixture.success
          const headers: Record<string, string> = caller === null ? {} : { 'X-API-Key': key ?? h.keys[caller] }
          const res = await raw(port, verb, spelling.target(path, port), headers, verb === 'HEAD' ? undefined : body)
          const where = `${verb} ${template} (${spelling.name}) as ${caller ?? 'nobody'}`
          if (res.status !== expected) failures.push(`${where}: ${res.status}, expected ${expected}`)
          if (!/\r\nx-ratelimit-limit: \d+\r\n/i.test(res.text)) failures.push(`${where}: no X-RateLimit-Limit`)
        }
      }
    }
  }
  assert.deepEqual(failures, [])
})

test('the reproduction of the bypass answers 401: an admin key cannot be made without a key, however /v1 is spelled', async (t) => {
  const { h, port } = await harness(t)
  const body = { role: 'admin', plan: 'enterprise', perMinute: 1000000, perDay: 100000000 }
  for (const target of ['/v%31/admin/keys', '/%761/admin/keys', '/%76%31/admin/keys', `http://127.0.0.1:${port}/v1/admin/keys`, `http://evil.example/v%31/admin/keys`]) {
    const res = await raw(port, 'POST', target, {}, body)
    assert.equal(res.status, 401, target)
    assert.match(res.text, /"code":"unauthenticated"/)
  }
  assert.equal((await h.call({ method: 'GET', url: '/v1/admin/keys' })).json().length, 3, 'no key was made')
})

test('GET /v%31/rate_limit answers like /v1/rate_limit: 401 without a key, 200 with one', async (t) => {
  const { h } = await harness(t)
  const anonymous = await h.app.inject({ method: 'GET', url: '/v%31/rate_limit' })
  assert.equal(anonymous.statusCode, 401)
  assert.equal(anonymous.json().code, 'unauthenticated')
  const keyed = await h.app.inject({ method: 'GET', url: '/v%31/rate_limit', headers: { 'x-api-key': h.keys.customer } })
  assert.equal(keyed.statusCode, 200)
  assert.equal(keyed.json().role, 'customer')
})

test('a malformed URL under /v1 is charged however /v1 is spelled: 400 with the rate-limit headers', async (t) => {
  const { port } = await harness(t)
  for (const target of ['/v1/categories/%E0%A4%A', '/v%31/categories/%E0%A4%A', `http://127.0.0.1:${port}/v1/categories/%E0%A4%A`]) {
    const res = await raw(port, 'GET', target, {})
    assert.equal(res.status, 400, target)
    assert.match(res.text, /"code":"validation_failed"/)
    assert.match(res.text, /\r\nx-ratelimit-remaining: \d+\r\n/i, target)
  }
})
