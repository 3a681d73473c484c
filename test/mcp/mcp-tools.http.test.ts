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
  // On PostgreSQL the feed shows a row once every older transaction of the cluster has ended
  // (storage/postgres/events.ts): another test's open transaction holds it back for a moment, so
  // the agent asks again with the same cursor, as its description says, until it comes.
  let news: Array<{ type: string; data: { name: string } }> = []
  for (let i = 0; i < 50 && news.length === 0; i++) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100))
    const later = await call(agent, 'listEvents', { limit: 2, type: 'pet.*', cursor: cursor! })
    news = later.structuredContent.data as typeof news
  }
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
  // Annotations as listed: a read says only that, and no tool reaches outside this API.
  assert.deepEqual(byName.get('listPets')!.annotations, { readOnlyHint: true, openWorldHint: false })
  assert.deepEqual(byName.get('deletePet')!.annotations, { destructiveHint: true, idempotentHint: true, openWorldHint: false })
  assert.deepEqual(byName.get('createPet')!.annotations, { destructiveHint: false, idempotentHint: true, openWorldHint: false })
})

test('the server instructions say how quotas, idempotency, the loop breaker and paging work', async (t) => {
  const api = await listenTestApp(t, { env: { MCP_REPEAT_LIMIT: '7' } })
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const agent = await connect(t, root, api.keys.customer)
  const instructions = agent.getInstructions() ?? ''
  for (const part of [/minute and a day window/, /retryAfter/, /api_key_banned/, /\(getRateLimit(?:, \w+)* costs? nothing\)/, /etag.*ifMatch/, /first sentences.*\/openapi\.json/, /idempotencyKey/, /same session/,
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

test('usage counts what the limiter charged, once per message: allowed is the day window\'s used, free calls are not counted, refusals are', async (t) => {
  // Fault caught: a tool call recorded twice (the operation and the POST /mcp that carried it: issue
  // 49 found 16 for 7 charged), or a free call (getRateLimit, GET /rate_limit) counted as allowed,
  // so that the console shows more allowed than the day window used.
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { id, key } = await api.makeKey('customer', 'enterprise', { perMinute: 8, perDay: 10_000 })
  const agent = await connect(t, root, key) // initialize 1 (its notification and GET stream free), tools/list 1
  assert.equal((await call(agent, 'listPets', { limit: 1 })).isError, undefined) // 1
  assert.equal((await call(agent, 'getRateLimit')).isError, undefined) // free
  assert.equal((await fetch(`${api.baseUrl}/rate_limit`, { headers: { 'x-api-key': key } })).status, 200) // free, REST
  assert.equal((await call(agent, 'getOrder', {})).structuredContent.status, 400) // refused by the endpoint: 1
  assert.equal((await call(agent, 'noSuchTool', {})).structuredContent.status, 404) // refused by the endpoint: 1
  await agent.ping() // 1
  for (let i = 0; i < 2; i++) assert.equal((await call(agent, 'listPets', { limit: 1 })).isError, undefined) // 2: 8 in all
  // The minute is used up: a tool call and a ping are refused, and counted as limited.
  const refused = await call(agent, 'listPets', { limit: 1 })
  assert.deepEqual([refused.structuredContent.status, refused.structuredContent.error?.code], [429, 'rate_limited'])
  await assert.rejects(agent.ping(), /-32000: rate limit exceeded/)
  // A free call is still answered while limited, and still not counted.
  assert.equal((await call(agent, 'getRateLimit')).structuredContent.status, 200)

  const windows = await (await fetch(`${api.baseUrl}/rate_limit`, { headers: { 'x-api-key': key } })).json() as {
    windows: { minute: { remaining: number; limit: number }; day: { remaining: number; limit: number } }
  }
  const dayUsed = windows.windows.day.limit - windows.windows.day.remaining
  assert.equal(dayUsed, 8)
  assert.equal(windows.windows.minute.remaining, 0)
  // The admin reads the usage (this key is limited, and a read of its own would be counted too).
  const usage = await api.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=1` })
  assert.equal(usage.statusCode, 200, usage.body)
  const counts = (usage.json().days as Array<Record<string, unknown>>)
    .map(({ allowed, limited, banned, mcp }) => ({ allowed, limited, banned, mcp }))
  assert.deepEqual(counts, [{ allowed: dayUsed, limited: 2, banned: 0, mcp: dayUsed + 2 }])
})

test('ifMatch reaches the operation as If-Match: a stale version is 412 and changes nothing, the current one cancels', async (t) => {
  // Fault caught: the ifMatch argument dropped on the way to the REST call (a change made over a
  // version the agent never saw).
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const [petId] = await makePets(api, 1)
  await rest(api, 'PUT', `/store/inventory/${petId}`, { quantity: 5 })
  const agent = await connect(t, root, api.keys.customer)
  const placed = await call(agent, 'placeOrder', { body: { petId, quantity: 1 } })
  const orderId = (placed.structuredContent.data as { id: number }).id
  const read = await call(agent, 'getOrder', { orderId }) as Result & { structuredContent: { etag?: string } }
  const etag = read.structuredContent.etag!
  assert.match(etag, /^"/)
  const stale = await call(agent, 'cancelOrder', { orderId, ifMatch: '"stale"' })
  assert.deepEqual([stale.isError, stale.structuredContent.status, stale.structuredContent.error?.code], [true, 412, 'precondition_failed'])
  assert.equal((await call(agent, 'getOrder', { orderId })).structuredContent.status, 200, 'the order is still there')
  const cancelled = await call(agent, 'cancelOrder', { orderId, ifMatch: etag })
  assert.equal(cancelled.structuredContent.status, 204)
})

test('the prompts are listed, and their steps name tools and arguments that exist', async (t) => {
  // Fault caught: a prompt that sends the agent to an argument the tool refuses (`q` for listPets).
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const agent = await connect(t, root, api.keys.customer)
  const { prompts } = await agent.listPrompts()
  assert.deepEqual(prompts.map((p) => p.name), ['order-available-pet', 'cancel-order-restock'])
  const order = await agent.getPrompt({ name: 'order-available-pet', arguments: { name: 'Rex', quantity: '2' } })
  const text = (order.messages[0]!.content as { text: string }).text
  assert.match(text, /Call listPets with status "available" and name "Rex" and limit 20\./)
  assert.match(text, /"quantity": 2 \}/)
  const { tools } = await agent.listTools()
  const listPets = tools.find((tool) => tool.name === 'listPets')!
  for (const argument of ['status', 'name', 'limit']) assert.ok(argument in listPets.inputSchema.properties!, argument)
  for (const [, tool] of text.matchAll(/Call (\w+)/g)) assert.ok(tools.some((t) => t.name === tool), `${tool} is a tool`)
  // Without arguments: the steps say what to fill in.
  const cancel = await agent.getPrompt({ name: 'cancel-order-restock' })
  assert.match((cancel.messages[0]!.content as { text: string }).text, /orderId <the order>/)
})

test('DELETE /mcp (the end of a session) answers 204, costs nothing and is not counted', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { id, key } = await api.makeKey('customer', 'enterprise', { perMinute: 100, perDay: 1000 })
  const remaining = async () => ((await (await fetch(`${api.baseUrl}/rate_limit`, { headers: { 'x-api-key': key } })).json()) as {
    windows: { minute: { remaining: number } }
  }).windows.minute.remaining
  const before = await remaining()
  const ended = await fetch(`${root}/mcp`, { method: 'DELETE', headers: { 'x-api-key': key, 'mcp-session-id': 'a-session' } })
  assert.equal(ended.status, 204)
  assert.equal(await remaining(), before)
  const usage = await api.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=1` })
  assert.deepEqual(usage.json().days, [])
})

// The tests below pin what the call of a tool does on its way to the operation (mcp.routes.ts
// callTool and serveRequest), each naming the mutant it kills (npm run mutate -- mcp).

test('a tool outside the key\'s role is no tool for it: 404 naming it, never the operation\'s 403', async (t) => {
  const api = await listenTestApp(t)
  const agent = await connect(t, api.baseUrl.slice(0, -'/v1'.length), api.keys.customer)
  const result = await call(agent, 'createPet', { body: { name: 'Rex', categoryId: 1 } })
  assert.deepEqual(result.structuredContent, {
    status: 404,
    error: {
      code: 'not_found',
      message: 'no tool createPet for this key; tools/list names the tools it may call',
      status: 404,
      requestId: (result.structuredContent.error as { requestId: string }).requestId
    }
  })
})

test('the loop breaker counts per key and says why; a limited key\'s repeated call gets the rate limit\'s 429', async (t) => {
  const api = await listenTestApp(t, { env: { MCP_REPEAT_LIMIT: '2' } })
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const a = await api.makeKey('customer', 'enterprise', { perMinute: 5, perDay: 1000 })
  const b = await api.makeKey('customer', 'enterprise', { perMinute: 100, perDay: 1000 })
  const first = await connect(t, root, a.key) // 2 charged
  const second = await connect(t, root, b.key)
  for (let i = 0; i < 2; i++) assert.equal((await call(first, 'listPets', { limit: 1 })).structuredContent.status, 200) // 4
  const repeated = await call(first, 'listPets', { limit: 1 }) // 5: charged, refused by the breaker
  assert.equal(repeated.structuredContent.error?.code, 'tool_call_repeated')
  assert.match(String(repeated.structuredContent.error?.message), /^listPets was called with the same arguments \d+ times in the last minute \(limit 2\); change the arguments or wait \d+ s$/)
  // Another key's same call is its own: not repeated.
  assert.equal((await call(second, 'listPets', { limit: 1 })).structuredContent.status, 200)
  // The minute is used up: the repeat is refused by the limiter first, as any call would be.
  const limited = await call(first, 'listPets', { limit: 1 })
  assert.deepEqual([limited.structuredContent.status, limited.structuredContent.error?.code], [429, 'rate_limited'])
})

test('an agent\'s own idempotencyKey holds across sessions; without one, each create\'s key is its own arguments\'', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const [petId] = await makePets(api, 1)
  await rest(api, 'PUT', `/store/inventory/${petId}`, { quantity: 10 })
  const one = await connect(t, root, api.keys.customer)
  const two = await connect(t, root, api.keys.customer)
  const idOf = (result: Result) => (result.structuredContent.data as { id: number }).id
  const placed = await call(one, 'placeOrder', { body: { petId, quantity: 1 }, idempotencyKey: 'agent-order-1' })
  const again = await call(two, 'placeOrder', { body: { petId, quantity: 1 }, idempotencyKey: 'agent-order-1' })
  assert.equal(idOf(again), idOf(placed), 'the same key in another session is the same order')
  const other = await call(one, 'placeOrder', { body: { petId, quantity: 2 } })
  const third = await call(one, 'placeOrder', { body: { petId, quantity: 3 } })
  assert.deepEqual([other.structuredContent.status, third.structuredContent.status], [201, 201])
  assert.notEqual(idOf(other), idOf(third), 'other arguments are another order')
})

test('an operation\'s own 400 is a refusal; a create whose body is optional runs without one', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const agent = await connect(t, root, api.keys.customer)
  const hook = await call(agent, 'createWebhook', { body: { url: 'http://example.com/hooks', types: ['order.*'] } })
  assert.deepEqual([hook.isError, hook.structuredContent.status, hook.structuredContent.error?.code], [true, 400, 'webhook_url_forbidden'])
  const { key } = await api.makeKey('customer')
  const rotating = await connect(t, root, key)
  const rotated = await call(rotating, 'rotateMyApiKey')
  assert.equal(rotated.structuredContent.status, 201, JSON.stringify(rotated.structuredContent))
})

