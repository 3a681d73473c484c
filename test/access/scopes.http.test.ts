// Restricted keys (docs/product.md 3.6, issue 33 item 6): a key's scopes narrow its role. Each
// operation's scope, listed here one by one, is what the document says (x-required-scopes); a key
// without the scope is answered 403 insufficient_scope before the handler runs (nothing stored,
// no stock taken); scopes outside the role or unknown are 400 and store no key; every view shows
// them and a rotation keeps them. Faults caught: the check missing or after the handler, a route
// declaring the wrong scope, the document out of step with the routes, scopes lost on the way to
// the row, the cache or the successor.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

const FEED = ['catalog:read', 'orders:read', 'inventory:read', 'keys:admin']
const WEBHOOKS = ['webhooks:manage', ...FEED]

/** Every /v1 operation and the scopes a restricted key needs for it (all, of those its role can hold). */
const SCOPE_OF: Record<string, string[]> = {
  listPets: ['catalog:read'], getPet: ['catalog:read'], listCategories: ['catalog:read'], getCategory: ['catalog:read'],
  createPet: ['catalog:write'], replacePet: ['catalog:write'], updatePet: ['catalog:write'], deletePet: ['catalog:write'],
  createCategory: ['catalog:write'], replaceCategory: ['catalog:write'], deleteCategory: ['catalog:write'],
  listOrders: ['orders:read'], getOrder: ['orders:read'],
  placeOrder: ['orders:write'], updateOrder: ['orders:write'], cancelOrder: ['orders:write'],
  listInventory: ['inventory:read'], getInventory: ['inventory:read'], setInventory: ['inventory:write'],
  listApiKeys: ['keys:admin'], createApiKey: ['keys:admin'], getApiKey: ['keys:admin'], updateApiKey: ['keys:admin'],
  revokeApiKey: ['keys:admin'], liftApiKeyBan: ['keys:admin'], rotateApiKey: ['keys:admin'], getApiKeyUsage: ['keys:admin'],
  getApiKeyRateLimit: ['keys:admin'], listApiKeyBans: ['keys:admin'], listApiKeyRequests: ['keys:admin'],
  listDeprecations: ['keys:admin'], listAuditEntries: ['keys:admin'], getAuditHead: ['keys:admin'],
  getRateLimit: [], getMyApiKey: [], getMyApiKeyUsage: [], listMyApiKeyBans: [], listMyApiKeyRequests: [],
  rotateMyApiKey: [], reportLeakedKeys: [], createMyPortalLink: [], createPortalLink: ['keys:admin'],
  listEvents: FEED, getEvent: FEED, listEventTypes: FEED,
  createWebhook: WEBHOOKS, listWebhooks: WEBHOOKS, getWebhook: WEBHOOKS, updateWebhook: WEBHOOKS,
  deleteWebhook: WEBHOOKS,
  rotateWebhookSecret: WEBHOOKS, testWebhook: WEBHOOKS, listWebhookDeliveries: WEBHOOKS, replayWebhook: WEBHOOKS,
  recoverWebhook: WEBHOOKS, getWebhookAttempt: WEBHOOKS
}

interface Operation {
  operationId: string
  description?: string
  'x-required-scopes'?: string[]
  responses: Record<string, { description: string }>
}

test('the document names the scope of every operation, as listed here, and its 403 lists insufficient_scope', async (t) => {
  const h = await buildTestApp(t)
  const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, Operation>> }
  const operations = Object.values(doc.paths).flatMap((item) => Object.values(item))
  assert.deepEqual(operations.map((o) => o.operationId).sort(), Object.keys(SCOPE_OF).sort(), 'the table covers every operation')
  for (const op of operations) {
    const expected = SCOPE_OF[op.operationId]!
    assert.deepEqual(op['x-required-scopes'], expected, op.operationId)
    assert.ok(op.description!.includes(expected.length === 0 ? '**Scope:** none' : `\`${expected[0]!}\``), `${op.operationId}: its description names the scope`)
    assert.equal(op.responses['403']?.description.includes('`insufficient_scope`') ?? false, expected.length > 0, `${op.operationId}: 403 insufficient_scope documented iff it needs a scope`)
  }
})

