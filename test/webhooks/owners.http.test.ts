// Live owners only (issue 48 finding 3, docs/product.md 13.6): an endpoint receives events while
// its owner, the rotation chain of a key, has a live key. From the moment the chain has none
// (expired, revoked, or rotated with no live successor) it receives nothing, and says why:
// `disabled`, reason `owner_inactive`, in its view and in a webhook.disabled event. Both engines
// (PETSTORE_TEST_ENGINE=postgres).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { pollUntil } from '../helpers/server.ts'
import type { TestApp } from '../helpers/app.ts'
import { startReceiver } from './receiver.ts'
import { received, subscribe, verified, webhookApp } from './helpers.ts'

async function createCategory (app: TestApp, name: string): Promise<void> {
  assert.equal((await app.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name } })).statusCode, 201)
}

async function makeKey (app: TestApp, payload: object): Promise<{ id: number; key: string }> {
  const response = await app.call({ method: 'POST', url: '/v1/admin/keys', role: 'admin', payload: { plan: 'pro', ...payload } })
  assert.equal(response.statusCode, 201, response.body)
  return response.json()
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

test('an expired key\'s endpoint gets nothing after the expiry, and says disabled: owner_inactive', async (t) => {
  const app = await webhookApp(t)
  // Time enough to subscribe and see one delivery first, on a busy machine too.
  const expiresAt = Date.now() + 5000
  const staff = await makeKey(app, { role: 'staff', expiresAt: new Date(expiresAt).toISOString() })
  const receiver = await startReceiver(t)
  const admins = await startReceiver(t)
  const endpoint = await subscribe(app, receiver, ['category.*'], staff.key)
  const adminEndpoint = await subscribe(app, admins, ['webhook.disabled'], app.keys.admin)

  await createCategory(app, 'Before')
  const [before] = await received(receiver, 1)
  assert.equal((verified(before!, endpoint.secret).data as { name: string }).name, 'Before')
  assert.ok(Date.now() < expiresAt, 'delivered while the key lived')

  await sleep(expiresAt - Date.now() + 50)
  await createCategory(app, 'After')
  await sleep(500)
  assert.equal(receiver.received.length, 1, 'nothing after the expiry')

  const view = (await app.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}`, role: 'admin' })).json()
  assert.deepEqual([view.status, view.disabledReason], ['disabled', 'owner_inactive'])
  const [notice] = await received(admins, 1)
  const event = verified(notice!, adminEndpoint.secret)
  assert.equal(event.type, 'webhook.disabled')
  assert.deepEqual(
    [(event.data as { id: string }).id, (event.data as { reason: string }).reason],
    [endpoint.id, 'owner_inactive']
  )
})

test('a rotated key\'s endpoint keeps receiving through its successor; a revoked chain\'s gets nothing', async (t) => {
  const app = await webhookApp(t)
  const staff = await makeKey(app, { role: 'staff' })
  const receiver = await startReceiver(t)
  const endpoint = await subscribe(app, receiver, ['category.*'], staff.key)
  // Grace 0: the first key expires at once; its successor is the same key holder.
  const rotated = await app.call({ method: 'POST', url: `/v1/admin/keys/${staff.id}/rotate`, role: 'admin', payload: { gracePeriodSeconds: 0 } })
  assert.equal(rotated.statusCode, 201, rotated.body)
  await sleep(50)
  await createCategory(app, 'Rotated')
  await received(receiver, 1)
  assert.equal((await app.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}`, role: 'admin' })).json().status, 'enabled')

  assert.equal((await app.call({ method: 'DELETE', url: `/v1/admin/keys/${rotated.json().id}`, role: 'admin' })).statusCode, 204)
  await pollUntil(async () => {
    const view = (await app.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}`, role: 'admin' })).json()
    return view.disabledReason === 'owner_inactive' ? view : undefined
  }, { timeoutMs: 3000, message: 'disabled: owner_inactive' })
  await createCategory(app, 'Revoked')
  await sleep(500)
  assert.equal(receiver.received.length, 1, 'nothing once the chain has no live key')
})
