// The MCP endpoint (src/mcp/) through the official SDK's client over Streamable HTTP, against a
// real listening app: tools made from the routes, the same door as REST (role, charge, bans),
// refusals as tool results an agent can act on, one order from a repeated create, the loop breaker.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { listenTestApp } from '../helpers/app.ts'

async function connect (t: TestContext, root: string, key: string | null): Promise<Client> {
  const client = new Client({ name: 'petstore-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${root}/mcp`), {
    requestInit: { headers: key === null ? {} : { 'x-api-key': key } }
  })
  await client.connect(transport)
  t.after(() => client.close())
  return client
}

interface ToolResult { isError?: boolean; structuredContent?: Record<string, unknown> }

async function remainingMinute (baseUrl: string, key: string): Promise<number> {
  const answer = await fetch(`${baseUrl}/rate_limit`, { headers: { 'x-api-key': key } })
  return ((await answer.json()) as { windows: { minute: { remaining: number } } }).windows.minute.remaining
}

test('tools are the operations of the document, one each, filtered by role', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const document = (await (await fetch(`${root}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, {
      operationId: string
      summary: string
      deprecated?: boolean
      parameters?: Array<{ name: string; in: string }>
      requestBody?: unknown
    }>>
  }
  const operations = Object.values(document.paths).flatMap((item) => Object.values(item))
  const admin = await connect(t, root, api.keys.admin)
  const { tools } = await admin.listTools()
  assert.deepEqual(tools.map((tool) => tool.name).sort(), operations.map((o) => o.operationId).sort(), 'an admin sees one tool per operation')
  for (const operation of operations) {
    const tool = tools.find((x) => x.name === operation.operationId)!
    const inputs = Object.keys(tool.inputSchema.properties ?? {}).filter((name) => name !== 'idempotencyKey' && name !== 'ifMatch').sort()
    const expected = [
      ...(operation.parameters ?? []).filter((p) => p.in === 'path' || p.in === 'query').map((p) => p.name),
      ...(operation.requestBody !== undefined ? ['body'] : [])
    ].sort()
    assert.deepEqual(inputs, expected, `${operation.operationId}: the tool's inputs are the operation's parameters and body`)
    assert.ok(tool.description!.includes(operation.summary), `${operation.operationId}: described by its summary`)
    assert.equal(tool.description!.startsWith('DEPRECATED'), operation.deprecated === true, `${operation.operationId}: deprecated as the operation is`)
  }
  const listPets = tools.find((x) => x.name === 'listPets')!
  assert.equal(listPets.annotations?.readOnlyHint, true)
  assert.equal(tools.find((x) => x.name === 'deletePet')!.annotations?.destructiveHint, true)
  assert.equal(tools.find((x) => x.name === 'placeOrder')!.annotations?.idempotentHint, true)

  const customer = await connect(t, root, api.keys.customer)
  const mine = (await customer.listTools()).tools.map((x) => x.name)
  assert.ok(mine.includes('placeOrder') && mine.includes('listPets'))
  assert.ok(!mine.includes('createPet') && !mine.includes('listApiKeys'), 'a customer is not offered staff or admin operations')
  const refused = await customer.callTool({ name: 'createPet', arguments: { body: { name: 'Agent', categoryId: 1 } } }) as ToolResult
  assert.equal(refused.isError, true)
})

test('a tool call is the REST call: its answer, its charge; opening and listing cost one request each', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 50, perDay: 1000 })
  const before = await remainingMinute(api.baseUrl, key) // free: GET /rate_limit costs nothing
  const client = await connect(t, root, key) // initialize: one request
  assert.equal(await remainingMinute(api.baseUrl, key), before - 1, 'initialize is charged once')
  await client.listTools()
  assert.equal(await remainingMinute(api.baseUrl, key), before - 2, 'tools/list is charged once')
  const pets = await client.callTool({ name: 'listPets', arguments: { limit: 2 } }) as ToolResult
  assert.equal(pets.isError, undefined)
  const rest = await (await fetch(`${api.baseUrl}/pets?limit=2`, { headers: { 'x-api-key': api.keys.customer } })).json()
  assert.deepEqual(pets.structuredContent!.data, rest, 'the same answer as REST')
  assert.equal(await remainingMinute(api.baseUrl, key), before - 3, 'a tool call is charged as the operation, once')
})

test('a create repeated in a session places one order; an explicit idempotency key is honoured', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const staff = { 'x-api-key': api.keys.staff, 'content-type': 'application/json' }
  const category = await (await fetch(`${api.baseUrl}/categories`, {
    method: 'POST',
    headers: staff,
    body: JSON.stringify({ name: 'Dogs' })
  })).json() as { id: number }
  const pet = await (await fetch(`${api.baseUrl}/pets`, {
    method: 'POST',
    headers: staff,
    body: JSON.stringify({ name: 'Rex', categoryId: category.id })
  })).json() as { id: number }
  await fetch(`${api.baseUrl}/store/inventory/${pet.id}`, { method: 'PUT', headers: staff, body: JSON.stringify({ quantity: 10 }) })
  const client = await connect(t, root, api.keys.customer)
  const first = await client.callTool({ name: 'placeOrder', arguments: { body: { petId: pet.id, quantity: 1 } } }) as ToolResult
  const second = await client.callTool({ name: 'placeOrder', arguments: { body: { quantity: 1, petId: pet.id } } }) as ToolResult
  assert.equal(first.isError, undefined, JSON.stringify(first))
  assert.deepEqual(
    (second.structuredContent!.data as { id: number }).id,
    (first.structuredContent!.data as { id: number }).id,
    'the repeat replays the first order'
  )
  const orders = await (await fetch(`${api.baseUrl}/store/orders`, { headers: { 'x-api-key': api.keys.customer } })).json() as unknown[]
  assert.equal(orders.length, 1, 'one order, not two')

  const other = await connect(t, root, api.keys.customer)
  await other.callTool({ name: 'placeOrder', arguments: { body: { petId: pet.id, quantity: 1 } } })
  const after = await (await fetch(`${api.baseUrl}/store/orders`, { headers: { 'x-api-key': api.keys.customer } })).json() as unknown[]
  assert.equal(after.length, 2, 'another session is another intent')
})

test('a 429 is a tool result with retryAfter and the exhausted window, never a protocol error', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 4, perDay: 1000 })
  const client = await connect(t, root, key) // 1
  let last: ToolResult | undefined
  for (let i = 0; i < 5; i++) last = await client.callTool({ name: 'listPets', arguments: { limit: 1, q: `x${i}` } }) as ToolResult
  assert.equal(last!.isError, true)
  const content = last!.structuredContent!
  assert.equal(content.status, 429)
  assert.equal((content.error as { code: string }).code, 'rate_limited')
  assert.ok(typeof content.retryAfter === 'number' && content.retryAfter > 0, 'retryAfter in seconds')
  assert.equal(content.exhaustedWindow, 'minute')
})

test('the same call repeated past MCP_REPEAT_LIMIT in a minute is refused with tool_call_repeated', async (t) => {
  const api = await listenTestApp(t, { env: { MCP_REPEAT_LIMIT: '3' } })
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const client = await connect(t, root, api.keys.customer)
  const results: ToolResult[] = []
  for (let i = 0; i < 4; i++) results.push(await client.callTool({ name: 'listPets', arguments: { limit: 1 } }) as ToolResult)
  assert.deepEqual(results.map((r) => r.isError === true), [false, false, false, true])
  assert.equal((results[3]!.structuredContent!.error as { code: string }).code, 'tool_call_repeated')
  const other = await client.callTool({ name: 'listPets', arguments: { limit: 2 } }) as ToolResult
  assert.equal(other.isError, undefined, 'other arguments go on')
})

test('without a valid key the endpoint answers 401 like REST', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const answer = await fetch(`${root}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
  })
  assert.equal(answer.status, 401)
  assert.equal(((await answer.json()) as { code: string }).code, 'unauthenticated')
})