async function keyWith (
  h: TestApp,
  role: string,
  scopes: string[] | undefined
): Promise<{ id: number; key: string; body: Record<string, unknown> }> {
  const res = await h.call({
    method: 'POST',
    url: '/v1/admin/keys',
    role: 'admin',
    payload: { role, plan: 'pro', ...(scopes !== undefined && { scopes }) }
  })
  assert.equal(res.statusCode, 201, res.body)
  const body = res.json()
  return { id: body.id, key: body.key, body }
}

async function shop (h: TestApp): Promise<number> {
  assert.equal((await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Dogs' } })).statusCode, 201)
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Rex', categoryId: 1 } })
  assert.equal(pet.statusCode, 201)
  assert.equal((await h.call({ method: 'PUT', url: `/v1/store/inventory/${pet.json().id}`, role: 'staff', payload: { quantity: 5 } })).statusCode, 200)
  return pet.json().id
}

const stockOf = async (h: TestApp, petId: number): Promise<number> =>
  (await h.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'staff' })).json().quantity

test('a catalog:read key reads pets and categories, and is refused 403 insufficient_scope for an order, which is not placed', async (t) => {
  const h = await buildTestApp(t)
  const petId = await shop(h)
  const { key } = await keyWith(h, 'customer', ['catalog:read'])
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  assert.equal((await h.call({ method: 'GET', url: '/v1/categories/1', key })).statusCode, 200)
  assert.equal((await h.call({ method: 'GET', url: '/v1/rate_limit', key })).statusCode, 200, 'its own view needs no scope')

  const order = await h.call({ method: 'POST', url: '/v1/store/orders', key, payload: { petId, quantity: 2 } })
  assert.equal(order.statusCode, 403)
  assert.equal(order.json().code, 'insufficient_scope')
  assert.equal(order.json().message, 'this operation needs the orders:write scope; the key is restricted to catalog:read')
  assert.equal(await stockOf(h, petId), 5, 'no stock taken')
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/store/orders', role: 'staff' })).json(), [], 'no order stored')

  for (const [method, url] of [['GET', '/v1/store/orders'], ['GET', '/v1/store/inventory'], ['GET', '/v1/events'], ['GET', '/v1/webhooks']] as const) {
    const res = await h.call({ method, url, key })
    assert.equal(res.statusCode, 403, `${method} ${url}`)
    assert.equal(res.json().code, 'insufficient_scope', `${method} ${url}`)
  }
  // A role check still comes first: a customer key asking for a staff operation is `forbidden`.
  assert.equal((await h.call({ method: 'POST', url: '/v1/pets', key, payload: { name: 'Max', categoryId: 1 } })).json().code, 'forbidden')
})

test('a staff key with orders:read lists orders but cannot place one, nor change the catalogue', async (t) => {
  const h = await buildTestApp(t)
  const petId = await shop(h)
  const { key } = await keyWith(h, 'staff', ['orders:read'])
  assert.equal((await h.call({ method: 'GET', url: '/v1/store/orders', key })).statusCode, 200)
  const order = await h.call({ method: 'POST', url: '/v1/store/orders', key, payload: { petId, quantity: 1 } })
  assert.equal(order.statusCode, 403)
  assert.equal(order.json().code, 'insufficient_scope')
  assert.equal(await stockOf(h, petId), 5)
  const rename = await h.call({ method: 'PATCH', url: `/v1/pets/${petId}`, key, payload: { name: 'Renamed' } })
  assert.equal(rename.json().code, 'insufficient_scope')
  assert.equal((await h.call({ method: 'GET', url: `/v1/pets?id=${petId}`, role: 'staff' })).json()[0].name, 'Rex', 'the pet is unchanged')

  // The feed needs every read its role can hold (keys:admin is not asked of staff).
  const reader = await keyWith(h, 'staff', ['orders:read', 'inventory:read', 'catalog:read'])
  assert.equal((await h.call({ method: 'GET', url: '/v1/events', key: reader.key })).statusCode, 200)
})

