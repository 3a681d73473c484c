// The audit log's second part (issue 32), on both engines: webhook endpoints created, changed,
// rotated, replayed and deleted leave an entry each (never a secret); updates record each changed
// field before and after, and nothing else; a refused change leaves none; `petstore audit verify`
// still finds the chain intact.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'
import { requireService, skippedTestEnd } from '../helpers/services.ts'
import { TEST_DATABASE_URL, TEST_ENGINE, testPostgresReason } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'
import { schemaDatabaseUrl } from '../scale/helpers.ts'

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))
// The dispatcher waits a minute between rounds: the replay below finds the category's event not yet
// waiting for a delivery (however slow the machine), so it queues it.
const HOOKS = { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '60000' }

interface Entry {
  id: number
  at: string
  actor: { type: string; keyId?: number; role?: string }
  action: string
  target: { type: string; id: string }
  requestId: string | null
  changes: Record<string, { before?: unknown; after?: unknown }>
}

async function headCount (h: TestApp): Promise<number> {
  const res = await h.call({ method: 'GET', url: '/v1/admin/audit/head' })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().count
}

/** The entries appended since the head counted `since`, oldest first. */
async function entriesSince (h: TestApp, since: number): Promise<Entry[]> {
  const res = await h.call({ method: 'GET', url: '/v1/admin/audit?limit=100' })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json() as Entry[]).filter((entry) => entry.id > since).reverse()
}

/** Runs `act` and returns the one entry it appended (fails on none or several). */
async function oneEntry (
  h: TestApp,
  act: () => Promise<{ statusCode: number; body: string }>,
  status: number
): Promise<Entry> {
  const before = await headCount(h)
  const res = await act()
  assert.equal(res.statusCode, status, res.body)
  const made = await entriesSince(h, before)
  assert.equal(made.length, 1, JSON.stringify(made))
  return made[0]!
}

test('each webhook action (create, replay, rotate_secret, PATCH, delete) leaves one entry: the actor, the action, the endpoint, never a secret', async (t) => {
  const h = await buildTestApp(t, { env: HOOKS })
  const staff = await h.makeKey('staff')
  const actor = { type: 'key', keyId: staff.id, role: 'staff' }
  const url = 'http://127.0.0.1:9/hook'

  const secrets: string[] = []
  let created = { statusCode: 0, body: '', headers: {} as Record<string, unknown> }
  const create = await oneEntry(h, async () => {
    created = await h.call({ method: 'POST', url: '/v1/webhooks', key: staff.key, payload: { url, types: ['category.*'] } })
    return created
  }, 201)
  const hook = JSON.parse(created.body) as { id: string; secret: string }
  secrets.push(hook.secret)
  const target = { type: 'webhook', id: hook.id }
  assert.deepEqual(
    { actor: create.actor, action: create.action, target: create.target, requestId: create.requestId },
    { actor, action: 'webhook.create', target, requestId: created.headers['request-id'] }
  )
  assert.deepEqual(create.changes, {
    id: { before: null, after: hook.id },
    ownerKeyId: { before: null, after: staff.id },
    url: { before: null, after: url },
    types: { before: null, after: ['category.*'] },
    description: { before: null, after: null },
    status: { before: null, after: 'enabled' }
  })

  // One event to replay: a category created a second before.
  assert.equal((await h.call({ method: 'POST', url: '/v1/categories', key: staff.key, payload: { name: 'Birds' } })).statusCode, 201)
  h.clock.advance(1000)
  let queued = 0
  const replay = await oneEntry(h, async () => {
    const res = await h.call({
      method: 'POST',
      url: `/v1/webhooks/${hook.id}/replay`,
      key: staff.key,
      payload: { since: new Date(T0 - 60_000).toISOString() }
    })
    queued = res.json().queued
    return res
  }, 202)
  assert.equal(queued, 1)
  assert.deepEqual({ actor: replay.actor, action: replay.action, target: replay.target }, { actor, action: 'webhook.replay', target })
  // The range's end defaults to the replay's instant, included (the service's until is exclusive).
  const until = new Date(Date.parse(replay.at) + 1).toISOString()
  assert.deepEqual(replay.changes, {
    replay: { after: { since: new Date(T0 - 60_000).toISOString(), until } },
    queued: { after: 1 }
  })

  const rotate = await oneEntry(h, async () => {
    const res = await h.call({ method: 'POST', url: `/v1/webhooks/${hook.id}/rotate_secret`, key: staff.key })
    secrets.push(res.json().secret)
    return res
  }, 200)
  assert.deepEqual({ actor: rotate.actor, action: rotate.action, target: rotate.target }, { actor, action: 'webhook.rotate_secret', target })
  assert.deepEqual(rotate.changes, {
    previousSecretUntil: { before: null, after: new Date(Date.parse(rotate.at) + 24 * 3600_000).toISOString() }
  })

  // Disabling by PATCH is this PATCH's entry, not a second webhook.disable.
  const update = await oneEntry(h, () => h.call({
    method: 'PATCH',
    url: `/v1/webhooks/${hook.id}`,
    key: staff.key,
    payload: { description: 'birds', status: 'disabled', url }
  }), 200)
  assert.deepEqual({ actor: update.actor, action: update.action, target: update.target }, { actor, action: 'webhook.update', target })
  assert.deepEqual(update.changes, { description: { before: null, after: 'birds' }, status: { before: 'enabled', after: 'disabled' } }, 'only the fields changed, before and after')

  const remove = await oneEntry(h, () => h.call({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, key: staff.key }), 204)
  assert.deepEqual({ actor: remove.actor, action: remove.action, target: remove.target }, { actor, action: 'webhook.delete', target })
  assert.deepEqual(remove.changes.url, { before: url, after: null })
  assert.deepEqual(remove.changes.status, { before: 'disabled', after: null })

  // Someone else's endpoint (a 404 here) and a deleted one leave nothing.
  const count = await headCount(h)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, key: staff.key })).statusCode, 404)
  assert.equal((await h.call({ method: 'POST', url: `/v1/webhooks/${hook.id}/rotate_secret`, key: staff.key })).statusCode, 404)
  assert.equal(await headCount(h), count)

  const all = JSON.stringify(await entriesSince(h, 0))
  assert.equal(secrets.length, 2)
  assert.ok(secrets.every((secret) => secret.startsWith('whsec_')))
  for (const secret of secrets) assert.ok(!all.includes(secret) && !all.includes(secret.slice('whsec_'.length)), 'no secret in any entry')
  assert.ok(!all.includes('whsec_'), 'no secret in any entry')
})

