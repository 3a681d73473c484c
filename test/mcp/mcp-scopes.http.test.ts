// Restricted keys through MCP (docs/product.md 3.6): tools/list offers a key only the tools its
// role and scopes allow, and a tool outside its scopes called anyway gets the operation's own
// 403 insufficient_scope, with nothing done. Faults caught: tools/list filtered by role only;
// the inner request skipping the scope check.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { listenTestApp } from '../helpers/app.ts'

async function connect (t: TestContext, root: string, key: string): Promise<Client> {
  const client = new Client({ name: 'petstore-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${root}/mcp`), { requestInit: { headers: { 'x-api-key': key } } }))
  t.after(() => client.close())
  return client
}

test('tools/list of a catalog:read key has only the catalogue reads; placeOrder called anyway is 403 insufficient_scope', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const post = (url: string, key: string, body: unknown) => fetch(`${api.baseUrl}${url}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
  assert.equal((await post('/categories', api.keys.staff, { name: 'Dogs' })).status, 201)
  const pet = await (await post('/pets', api.keys.staff, { name: 'Rex', categoryId: 1 })).json() as { id: number }
  const made = await post('/admin/keys', api.keys.admin, { role: 'customer', plan: 'pro', scopes: ['catalog:read'] })
  assert.equal(made.status, 201)
  const { key } = await made.json() as { key: string }

  const agent = await connect(t, root, key)
  const names = (await agent.listTools()).tools.map((tool) => tool.name).sort()
  // The catalogue reads, and the key holder's own operations (no scope needed).
  const own = ['createMyPortalLink', 'getMyApiKey', 'getMyApiKeyUsage', 'getRateLimit', 'listMyApiKeyBans', 'listMyApiKeyRequests', 'reportLeakedKeys', 'rotateMyApiKey']
  assert.deepEqual(names, [...own, 'getCategory', 'getPet', 'listCategories', 'listPets'].sort())

  const listed = await agent.callTool({ name: 'listPets', arguments: {} }) as {
    isError?: boolean
    structuredContent?: { data: { id: number }[] }
  }
  assert.equal(listed.isError, undefined)
  assert.deepEqual(listed.structuredContent!.data.map((p) => p.id), [pet.id])

  const refused = await agent.callTool({ name: 'placeOrder', arguments: { body: { petId: pet.id, quantity: 1 } } }) as {
    isError?: boolean
    structuredContent?: { status: number; error: { code: string } }
  }
  assert.equal(refused.isError, true)
  assert.equal(refused.structuredContent!.status, 403)
  assert.equal(refused.structuredContent!.error.code, 'insufficient_scope')
  const orders = await (await fetch(`${api.baseUrl}/store/orders`, { headers: { 'x-api-key': api.keys.staff } })).json()
  assert.deepEqual(orders, [], 'no order placed')

  // An unrestricted customer key still sees its role's tools.
  const customer = await connect(t, root, api.keys.customer)
  const all = (await customer.listTools()).tools.map((tool) => tool.name)
  assert.ok(all.includes('placeOrder') && all.includes('listEvents') && all.includes('createWebhook'))
})
