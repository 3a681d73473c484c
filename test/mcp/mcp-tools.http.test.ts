// What an agent gets from the tools (issue 49 section 1), through the official SDK's client over
// Streamable HTTP against a listening app: lists it can page through to the end (`nextCursor` in
// the result, and in a text line), a feed it can follow, descriptions that say each thing once and
// in MCP's words, results the SDK checks against each tool's outputSchema, arguments refused by
// name (missing, unknown, malformed, an enumeration's values listed), server instructions, the
// deprecation notice of a deprecated tool, and one usage record per charged message.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { listenTestApp, type TestApp } from '../helpers/app.ts'

async function connect (t: TestContext, root: string, key: string): Promise<Client> {
  const client = new Client({ name: 'petstore-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${root}/mcp`), { requestInit: { headers: { 'x-api-key': key } } }))
  t.after(() => client.close())
  // listTools gives the client each tool's outputSchema: every callTool below is checked against it.
  await client.listTools()
  return client
}

interface Result {
  isError?: boolean
  content: Array<{ type: string; text: string }>
  structuredContent: {
    status: number
    data?: unknown
    nextCursor?: string
    error?: Record<string, unknown>
    deprecation?: Record<string, string>
  }
}

const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
  await client.callTool({ name, arguments: args }) as unknown as Result

async function rest (api: TestApp & { baseUrl: string }, method: string, path: string, body?: unknown) {
  const answer = await fetch(`${api.baseUrl}${path}`, {
    method,
    headers: { 'x-api-key': api.keys.admin, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) })
  })
  assert.ok(answer.ok, `${method} ${path}: ${answer.status} ${await answer.clone().text()}`)
  return answer.status === 204 ? null : await answer.json() as Record<string, unknown>
}

async function makePets (api: TestApp & { baseUrl: string }, count: number): Promise<number[]> {
  const category = await rest(api, 'POST', '/categories', { name: 'Dogs' })
  const ids: number[] = []
  for (let i = 0; i < count; i++) ids.push((await rest(api, 'POST', '/pets', { name: `Pet ${i}`, categoryId: category!.id }))!.id as number)
  return ids
}

test('an agent lists every pet page by page with nextCursor, each pet once, and the text says how to go on', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const ids = await makePets(api, 7)
  const agent = await connect(t, root, api.keys.customer)
  const seen: number[] = []
  let cursor: string | undefined
  let pages = 0
  do {
    const page = await call(agent, 'listPets', { limit: 3, ...(cursor !== undefined && { cursor }) })
    assert.equal(page.isError, undefined, JSON.stringify(page))
    seen.push(...(page.structuredContent.data as Array<{ id: number }>).map((p) => p.id))
    cursor = page.structuredContent.nextCursor
    if (cursor !== undefined) {
      assert.equal(page.content[1]?.text, `Next page: call listPets again with cursor ${JSON.stringify(cursor)} and the same other arguments.`)
    } else {
      assert.equal(page.content.length, 1, 'no next-page line on the last page')
    }
    pages++
  } while (cursor !== undefined && pages < 10)
  assert.deepEqual(seen, ids, 'every pet, once, in id order')
  assert.equal(pages, 3)
})

test('listEvents is a feed: every page carries nextCursor, the empty last one too, and following it later gives what came after', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  await makePets(api, 3)
  const agent = await connect(t, root, api.keys.admin)
  const types: string[] = []
  let cursor: string | undefined
  for (let i = 0; i < 10; i++) {
    const page = await call(agent, 'listEvents', { limit: 2, type: 'pet.*', ...(cursor !== undefined && { cursor }) })
    assert.equal(page.isError, undefined, JSON.stringify(page))
    assert.equal(typeof page.structuredContent.nextCursor, 'string', 'a feed page always names the next')
    cursor = page.structuredContent.nextCursor
    const events = page.structuredContent.data as Array<{ type: string }>
    if (events.length === 0) break
    types.push(...events.map((e) => e.type))
  }
  assert.deepEqual(types, ['pet.created', 'pet.created', 'pet.created'])
  await rest(api, 'POST', '/pets', { name: 'Late', categoryId: 1 })
  const later = await call(agent, 'listEvents', { limit: 2, type: 'pet.*', cursor: cursor! })
  const news = later.structuredContent.data as Array<{ type: string; data: { name: string } }>
  assert.deepEqual(news.map((e) => [e.type, e.data.name]), [['pet.created', 'Late']])
})