test('updates record each changed field before and after, nothing else: a pet renamed, a category described, a stock set, an order re-dated and completed', async (t) => {
  const h = await buildTestApp(t)
  const category = (await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })).json()
  const pet = (await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Goldie', categoryId: category.id } })).json()

  const renamed = await oneEntry(h, () => h.call({
    method: 'PATCH',
    url: `/v1/pets/${pet.id}`,
    role: 'staff',
    payload: { name: 'Nemo', status: pet.status }
  }), 200)
  assert.equal(renamed.action, 'pet.update')
  assert.deepEqual(renamed.changes, { name: { before: 'Goldie', after: 'Nemo' } })

  const described = await oneEntry(h, () => h.call({
    method: 'PUT',
    url: `/v1/categories/${category.id}`,
    role: 'staff',
    payload: { name: 'Fish', description: 'Wet' }
  }), 200)
  assert.equal(described.action, 'category.update')
  assert.deepEqual(described.changes, { description: { before: null, after: 'Wet' } })

  const stock = (await h.call({ method: 'GET', url: `/v1/store/inventory/${pet.id}`, role: 'staff' })).json().quantity
  assert.notEqual(stock, 5)
  const stocked = await oneEntry(h, () => h.call({ method: 'PUT', url: `/v1/store/inventory/${pet.id}`, role: 'staff', payload: { quantity: 5 } }), 200)
  assert.equal(stocked.action, 'inventory.update')
  assert.deepEqual(stocked.changes.quantity, { before: stock, after: 5 })
  assert.deepEqual(Object.keys(stocked.changes).filter((field) => field !== 'quantity' && field !== 'status'), [], 'the quantity (and the status it moved), nothing else')

  const order = await h.call({ method: 'POST', url: '/v1/store/orders', role: 'customer', payload: { petId: pet.id, quantity: 1 } })
  assert.equal(order.statusCode, 201, order.body)
  const id = order.json().id
  const redated = await oneEntry(h, () => h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload: { shipDate: '2031-01-02T00:00:00.000Z' } }), 200)
  assert.equal(redated.action, 'order.update')
  assert.deepEqual(Object.keys(redated.changes), ['shipDate'])
  assert.equal(redated.changes.shipDate!.after, '2031-01-02T00:00:00.000Z')
  assert.notEqual(redated.changes.shipDate!.before, '2031-01-02T00:00:00.000Z')
  const completed = await oneEntry(h, () => h.call({ method: 'PATCH', url: `/v1/store/orders/${id}`, role: 'staff', payload: { complete: true } }), 200)
  assert.equal(completed.action, 'order.complete')
  // Completing records the actual ship date (rule 4) and ends the hold: each field before and after.
  assert.deepEqual(completed.changes, {
    complete: { before: false, after: true },
    shipDate: { before: '2031-01-02T00:00:00.000Z', after: completed.at },
    expiresAt: { before: order.json().expiresAt, after: null }
  })
})