test('over the wire: initialize gives the session id, other answers do not; a tool call\'s answer carries its windows', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 100, perDay: 1000 })
  const post = (body: unknown, session?: string) => fetch(`${root}/mcp`, {
    method: 'POST',
    headers: {
      'x-api-key': key,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session !== undefined && { 'mcp-session-id': session })
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...body as object })
  })
  const hello = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }
  const init = await post({ id: 1, method: 'initialize', params: hello })
  assert.equal(init.status, 200)
  assert.equal(init.headers.get('content-type')?.split(';')[0], 'application/json')
  const session = init.headers.get('mcp-session-id')
  assert.match(session ?? '', /^[0-9a-f-]{36}$/)
  const listed = await post({ id: 2, method: 'tools/list' }, session!)
  assert.equal(listed.headers.get('mcp-session-id'), null)
  assert.equal(listed.headers.get('content-type')?.split(';')[0], 'application/json')
  const called = await post({ id: 3, method: 'tools/call', params: { name: 'listPets', arguments: { limit: 1 } } }, session!)
  assert.equal(called.status, 200)
  // 3 charged: initialize, tools/list, the call's GET /v1/pets, whose windows the answer passes on.
  assert.equal(called.headers.get('x-ratelimit-remaining'), '97')
  assert.equal(called.headers.get('x-ratelimit-limit'), '100')
})
