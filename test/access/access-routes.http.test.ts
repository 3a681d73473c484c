// The guard decides on the route the router matched, never on the spelling of the URL
// (docs/product.md section 3). Every operation of the OpenAPI document is sent without a key,
// with a customer key and with a staff key, in every spelling a client can give the same path,
// and with an admin key in the plain one, over a real socket, and each answer's status is
// asserted exactly: 401, 403, the operation's success status, or 404 for the spellings that are
// not the canonical path. Who may call and what succeeds are read from the document, not from
// the routes' config, so a guard that disagrees with the document fails here.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { test } from 'node:test'
import type { FeedPosition } from '../../src/events/events.store.ts'
import { ROLES, ROLE_RANK, type Role } from '../../src/accounts/plans.ts'
import { roleAllows, type Scope } from '../../src/accounts/scopes.ts'
import { loadSampleData } from '../../src/sample-data.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { exampleOf, type Doc, type Operation } from '../openapi/requests.ts'

type Document = Doc & { security?: unknown[] }
type DocumentedOperation = Operation & { 'x-required-scopes'?: Scope[] }

/**
 * `key`: the key to call with instead of the caller's default one (an operation that uses it up,
 * such as a self-rotation).
 */
interface Prepared { path: string; body?: unknown; key?: string }
/** What the document cannot say about an operation; everything else is derived from it (see documentedTarget). */
interface Fixture {
  /**
   * The least role, only when it is above the one its scopes imply (the document names scopes,
   * not roles); a row that states the implied role, or a lower one, fails.
   */
  role?: Role
  /**
   * A fresh target for one call that is expected to succeed, made as admin; `caller` is the key
   * that will call. The body defaults to the documented example.
   */
  prepare?: (h: Harness, caller: Role) => Promise<Prepared>
}
interface Harness extends TestApp {
  ids: {
    pet: (stock?: number) => Promise<number>
    order: (role: Role) => Promise<number>
    event: (role: Role) => Promise<string>
    webhook: (role: Role) => Promise<string>
    /** An attempt of one of the caller's endpoints, made to a real receiver on 127.0.0.1. */
    attempt: (role: Role) => Promise<{ webhookId: string; attemptId: string }>
    clearWebhooks: (role: Role) => Promise<void>
  }
}

/**
 * The operations whose target the document's examples cannot make: a caller's own records (an
 * order, an event or a webhook endpoint the caller may see, a key it uses up), a stock the
 * example's pet lacks, a role above what the scopes imply.
 */
