// The size of tools/list, as an agent receives it: the official SDK's client over Streamable HTTP
// against a listening app. An agent pays for every byte of it in its context, on every session:
// it was 103 KB for a customer key and 169 KB for an admin's (issue 49), mostly output schemas
// (the event union twice, 16 KB each), the scope paragraph of every description and the document's
// examples, patterns and prose. Faults caught: a list that grows past its bound (a tool's schema or
// text put back whole), a `$ref` that clients without a resolver cannot list (Copilot CLI, Kiro,
// opencode), and a compaction that loses what an agent needs (an argument, a field, an event type).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { listenTestApp } from '../helpers/app.ts'

/** The bounds, in bytes of the list as JSON: a new tool costs about 1.2 KB; raise them with a reason. */
const BOUNDS = { customer: 40_000, admin: 80_000 } as const

/** The keywords used anywhere in schemas (the names under `properties` are fields, not keywords). */
function keywordsOf (schema: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) keywordsOf(item, into)
  else if (schema !== null && typeof schema === 'object') {
    for (const [name, value] of Object.entries(schema)) {
      into.add(name)
      if (name === 'properties') for (const field of Object.values(value as object)) keywordsOf(field, into)
      else keywordsOf(value, into)
    }
  }
  return into
}

async function listTools (t: TestContext, root: string, key: string) {
  const client = new Client({ name: 'petstore-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${root}/mcp`), { requestInit: { headers: { 'x-api-key': key } } }))
  t.after(() => client.close())
  return { client, listed: await client.listTools() }
}

test('tools/list stays under its bound for a customer and an admin key, with no $ref, and keeps what an agent needs', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  for (const role of ['customer', 'admin'] as const) {
    const { listed } = await listTools(t, root, api.keys[role])
    const text = JSON.stringify(listed)
    t.diagnostic(`${role}: ${listed.tools.length} tools, ${text.length} bytes`)
    assert.ok(text.length < BOUNDS[role], `${role}: tools/list is ${text.length} bytes, over ${BOUNDS[role]}`)
    for (const tool of listed.tools) {
      const keywords = keywordsOf([tool.inputSchema, tool.outputSchema])
      for (const left of ['$ref', '$defs', 'examples', 'title']) assert.ok(!keywords.has(left), `${role}: ${tool.name}'s schemas carry ${left}`)
      assert.doesNotMatch(tool.description!, /\*\*Scopes?:\*\*|\*\*Beta\.\*\*/, `${role}: ${tool.name} carries the document's scope or beta paragraph`)
    }
  }

  const { client, listed } = await listTools(t, root, api.keys.customer)
  const byName = new Map(listed.tools.map((tool) => [tool.name, tool]))
  // Every argument is there, with its type, bounds and values; the server checks the rest.
  const listPets = byName.get('listPets')!
  assert.deepEqual(Object.keys(listPets.inputSchema.properties!), ['id', 'status', 'categoryId', 'name', 'limit', 'cursor'])
  assert.deepEqual(listPets.inputSchema.properties!.status, { type: 'string', enum: ['available', 'pending', 'sold'], description: 'Status of the pet.' })
  assert.deepEqual(listPets.inputSchema.properties!.limit, {
    type: 'integer', minimum: 1, maximum: 100, default: 20, description: 'Page size, 1 to 100.'
  })
  assert.deepEqual(byName.get('placeOrder')!.inputSchema.required, ['body'])
  // Every field of an answer is there with its type; a nullable one says so.
  const order = (byName.get('getOrder')!.outputSchema!.properties!.data as { properties: Record<string, unknown> }).properties
  assert.deepEqual(Object.keys(order), ['id', 'petId', 'quantity', 'shipDate', 'complete', 'expiresAt'])
  assert.deepEqual(order.expiresAt, { type: ['string', 'null'], format: 'date-time' })
  // The event union is one object: every type named, its data said to depend on it.
  const event = byName.get('getEvent')!.outputSchema!.properties!.data as { properties: Record<string, { enum?: string[] }> }
  assert.deepEqual(Object.keys(event.properties), ['id', 'type', 'createdAt', 'data'])
  for (const type of ['order.created', 'pet.deleted', 'key.revoked', 'webhook.test']) assert.ok(event.properties.type!.enum!.includes(type), type)
  assert.deepEqual(event.properties.data, { type: 'object', description: 'Depends on `type`.' })
  // Annotations: a read says so; a change says whether it destroys and whether it may be repeated.
  assert.deepEqual(listPets.annotations, { readOnlyHint: true, openWorldHint: false })
  assert.deepEqual(byName.get('cancelOrder')!.annotations, { destructiveHint: true, idempotentHint: true, openWorldHint: false })
  assert.deepEqual(byName.get('placeOrder')!.annotations, { destructiveHint: false, idempotentHint: true, openWorldHint: false })
  // The SDK's client still accepts the answers and the refusals (it checks both against outputSchema).
  type Result = { isError?: boolean; structuredContent: { status: number } }
  const refused = await client.callTool({ name: 'getOrder', arguments: { orderId: 999_999 } }) as unknown as Result
  assert.deepEqual([refused.isError, refused.structuredContent.status], [true, 404])
  const events = await client.callTool({ name: 'listEvents', arguments: { limit: 5 } }) as { isError?: boolean }
  assert.equal(events.isError, undefined)
})
