// The webhook operations on both engines (docs/product.md, webhooks): create, list, get, change,
// delete, who may subscribe to what, the limit per key holder, and the SSRF refusal at creation.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { webhookApp, subscribe } from './helpers.ts'

test('create answers 201 with the endpoint and its secret once; get, list, change and delete follow', async (t) => {
  const app = await webhookApp(t)
  const created = await app.call({ method: 'POST', url: '/v1/webhooks', role: 'customer', payload: { url: 'http://127.0.0.1:9/hook', types: ['order.*', 'webhook.disabled'], description: 'mine' } })
  assert.equal(created.statusCode, 201)
  const body = created.json()
  assert.match(body.id, /^wh_[0-9a-f]{24}$/)
  assert.match(body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  assert.equal(created.headers.location, `/v1/webhooks/${body.id}`)
  assert.deepEqual(
    { url: body.url, types: body.types, description: body.description, status: body.status },
    { url: 'http://127.0.0.1:9/hook', types: ['order.*', 'webhook.disabled'], description: 'mine', status: 'enabled' }
  )
  assert.ok(!Number.isNaN(Date.parse(body.createdAt)))

  const got = await app.call({ method: 'GET', url: `/v1/webhooks/${body.id}`, role: 'customer' })
  assert.equal(got.statusCode, 200)
  assert.equal(got.json().secret, undefined, 'the secret is shown only once')
  assert.equal(got.json().url, body.url)

  const patched = await app.call({ method: 'PATCH', url: `/v1/webhooks/${body.id}`, role: 'customer', payload: { types: ['order.created'], description: 'changed', status: 'disabled' } })
  assert.equal(patched.statusCode, 200)
  assert.deepEqual([patched.json().types, patched.json().description, patched.json().status], [['order.created'], 'changed', 'disabled'])
  assert.equal((await app.call({ method: 'GET', url: `/v1/webhooks/${body.id}`, role: 'customer' })).json().status, 'disabled', 'the change is stored')

  assert.equal((await app.call({ method: 'DELETE', url: `/v1/webhooks/${body.id}`, role: 'customer' })).statusCode, 204)
  assert.equal((await app.call({ method: 'GET', url: `/v1/webhooks/${body.id}`, role: 'customer' })).statusCode, 404)
  assert.equal((await app.call({ method: 'DELETE', url: `/v1/webhooks/${body.id}`, role: 'customer' })).statusCode, 404)
})

test('a key holder sees and changes only its own endpoints; an admin sees every one', async (t) => {
  const app = await webhookApp(t)
  const other = await app.makeKey('customer')
  const mine = await subscribe(app, 'http://127.0.0.1:9/a', ['order.*'], app.keys.customer)
  const theirs = await subscribe(app, 'http://127.0.0.1:9/b', ['order.*'], other.key)
  const staffs = await subscribe(app, 'http://127.0.0.1:9/c', ['pet.*'], app.keys.staff)

  const ids = async (key: string) => (await app.call({ method: 'GET', url: '/v1/webhooks', key })).json().map((w: { id: string }) => w.id)
  assert.deepEqual(await ids(app.keys.customer), [mine.id])
  assert.deepEqual(await ids(other.key), [theirs.id])
  assert.deepEqual(await ids(app.keys.staff), [staffs.id])
  assert.deepEqual(await ids(app.keys.admin), [mine.id, theirs.id, staffs.id])

  for (const [method, suffix] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/rotate_secret'], ['POST', '/test'], ['GET', '/deliveries']] as const) {
    const response = await app.call({
      method,
      url: `/v1/webhooks/${theirs.id}${suffix}`,
      role: 'customer',
      ...(method === 'PATCH' && { payload: { status: 'disabled' } })
    })
    assert.equal(response.statusCode, 404, `${method} ${suffix}: another holder's endpoint does not exist for the caller`)
  }
  assert.equal((await app.call({ method: 'GET', url: `/v1/webhooks/${theirs.id}`, key: other.key })).json().status, 'enabled', 'untouched')
  assert.equal((await app.call({ method: 'PATCH', url: `/v1/webhooks/${theirs.id}`, role: 'admin', payload: { status: 'disabled' } })).statusCode, 200, 'an admin may change any')

  const page = await app.call({ method: 'GET', url: '/v1/webhooks?limit=2', role: 'admin' })
  assert.equal(page.json().length, 2)
  const next = /<([^>]+)>; rel="next"/.exec(page.headers.link as string)![1]!
  assert.deepEqual(
    (await app.call({ method: 'GET', url: next, role: 'admin' })).json().map((w: { id: string }) => w.id),
    [staffs.id]
  )
})

test('a type the caller may never see is 403, an unknown type 400, the eleventh endpoint 409', async (t) => {
  const app = await webhookApp(t)
  const post = (types: string[], role: 'customer' | 'staff' = 'customer') => app.call({ method: 'POST', url: '/v1/webhooks', role, payload: { url: 'http://127.0.0.1:9/x', types } })

  for (const types of [['pet.created'], ['order.*', 'inventory.low'], ['category.*']]) {
    const refused = await post(types)
    assert.equal(refused.statusCode, 403, types.join())
    assert.equal(refused.json().code, 'forbidden')
  }
  assert.equal((await post(['pet.created'], 'staff')).statusCode, 201, 'staff sees the catalogue')
  for (const types of [['order.shipped'], ['pets.*'], ['order']]) {
    const refused = await post(types)
    assert.equal(refused.statusCode, 400, types.join())
    assert.equal(refused.json().code, 'validation_failed')
  }
  assert.equal((await app.call({
    method: 'PATCH',
    url: `/v1/webhooks/${(await subscribe(app, 'http://127.0.0.1:9/y', ['order.*'], app.keys.customer)).id}`,
    role: 'customer',
    payload: { types: ['pet.*'] }
  })).statusCode, 403, 'a change is checked too')

  for (let i = 2; i <= 10; i++) assert.equal((await post(['order.*'])).statusCode, 201, `endpoint ${i}`)
  const eleventh = await post(['order.*'])
  assert.equal(eleventh.statusCode, 409)
  assert.equal(eleventh.json().code, 'webhook_limit_reached')
  assert.equal((await app.call({ method: 'GET', url: '/v1/webhooks?limit=100', role: 'customer' })).json().length, 10, 'nothing stored')
  assert.equal((await post(['order.*'], 'staff')).statusCode, 201, 'the limit is per key holder')
})

test('a URL the guard refuses is 400 webhook_url_forbidden at creation and at a change', async (t) => {
  const app = await webhookApp(t, {
    resolve: async (host) => host === 'metadata.example'
      ? [{ address: '169.254.169.254', family: 4 }]
      : [{ address: '93.184.215.14', family: 4 }]
  })
  for (const url of ['https://10.0.0.1/x', 'https://169.254.169.254/latest', 'https://[::1]/x', 'https://[::ffff:127.0.0.1]/x', 'https://100.64.0.1/', 'https://metadata.example/x', 'http://public.example/x', 'https://user:pw@public.example/x', 'http://127.0.0.2/x']) {
    const refused = await app.call({ method: 'POST', url: '/v1/webhooks', role: 'customer', payload: { url, types: ['order.*'] } })
    assert.equal(refused.statusCode, 400, url)
    assert.equal(refused.json().code, 'webhook_url_forbidden', url)
    assert.doesNotMatch(refused.body, /169\.254|93\.184/, 'the answer never names a resolved address')
  }
  const ok = await subscribe(app, 'https://public.example/x', ['order.*'], app.keys.customer)
  const changed = await app.call({ method: 'PATCH', url: `/v1/webhooks/${ok.id}`, role: 'customer', payload: { url: 'https://metadata.example/x' } })
  assert.equal(changed.json().code, 'webhook_url_forbidden')
  assert.equal((await app.call({ method: 'GET', url: `/v1/webhooks/${ok.id}`, role: 'customer' })).json().url, 'https://public.example/x')
})
