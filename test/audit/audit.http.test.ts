// The audit log through HTTP, on both engines: who changed what, written with the change (and
// none with a refused one), no secret in any entry, customers' own orders left out, the head,
// the filters and the cursor.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

interface Entry {
  id: number
  at: string
  actor: { type: string; keyId?: number; role?: string; user?: string }
  action: string
  target: { type: string; id: string }
  requestId: string | null
  address: string | null
  changes: Record<string, { before?: unknown; after?: unknown }>
  hash: string
}

async function entries (h: TestApp, query = ''): Promise<Entry[]> {
  const res = await h.call({ method: 'GET', url: `/v1/admin/audit${query}` })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

async function head (h: TestApp): Promise<{ count: number; hash: string }> {
  const res = await h.call({ method: 'GET', url: '/v1/admin/audit/head' })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

async function petOf (h: TestApp, staffKey: string): Promise<number> {
  const category = await h.call({ method: 'POST', url: '/v1/categories', key: staffKey, payload: { name: 'Fish' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', key: staffKey, payload: { name: 'Goldie', categoryId: category.json().id } })
  assert.equal(pet.statusCode, 201, pet.body)
  return pet.json().id
}

test('a staff pet update leaves one entry: the staff key, pet.update, the pet, the request id and address, the values written', async (t) => {
  const h = await buildTestApp(t)
  const staff = await h.makeKey('staff')
  const petId = await petOf(h, staff.key)
  const before = await head(h)
  const res = await h.call({ method: 'PATCH', url: `/v1/pets/${petId}`, key: staff.key, payload: { name: 'Nemo' }, remoteAddress: '192.0.2.7' })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal((await head(h)).count, before.count + 1)
  const [entry] = await entries(h, '?limit=1')
  assert.deepEqual({ ...entry, hash: undefined }, {
    id: before.count + 1,
    at: new Date(T0).toISOString(),
    actor: { type: 'key', keyId: staff.id, role: 'staff' },
    action: 'pet.update',
    target: { type: 'pet', id: String(petId) },
    requestId: res.headers['request-id'],
    address: '192.0.2.7',
    changes: entry!.changes,
    hash: undefined
  })
  assert.deepEqual(entry!.changes, { name: { before: 'Goldie', after: 'Nemo' } })
  assert.match(entry!.hash, /^[0-9a-f]{64}$/)
  // The pet's creation was recorded before it, by the same key, as a create (before null).
  const [created] = await entries(h, `?action=pet.create&targetId=${petId}`)
  assert.equal(created!.actor.keyId, staff.id)
  assert.deepEqual(created!.changes.name, { before: null, after: 'Goldie' })
})

test('an admin key revoke leaves one entry: the admin key, key.revoke, the key revoked; no entry ever holds a key or its hash', async (t) => {
  const h = await buildTestApp(t)
  const admin = await h.makeKey('admin')
  const made = await h.call({ method: 'POST', url: '/v1/admin/keys', key: admin.key, payload: { name: 'Partner', role: 'customer', plan: 'pro' } })
  assert.equal(made.statusCode, 201, made.body)
  const { id, key } = made.json() as { id: number; key: string }
  const revoked = await h.call({ method: 'DELETE', url: `/v1/admin/keys/${id}`, key: admin.key })
  assert.equal(revoked.statusCode, 204, revoked.body)
  const rotated = await h.call({ method: 'POST', url: `/v1/admin/keys/${admin.id}/rotate`, key: admin.key, payload: {} })
  assert.equal(rotated.statusCode, 201, rotated.body)
  const successor = rotated.json() as { id: number; key: string }

  const [revoke] = await entries(h, `?action=key.revoke&targetId=${id}`)
  assert.equal(revoke!.action, 'key.revoke')
  assert.deepEqual(revoke!.actor, { type: 'key', keyId: admin.id, role: 'admin' })
  assert.deepEqual(revoke!.target, { type: 'key', id: String(id) })
  assert.equal(revoke!.requestId, revoked.headers['request-id'])
  assert.equal(typeof revoke!.changes.revokedAt?.after, 'string')
  const [create] = await entries(h, `?action=key.create&targetId=${id}`)
  assert.deepEqual(create!.changes.name, { before: null, after: 'Partner' })
  assert.deepEqual(create!.changes.role, { before: null, after: 'customer' })
  const [rotate] = await entries(h, `?action=key.rotate&targetId=${admin.id}`)
  assert.deepEqual(rotate!.changes, { replacedBy: { before: null, after: successor.id } })

  const everything = JSON.stringify(await entries(h, '?limit=100'))
  for (const secret of [key, successor.key]) {
    assert.equal(everything.includes(secret), false, 'a key in the log')
    assert.equal(everything.includes(createHash('sha256').update(secret).digest('hex')), false, 'a key\'s hash in the log')
  }
})

test('an entry commits or rolls back with its change: a refused If-Match change leaves none', async (t) => {
  const h = await buildTestApp(t)
  const petId = await petOf(h, h.keys.staff)
  const before = await head(h)
  const stale = await h.call({ method: 'PATCH', url: `/v1/pets/${petId}`, role: 'staff', headers: { 'if-match': '"99"' }, payload: { name: 'Lost' } })
  assert.equal(stale.statusCode, 412)
  const gone = await h.call({ method: 'DELETE', url: '/v1/categories/999', role: 'staff' })
  assert.equal(gone.statusCode, 404)
  assert.deepEqual(await head(h), before)
})

test('customers\' own orders are not audited; staff changes to orders are', async (t) => {
  const h = await buildTestApp(t)
  const customer = await h.makeKey('customer')
  const staff = await h.makeKey('staff')
  const petId = await petOf(h, staff.key)
  await h.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, key: staff.key, payload: { quantity: 5 } })
  const before = await head(h)
  const own = await h.call({ method: 'POST', url: '/v1/store/orders', key: customer.key, payload: { petId, quantity: 1 } })
  assert.equal(own.statusCode, 201, own.body)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/store/orders/${own.json().id}`, key: customer.key })).statusCode, 204)
  assert.deepEqual(await head(h), before, 'a customer placing and cancelling its order')
  // Another customer (the first one cools down after its cancel, rule 11).
  const other = await h.call({ method: 'POST', url: '/v1/store/orders', key: (await h.makeKey('customer')).key, payload: { petId, quantity: 1 } })
  assert.equal(other.statusCode, 201, other.body)
  const orderId = other.json().id as number
  const shipped = await h.call({ method: 'PATCH', url: `/v1/store/orders/${orderId}`, key: staff.key, payload: { complete: true } })
  assert.equal(shipped.statusCode, 200, shipped.body)
  const [complete] = await entries(h, '?limit=1')
  assert.equal(complete!.action, 'order.complete')
  assert.deepEqual(complete!.actor, { type: 'key', keyId: staff.id, role: 'staff' })
  assert.deepEqual(complete!.target, { type: 'order', id: String(orderId) })
  assert.equal(complete!.changes.complete?.after, true)
  const stock = await entries(h, `?action=inventory.update&targetId=${petId}`)
  assert.equal(stock.length, 1)
  assert.equal(stock[0]!.changes.quantity?.after, 5)
})

test('the head answers the count and the last hash; each hash chains the previous one', async (t) => {
  const h = await buildTestApp(t)
  for (const name of ['A', 'B', 'C']) await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name } })
  const all = await entries(h, '?limit=100')
  const top = await head(h)
  assert.equal(top.count, all.length)
  assert.equal(top.hash, all[0]!.hash)
  assert.deepEqual(all.map((e) => e.id), all.map((_, i) => all.length - i), 'ids 1 … n, newest first')
  assert.equal(new Set(all.map((e) => e.hash)).size, all.length)
})

test('filters: actor (a key id, system), action (exact, family), target, since and until; pages newest first through Link', async (t) => {
  const h = await buildTestApp(t)
  const staff = await h.makeKey('staff')
  const ids: number[] = []
  for (const name of ['A', 'B', 'C', 'D', 'E']) {
    ids.push((await h.call({ method: 'POST', url: '/v1/categories', key: staff.key, payload: { name } })).json().id)
    h.clock.advance(60_000)
  }
  assert.equal((await h.call({ method: 'PUT', url: `/v1/categories/${ids[0]}`, key: staff.key, payload: { name: 'A2' } })).statusCode, 200)

  const mine = await entries(h, `?actor=${staff.id}`)
  assert.deepEqual(mine.map((e) => e.action), ['category.update', 'category.create', 'category.create', 'category.create', 'category.create', 'category.create'])
  // The test app's own keys and this staff key were made outside any request: the system's.
  const system = await entries(h, '?actor=system&limit=100')
  assert.ok(system.length >= 4 && system.every((e) => e.actor.type === 'system' && e.action === 'key.create'))
  assert.equal((await entries(h, '?action=category.*')).length, 6)
  assert.equal((await entries(h, '?action=category.update')).length, 1)
  assert.equal((await entries(h, '?action=key.*&limit=100')).length, system.length)
  const history = await entries(h, `?targetType=category&targetId=${ids[0]}`)
  assert.deepEqual(history.map((e) => e.action), ['category.update', 'category.create'])
  const window = await entries(h, `?action=category.create&since=${new Date(T0 + 60_000).toISOString()}&until=${new Date(T0 + 180_000).toISOString()}`)
  assert.deepEqual(window.map((e) => e.target.id), [String(ids[2]), String(ids[1])])

  const seen: number[] = []
  let url: string | null = `/v1/admin/audit?action=category.*&limit=4`
  while (url !== null) {
    const res = await h.call({ method: 'GET', url })
    assert.equal(res.statusCode, 200)
    seen.push(...(res.json() as Entry[]).map((e) => e.id))
    const link = res.headers.link as string | undefined
    url = link === undefined ? null : `/v1/admin/audit${/<[^>]*?(\?[^>]*)>/.exec(link)![1]}`
  }
  assert.equal(seen.length, 6)
  assert.deepEqual(seen, [...seen].sort((a, b) => b - a))

  const bad = await h.call({ method: 'GET', url: '/v1/admin/audit?actor=nobody' })
  assert.equal(bad.statusCode, 400)
  assert.equal(bad.json().code, 'validation_failed')
})

test('only an admin reads the log; there is no way to change it through the API', async (t) => {
  const h = await buildTestApp(t)
  for (const role of ['customer', 'staff'] as const) {
    assert.equal((await h.call({ method: 'GET', url: '/v1/admin/audit', role })).statusCode, 403)
    assert.equal((await h.call({ method: 'GET', url: '/v1/admin/audit/head', role })).statusCode, 403)
  }
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
    assert.equal((await h.app.inject({ method, url: '/v1/admin/audit', headers: { 'x-api-key': h.keys.admin } })).statusCode, 405)
  }
})

test('writes of several callers committed together each name their own actor (SQLite\'s writer batches them)', async (t) => {
  const h = await buildTestApp(t)
  const staff = await Promise.all([h.makeKey('staff'), h.makeKey('staff'), h.makeKey('staff'), h.makeKey('staff')])
  const made = await Promise.all(staff.map((s, i) => h.call({ method: 'POST', url: '/v1/categories', key: s.key, payload: { name: `C${i}` } })))
  for (const [i, res] of made.entries()) {
    assert.equal(res.statusCode, 201)
    const [entry] = await entries(h, `?targetType=category&targetId=${res.json().id}`)
    assert.deepEqual(entry!.actor, { type: 'key', keyId: staff[i]!.id, role: 'staff' })
    assert.equal(entry!.requestId, res.headers['request-id'])
  }
})