const FIXTURES: Record<string, Fixture> = {
  // The example's pet has one in stock: each call orders from a fresh pet with five.
  'POST /store/orders': { prepare: async (h) => ({ path: '/store/orders', body: { petId: await h.ids.pet(5), quantity: 1 } }) },
  'GET /store/orders/{orderId}': { prepare: async (h, caller) => ({ path: `/store/orders/${await h.ids.order(caller)}` }) },
  // orders:write is a customer's (to cancel its own), but only staff complete or reschedule.
  'PATCH /store/orders/{orderId}': { role: 'staff', prepare: async (h, caller) => ({ path: `/store/orders/${await h.ids.order(caller)}` }) },
  'DELETE /store/orders/{orderId}': { prepare: async (h, caller) => ({ path: `/store/orders/${await h.ids.order(caller)}` }) },
  // A key is rotated once: each call rotates a fresh key of the caller's role.
  'POST /keys/me/rotate': { prepare: async (h, caller) => ({ path: '/keys/me/rotate', key: (await h.makeKey(caller)).key }) },
  'GET /events/{eventId}': { prepare: async (h, caller) => ({ path: `/events/${await h.ids.event(caller)}` }) },
  'POST /webhooks': { prepare: async (h, caller) => { await h.ids.clearWebhooks(caller); return { path: '/webhooks' } } },
  'GET /webhooks/{webhookId}': { prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}` }) },
  'PATCH /webhooks/{webhookId}': { prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}` }) },
  'DELETE /webhooks/{webhookId}': { prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}` }) },
  'POST /webhooks/{webhookId}/rotate_secret': { prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}/rotate_secret` }) },
  'POST /webhooks/{webhookId}/test': { prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}/test` }) },
  'GET /webhooks/{webhookId}/deliveries': { prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}/deliveries` }) },
  'POST /webhooks/{webhookId}/replay': { prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}/replay` }) },
  'POST /webhooks/{webhookId}/recover': { prepare: async (h, caller) => ({ path: `/webhooks/${await h.ids.webhook(caller)}/recover` }) },
  'GET /webhooks/{webhookId}/attempts/{attemptId}': {
    prepare: async (h, caller) => {
      const { webhookId, attemptId } = await h.ids.attempt(caller)
      return { path: `/webhooks/${webhookId}/attempts/${attemptId}` }
    }
  }
}

// A public literal address passes the URL guard without DNS; the test app never connects to it.
const HOOK_URL = 'https://93.184.215.14/petstore-hook'

/**
 * The least role the document gives an operation: none when it needs no key (`security: []`);
 * else the least role that can hold one of its `x-required-scopes` (a restricted key needs those
 * its role can hold, so GET /events, which names `keys:admin` too, is a customer's), or the least
 * of all when it names none (the caller's own views).
 */
function documentedRole (doc: Document, op: DocumentedOperation): Role | 'none' {
  if ((op.security ?? doc.security ?? []).length === 0) return 'none'
  const scopes = op['x-required-scopes'] ?? []
  return ROLES.find((role) => scopes.length === 0 || scopes.some((scope) => roleAllows(role, scope)))!
}

/** The lowest 2xx status the document lists for the operation. */
const documentedSuccess = (op: Operation): number => Math.min(
  ...Object.keys(op.responses).map(Number).filter((s) => s >= 200 && s < 300)
)

/** The operation's documented JSON request body, or undefined when it takes none. */
function documentedBody (doc: Document, op: Operation): unknown {
  const media = op.requestBody?.content['application/json']
  return media === undefined ? undefined : exampleOf(doc, media).value
}

/**
 * The default target: each path parameter a fresh record made as admin by POSTing the documented
 * body to the collection that creates it (the path C with a POST whose C/{param} is in the
 * document: /store/inventory/{petId} takes a pet from POST /pets), that collection's own
 * parameters filled first, the same way. Header and query parameters are left out: none is
 * required, and the example Idempotency-Key would replay the first record instead of making one.
 */
async function documentedTarget (h: Harness, doc: Document, template: string): Promise<Prepared> {
  const chosen = new Map<string, string>()
  const fill = async (path: string): Promise<string> => {
    for (const match of path.matchAll(/\{(\w+)\}/g)) {
      const name = match[1]!
      if (chosen.has(name)) continue
      const collection = Object.keys(doc.paths).find(
        (c) => doc.paths[c]!.post !== undefined && doc.paths[`${c}/{${name}}`] !== undefined
      )
      if (collection === undefined) throw new Error(`${template}: no POST in the document makes {${name}}; give the operation a row in FIXTURES`)
      const url = await fill(collection)
      const res = await h.call({
        method: 'POST',
        url: `/v1${url}`,
        payload: documentedBody(doc, doc.paths[collection]!.post!) as object
      })
      assert.equal(res.statusCode, 201, `setup POST ${url} for ${template}: ${res.body}`)
      chosen.set(name, String(res.json().id))
    }
    return path.replace(/\{(\w+)\}/g, (_, name: string) => chosen.get(name)!)
  }
  return { path: await fill(template) }
}

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

/**
 * Nobody, customer and staff in every spelling; admin in the plain one only, so that every
 * operation, the admin-only ones too, answers its success at least once, at a twenty-first of the
 * cost of every spelling.
 */
const callersOf = (spelling: { name: string }): Array<Role | null> => spelling.name === 'plain' ? [null, 'customer', 'staff', 'admin'] : [null, 'customer', 'staff']

/** One HTTP/1.1 request written as is on a socket, so the request target reaches the server untouched. */
async function raw (
  port: number,
  method: string,
  target: string,
  headers: Record<string, string>,
  body?: unknown
): Promise<{ status: number; text: string }> {
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
  // A receiver for the endpoints whose attempts are read (the others name a public address the
  // test app never reaches).
  const receiver = createServer((_request, response) => { response.writeHead(204).end() })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => { receiver.closeAllConnections(); receiver.close(() => { resolve() }) }))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  const base = await buildTestApp(t, { env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } })
  // The document's examples name records of the sample data (category 1 of POST /pets).
  assert.equal(await loadSampleData(base.stores, base.clock), true)
  const create = async (url: string, payload: unknown, key?: string) => {
    const res = await base.call({ method: 'POST', url, payload: payload as object, ...(key !== undefined && { key }) })
    assert.equal(res.statusCode, 201, `setup POST ${url}: ${res.body}`)
    return res.json().id as number
  }
  const ids: Harness['ids'] = {
    pet: async (stock = 1) => {
      const id = await create('/v1/pets', { name: 'Tom', categoryId: await create('/v1/categories', { name: 'Cats' }) })
      if (stock !== 1) {
        const res = await base.call({ method: 'PUT', url: `/v1/store/inventory/${id}`, payload: { quantity: stock } })
        assert.equal(res.statusCode, 200)
      }
      return id
    },
    // A customer may see and cancel only its own orders, so the order is placed by the caller.
    order: async (role) => create('/v1/store/orders', { petId: await ids.pet(5), quantity: 1 }, base.keys[role]),
    // An event the caller may see: its own order's order.created (the feed shows it once older
    // transactions on the database server have ended).
    event: async (role) => {
      const orderId = await ids.order(role)
      for (let i = 0; i < 100; i++) {
        let after: FeedPosition | null = null
        for (;;) {
          const page = await base.stores.events.listEvents({
            visibility: { role: 'admin' },
            types: { exact: ['order.created'], prefixes: [] },
            after,
            limit: 100
          })
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
    },
    attempt: async (role) => {
      await ids.clearWebhooks(role)
      const key = base.keys[role]
      const made = await base.call({ method: 'POST', url: '/v1/webhooks', payload: { url: receiverUrl, types: ['order.created'] }, key })
      assert.equal(made.statusCode, 201, `setup POST /v1/webhooks: ${made.body}`)
      const webhookId = made.json().id as string
      const sent = await base.call({ method: 'POST', url: `/v1/webhooks/${webhookId}/test`, key })
      assert.equal(sent.statusCode, 202, `setup POST /v1/webhooks/${webhookId}/test: ${sent.body}`)
      for (let i = 0; i < 200; i++) {
        const listed = await base.call({ method: 'GET', url: `/v1/webhooks/${webhookId}/deliveries`, key })
        const attempt = (listed.json() as Array<{ id?: string }>).find((d) => d.id !== undefined)
        if (attempt?.id !== undefined) return { webhookId, attemptId: attempt.id }
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      throw new Error(`no attempt of ${webhookId} recorded`)
    }
  }
  await base.app.listen({ port: 0, host: '127.0.0.1' })
  const address = base.app.server.address()
  assert.ok(address !== null && typeof address === 'object')
  return { h: { ...base, ids }, port: address.port }
}

test('every operation in every spelling answers exactly 401 without a key, 403 below its role and its success status otherwise', async (t) => {
  const { h, port } = await harness(t)
  const document = h.app.swagger() as unknown as Document
  const operations: Array<{ operation: string; method: string; template: string; op: DocumentedOperation }> = []
  for (const [template, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item)) {
      operations.push({ operation: `${method.toUpperCase()} ${template}`, method: method.toUpperCase(), template, op })
    }
  }

  // The table cannot drift from the document: a row names an operation of it, and a role it
  // states is one the document does not already imply (higher: the document gives a floor).
  const stale: string[] = []
  for (const [operation, fixture] of Object.entries(FIXTURES)) {
    const found = operations.find((o) => o.operation === operation)
    if (found === undefined) stale.push(`${operation}: not in the document`)
    else if (fixture.role !== undefined) {
      const implied = documentedRole(document, found.op)
      if (implied === 'none' || ROLE_RANK[fixture.role] <= ROLE_RANK[implied]) stale.push(`${operation}: states role ${fixture.role}, the document implies ${implied}`)
    }
  }
  assert.deepEqual(stale, [])

  const failures: string[] = []
  const succeeded = new Set<string>()
  for (const { operation, method, template, op } of operations) {
    const fixture = FIXTURES[operation]
    const needed = fixture?.role ?? documentedRole(document, op)
    const success = documentedSuccess(op)
    const body = documentedBody(document, op)
    // GET routes answer HEAD too, under the same guard.
    for (const verb of method === 'GET' ? ['GET', 'HEAD'] : [method]) {
      for (const spelling of SPELLINGS) {
        for (const caller of callersOf(spelling)) {
          // Anonymous calls are charged to the address at the free quota: a new minute for each.
          h.clock.advance(60_000)
          const prepared = fixture?.prepare !== undefined
            ? await fixture.prepare(h, caller ?? 'customer')
            : await documentedTarget(h, document, template)
          const { path, key } = prepared
          // Role none (POST /keys/leaked) needs no key: served whoever calls.
          const expected = !spelling.canonical
            ? 404
            : needed === 'none' ? success : caller === null ? 401 : ROLE_RANK[caller] < ROLE_RANK[needed] ? 403 : success
          const headers: Record<string, string> = caller === null ? {} : { 'X-API-Key': key ?? h.keys[caller] }
          const sent = 'body' in prepared ? prepared.body : body
          const res = await raw(port, verb, spelling.target(path, port), headers, verb === 'HEAD' ? undefined : sent)
          const where = `${verb} ${template} (${spelling.name}) as ${caller ?? 'nobody'}`
          if (res.status !== expected) failures.push(`${where}: ${res.status}, expected ${expected}`)
          else if (expected === success) succeeded.add(operation)
          if (!/\r\nx-ratelimit-limit: \d+\r\n/i.test(res.text)) failures.push(`${where}: no X-RateLimit-Limit`)
        }
      }
    }
  }
  assert.deepEqual(failures, [])
  // Every operation of the document was served, not only refused.
  assert.deepEqual([...succeeded].sort(), operations.map((o) => o.operation).sort())
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
