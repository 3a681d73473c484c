// GET /v1/admin/keys/{keyId}/usage counts the calls an agent made through MCP (issue 33), on both
// engines: the official SDK's client over a real socket, tool calls and REST calls with one key.
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

test('the usage view counts the calls an agent made through MCP: initialize, the list and each tool call, not the REST calls', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { id, key } = await api.makeKey('customer')
  const other = await api.makeKey('customer')
  for (let i = 0; i < 2; i++) assert.equal((await fetch(`${api.baseUrl}/pets?limit=1`, { headers: { 'x-api-key': key } })).status, 200)
  const agent = await connect(t, root, key)
  await agent.listTools()
  for (let i = 0; i < 3; i++) {
    const result = await agent.callTool({ name: 'listPets', arguments: { limit: 1 } }) as { isError?: boolean }
    assert.notEqual(result.isError, true)
  }
  // A tool the key may not call is refused by the endpoint itself: no operation is called.
  assert.equal((await agent.callTool({
    name: 'createPet',
    arguments: { body: { name: 'Agent', categoryId: 1 } }
  }) as { isError?: boolean }).isError, true)
  assert.equal((await fetch(`${api.baseUrl}/pets?limit=1`, { headers: { 'x-api-key': other.key } })).status, 200)

  const usage = await api.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=1` })
  assert.equal(usage.statusCode, 200, usage.body)
  // Through MCP: initialize, tools/list, the 3 tool calls and the refused one: every message is
  // charged once, as a refused REST call is (docs/product.md 11.2); the REST calls are not MCP calls.
  const [day] = usage.json().days as Array<{ allowed: number; limited: number; banned: number; mcp: number }>
  assert.equal(day?.mcp, 6)
  assert.ok(day.allowed >= 2 + 5, `allowed ${day.allowed}`)
  assert.deepEqual([day.limited, day.banned], [0, 0])
  const others = await api.call({ method: 'GET', url: `/v1/admin/keys/${other.id}/usage?days=1` })
  assert.equal(others.json().days[0].mcp, 0, 'another key\'s REST calls are not MCP calls')
})