test('POST /v1/admin/keys refuses a scope outside the role or unknown (400 validation_failed) and stores no key', async (t) => {
  const h = await buildTestApp(t)
  const count = async (): Promise<number> => ((await h.call({ method: 'GET', url: '/v1/admin/keys?limit=100', role: 'admin' })).json() as unknown[]).length
  const before = await count()
  const cases: [string, string[], string][] = [
    ['customer', ['catalog:read', 'catalog:write'], '/scopes/1'],
    ['staff', ['keys:admin'], '/scopes/0'],
    ['customer', ['pets:read'], '/scopes/0'],
    ['customer', [], '/scopes'],
    ['customer', ['catalog:read', 'catalog:read'], '/scopes']
  ]
  for (const [role, scopes, path] of cases) {
    const res = await h.call({ method: 'POST', url: '/v1/admin/keys', role: 'admin', payload: { role, plan: 'free', scopes } })
    assert.equal(res.statusCode, 400, `${role} ${scopes.join(',')}`)
    assert.equal(res.json().code, 'validation_failed')
    assert.ok((res.json().details as { path: string }[]).some((d) => d.path.startsWith(path)), `${scopes.join(',')}: ${res.body}`)
  }
  assert.equal(await count(), before)
  // Lowering the role below a scope the key holds is refused too.
  const { id } = await keyWith(h, 'staff', ['catalog:write'])
  const lower = await h.call({ method: 'PATCH', url: `/v1/admin/keys/${id}`, role: 'admin', payload: { role: 'customer' } })
  assert.equal(lower.statusCode, 400)
  assert.equal((await h.call({ method: 'GET', url: `/v1/admin/keys/${id}`, role: 'admin' })).json().role, 'staff')
})

test('scopes are shown in every view, in canonical order, and a rotation keeps them for the successor', async (t) => {
  const h = await buildTestApp(t)
  const made = await keyWith(h, 'customer', ['orders:read', 'catalog:read'])
  assert.deepEqual(made.body.scopes, ['catalog:read', 'orders:read'])
  const plain = await keyWith(h, 'customer', undefined)
  assert.equal(plain.body.scopes, null)
  assert.deepEqual((await h.call({ method: 'GET', url: `/v1/admin/keys/${made.id}`, role: 'admin' })).json().scopes, ['catalog:read', 'orders:read'])
  const listed = (await h.call({ method: 'GET', url: '/v1/admin/keys?limit=100', role: 'admin' })).json() as { id: number; scopes: string[] | null }[]
  assert.deepEqual(listed.find((k) => k.id === made.id)!.scopes, ['catalog:read', 'orders:read'])
  assert.equal(listed.find((k) => k.id === plain.id)!.scopes, null)

  const rotated = await h.call({ method: 'POST', url: `/v1/admin/keys/${made.id}/rotate`, role: 'admin', payload: { gracePeriodSeconds: 0 } })
  assert.equal(rotated.statusCode, 201, rotated.body)
  assert.deepEqual(rotated.json().scopes, ['catalog:read', 'orders:read'])
  const successor = rotated.json().key as string
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: successor })).statusCode, 200)
  assert.equal((await h.call({ method: 'POST', url: '/v1/store/orders', key: successor, payload: { petId: 1, quantity: 1 } })).json().code, 'insufficient_scope', 'the successor is restricted as the old key was')
  const stored = await h.stores.keys.getKey(rotated.json().id)
  assert.deepEqual(stored!.scopes, ['catalog:read', 'orders:read'])
})