test('descriptions say each paragraph once, never send the agent to a header, and say how to page', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const admin = await connect(t, root, api.keys.admin)
  const { tools } = await admin.listTools()
  for (const tool of tools) {
    const paragraphs = tool.description!.split('\n\n')
    assert.deepEqual(paragraphs, [...new Set(paragraphs)], `${tool.name}: a paragraph repeated`)
    const sentences = tool.description!.split(/(?<=\.)\s+/).filter((s) => s.length > 20)
    assert.deepEqual(sentences, [...new Set(sentences)], `${tool.name}: a sentence repeated`)
    assert.doesNotMatch(tool.description!, /`Link\b|\bLink header|`(Deprecation|Sunset)`|rel="next"/, `${tool.name}: speaks of a header the agent never sees`)
    assert.equal(tool.outputSchema?.type, 'object', `${tool.name}: has an outputSchema`)
  }
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  assert.match(byName.get('listPets')!.description!, /`nextCursor`: call again with it as `cursor`/)
  assert.match(byName.get('listEvents')!.description!, /Every result carries `nextCursor`, the last and empty pages included/)
  assert.match(byName.get('getPet')!.description!, /^DEPRECATED\. Get a pet\n\n[\s\S]*Every result carries `deprecation`/)
  assert.equal((byName.get('listPets')!.inputSchema.properties!.cursor as { description: string }).description.includes('nextCursor'), true)
  assert.ok(byName.get('listPets')!.outputSchema!.properties!.nextCursor, 'a list names nextCursor in its outputSchema')
  assert.equal(byName.get('getPet')!.outputSchema!.properties!.nextCursor, undefined)
})

test('the server instructions say how quotas, idempotency, the loop breaker and paging work', async (t) => {
  const api = await listenTestApp(t, { env: { MCP_REPEAT_LIMIT: '7' } })
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const agent = await connect(t, root, api.keys.customer)
  const instructions = agent.getInstructions() ?? ''
  for (const part of [/minute and a day window/, /retryAfter/, /api_key_banned/, /getRateLimit costs nothing/, /idempotencyKey/, /same session/,
    /more than 7 times in a minute is refused with `tool_call_repeated`/, /nextCursor/, /listEvents is a feed/, /validation_failed/]) {
    assert.match(instructions, part)
  }
})

test('a deprecated tool\'s result carries the deprecation notice, as REST sends its headers', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const [id] = await makePets(api, 1)
  const agent = await connect(t, root, api.keys.customer)
  const pet = await call(agent, 'getPet', { petId: id })
  assert.equal(pet.isError, undefined)
  const restAnswer = await fetch(`${api.baseUrl}/pets/${id}`, { headers: { 'x-api-key': api.keys.customer } })
  assert.deepEqual(pet.structuredContent.deprecation, {
    since: new Date(Number(restAnswer.headers.get('deprecation')!.slice(1)) * 1000).toISOString(),
    sunset: new Date(restAnswer.headers.get('sunset')!).toISOString(),
    successor: `/v1/pets?id=${id}`,
    notice: /"(.*)"/.exec(restAnswer.headers.get('warning')!)![1]!
  })
  assert.match(pet.content.at(-1)!.text, /^DEPRECATED: Deprecated: this operation stops working on .* \(successor: \/v1\/pets\?id=\d+\)$/)
  const missing = await call(agent, 'getPet', { petId: 999 })
  assert.equal(missing.structuredContent.status, 404)
  assert.ok(missing.structuredContent.deprecation, 'on a refusal too')
})

test('arguments are refused by name: missing, unknown, malformed, an enumeration\'s values listed; each refusal costs one request', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 1000, perDay: 10_000 })
  const agent = await connect(t, root, key)
  const remaining = async () => {
    const answer = await fetch(`${api.baseUrl}/rate_limit`, { headers: { 'x-api-key': key } })
    return ((await answer.json()) as { windows: { minute: { remaining: number } } }).windows.minute.remaining
  }
  const colour = 'is not an argument of listPets (its arguments: id, status, categoryId, name, limit, cursor)'
  const refusals: Array<[string, Record<string, unknown>, Array<{ path: string; message: string }>]> = [
    ['getOrder', {}, [{ path: 'orderId', message: 'is required' }]],
    ['getOrder', { orderId: 'seven' }, [{ path: 'orderId', message: 'must be integer' }]],
    ['listPets', { colour: 'brown' }, [{ path: 'colour', message: colour }]],
    ['listPets', { status: 'lost' }, [{ path: 'status', message: 'must be one of: "available", "pending", "sold"' }]],
    ['placeOrder', {}, [{ path: 'body', message: 'is required' }]],
    ['placeOrder', { body: { petId: 1, quantity: '2', colour: 'brown' } }, [
      { path: 'body.colour', message: 'is not a field here' },
      { path: 'body.quantity', message: 'must be integer' }
    ]]
  ]
  for (const [tool, args, details] of refusals) {
    const before = await remaining()
    const result = await call(agent, tool, args)
    assert.equal(result.isError, true, `${tool} ${JSON.stringify(args)}`)
    type Failure = { message: string; requestId: string; details: Array<{ path: string; message: string }> }
    const error = result.structuredContent.error as Failure
    const sorted = [...error.details].sort((a, b) => a.path.localeCompare(b.path))
    assert.deepEqual({ ...result.structuredContent, error: { ...error, details: sorted } }, {
      status: 400,
      error: { code: 'validation_failed', message: error.message, status: 400, requestId: error.requestId, details }
    }, `${tool} ${JSON.stringify(args)}`)
    const [first] = error.details
    assert.equal(error.message, `invalid arguments: ${first!.path} ${first!.message}`)
    assert.equal(await remaining(), before - 1, `${tool} ${JSON.stringify(args)}: charged one request`)
  }
  // Path and query values are coerced as REST coerces them: "5" is 5.
  const coerced = await call(agent, 'listPets', { limit: '2' })
  assert.equal(coerced.isError, undefined, JSON.stringify(coerced))
})

test('usage counts each charged message once, as the limiter charged it: no second record for the /mcp request', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 1000, perDay: 10_000 })
  const agent = await connect(t, root, key) // initialize 1 (its notification is free), tools/list 1
  await call(agent, 'listPets', { limit: 1 }) // 1
  await call(agent, 'getOrder', {}) // refused by the endpoint: 1
  await call(agent, 'noSuchTool', {}) // refused by the endpoint: 1
  await agent.ping() // 1
  const usage = await (await fetch(`${api.baseUrl}/keys/me/usage`, { headers: { 'x-api-key': key } })).json() as {
    days: Array<{ allowed: number; limited: number; banned: number; mcp: number }>
  }
  const windows = await (await fetch(`${api.baseUrl}/rate_limit`, { headers: { 'x-api-key': key } })).json() as {
    windows: { minute: { remaining: number; limit: number } }
  }
  const charged = windows.windows.minute.limit - windows.windows.minute.remaining
  // The usage read is charged too, and counted once answered: after it was read.
  assert.equal(charged, 7)
  const counts = usage.days.map(({ allowed, limited, banned, mcp }) => ({ allowed, limited, banned, mcp }))
  assert.deepEqual(counts, [{ allowed: 6, limited: 0, banned: 0, mcp: 6 }])
})