test('a refused If-Match change leaves no entry, with before-values or without', async (t) => {
  const h = await buildTestApp(t)
  const category = (await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })).json()
  const pet = (await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Goldie', categoryId: category.id } })).json()
  const count = await headCount(h)
  const stale = { 'if-match': '"99"' }
  assert.equal((await h.call({
    method: 'PATCH',
    url: `/v1/pets/${pet.id}`,
    role: 'staff',
    headers: stale,
    payload: { name: 'Lost' }
  })).statusCode, 412)
  assert.equal((await h.call({
    method: 'PUT',
    url: `/v1/categories/${category.id}`,
    role: 'staff',
    headers: stale,
    payload: { name: 'Lost' }
  })).statusCode, 412)
  assert.equal((await h.call({
    method: 'PUT',
    url: `/v1/store/inventory/${pet.id}`,
    role: 'staff',
    headers: stale,
    payload: { quantity: 9 }
  })).statusCode, 412)
  assert.equal(await headCount(h), count)
})

/** A database of the test's engine that a process can open too, with the app's stores on it. */
async function openDatabase (t: TestContext): Promise<{ env: Record<string, string>; stores: Stores }> {
  if (TEST_ENGINE === 'postgres') {
    if (!requireService(t, await testPostgresReason())) throw skippedTestEnd('PostgreSQL')
    const { schema, url } = await schemaDatabaseUrl(t)
    const stores = await createPostgresStores(TEST_DATABASE_URL, { poolMax: 4, schema })
    t.after(() => stores.close())
    return { env: { DATABASE_URL: url() }, stores }
  }
  const path = join(tempDir(t, 'petstore-audit-'), 'petstore.db')
  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  return { env: { DATABASE_URL: `sqlite:${path}` }, stores }
}

test('petstore audit verify exits 0 after webhook entries and before-and-after updates', async (t) => {
  const db = await openDatabase(t)
  const h = await buildTestApp(t, { stores: db.stores, env: HOOKS })
  const hook = (await h.call({ method: 'POST', url: '/v1/webhooks', role: 'staff', payload: { url: 'http://127.0.0.1:9/hook', types: ['pet.*'] } })).json()
  assert.equal((await h.call({ method: 'POST', url: `/v1/webhooks/${hook.id}/rotate_secret`, role: 'staff' })).statusCode, 200)
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/webhooks/${hook.id}`, role: 'staff', payload: { description: 'x' } })).statusCode, 200)
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })
  assert.equal((await h.call({ method: 'PUT', url: `/v1/categories/${category.json().id}`, role: 'staff', payload: { name: 'Fishes' } })).statusCode, 200)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, role: 'staff' })).statusCode, 204)
  const count = await headCount(h)
  const result = await new Promise<{ code: number; out: string }>((resolve) => {
    const options = { env: { ...process.env, ...db.env }, timeout: 60_000 }
    execFile(process.execPath, [CLI, 'audit', 'verify'], options, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? 1), out: stdout + stderr })
    })
  })
  assert.equal(result.code, 0, result.out)
  assert.match(result.out, new RegExp(`audit log intact: ${count} entries`))
})

test('a key renamed records its name before and after, nothing else; its revocation records why', async (t) => {
  const h = await buildTestApp(t)
  const created = await h.call({ method: 'POST', url: '/v1/admin/keys', payload: { name: 'Partner', role: 'customer', plan: 'free' } })
  assert.equal(created.statusCode, 201, created.body)
  const key = created.json()
  // Fault caught: the key's store handing no before-record (the values after only, every field).
  const renamed = await oneEntry(h, () => h.call({ method: 'PATCH', url: `/v1/admin/keys/${key.id}`, payload: { name: 'Partner shop' } }), 200)
  assert.equal(renamed.action, 'key.update')
  assert.deepEqual(renamed.changes, { name: { before: 'Partner', after: 'Partner shop' } })
  const revoked = await oneEntry(h, () => h.call({ method: 'DELETE', url: `/v1/admin/keys/${key.id}` }), 204)
  assert.equal(revoked.action, 'key.revoke')
  assert.deepEqual(revoked.changes.reason, { after: 'requested' })
})
