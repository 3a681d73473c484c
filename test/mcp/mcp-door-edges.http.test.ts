// The edges of the /mcp door (mcp.routes.ts, issue 52 item 1) that the other MCP tests pass by:
// GET /mcp answered 405 with Allow and the error object, and GET and DELETE refused without a
// key; the door's routes kept out of the document; a Content-Type spelled with capitals, spaces
// and parameters taken, none refused 415; a batch told that batches are gone; the windows a
// charged message's answer carries are those after its charge; initialize naming the server and
// giving a session id when the client sent an empty one; the Retry-After of a refusal the door
// did not foresee is the charge's; arrays in a tool's body reaching the operation whole. Each
// test names the mutants it kills (npm run mutate -- mcp), each applied by hand.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Quota } from '../../src/ratelimit/limiter.ts'
import { listenTestApp, type TestApp, type TestAppOptions } from '../helpers/app.ts'
import { openTestLimiter } from '../helpers/limiter.ts'

type Api = TestApp & { baseUrl: string; root: string }

async function start (t: TestContext, options: TestAppOptions = {}): Promise<Api> {
  const api = await listenTestApp(t, options)
  return { ...api, root: api.baseUrl.slice(0, -'/v1'.length) }
}

interface Exchange { status: number; body: unknown; headers: Headers }

async function send (
  api: Api, method: string, key: string | null, body?: string, headers: Record<string, string> = {}
): Promise<Exchange> {
  const answer = await fetch(`${api.root}/mcp`, {
    method,
    headers: {
      accept: 'application/json, text/event-stream',
      ...(key !== null && { 'x-api-key': key }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...headers
    },
    ...(body !== undefined && { body }),
    signal: AbortSignal.timeout(5_000)
  })
  const text = await answer.text()
  return { status: answer.status, body: text === '' ? null : JSON.parse(text), headers: answer.headers }
}

async function remainingMinute (api: Api, key: string): Promise<number> {
  const answer = await fetch(`${api.baseUrl}/rate_limit`, { headers: { 'x-api-key': key } })
  return ((await answer.json()) as { windows: { minute: { remaining: number } } }).windows.minute.remaining
}

const HELLO = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }

// Kills 429 (the handler emptied), 431 (Allow's name or value emptied), 432 (the code or the
// message emptied), 436 (DELETE's config emptied: no key needed).
test('GET /mcp is 405 method_not_allowed with Allow: POST, DELETE, free; GET and DELETE need a key', async (t) => {
  const api = await start(t)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 100, perDay: 1000 })
  const before = await remainingMinute(api, key)
  const get = await send(api, 'GET', key)
  assert.equal(get.status, 405)
  assert.equal(get.headers.get('allow'), 'POST, DELETE')
  const error = get.body as { code: string; message: string; status: number; requestId: string }
  assert.equal(error.code, 'method_not_allowed')
  assert.equal(error.status, 405)
  assert.equal(error.requestId, get.headers.get('request-id'))
  assert.match(error.message, /POST/, 'it says what to send instead')
  assert.equal(await remainingMinute(api, key), before, 'GET /mcp costs nothing')
  for (const method of ['GET', 'DELETE']) {
    const keyless = await send(api, method, null)
    assert.equal(keyless.status, 401, method)
    assert.equal((keyless.body as { code: string }).code, 'unauthenticated', method)
  }
})

// What `hide: true` says of the door's routes. It kills no mutant: the document leaves untagged
// routes out anyway (hideUntagged, src/openapi/openapi.ts), so 394, 429 and 435 are equivalent.
test('the door\'s routes are not operations of the document', async (t) => {
  const api = await start(t)
  const document = api.app.swagger() as unknown as { paths: Record<string, unknown> }
  assert.ok(Object.keys(document.paths).length > 10, 'the document has its operations')
  assert.deepEqual(Object.keys(document.paths).filter((path) => path.includes('mcp')), [])
})

// Kills 138 (trim() dropped); 148 (the batch's own answer emptied: a batch then gets the general
// Invalid Request).
test('a Content-Type with capitals, spaces and parameters is JSON; none is 415; a batch is told batches are gone', async (t) => {
  const api = await start(t)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 1000, perDay: 10_000 })
  const ping = '{"jsonrpc":"2.0","id":"p","method":"ping"}'
  for (const type of ['Application/JSON ; charset=utf-8', ' application/json', 'APPLICATION/JSON;charset=UTF-8']) {
    const answer = await send(api, 'POST', key, ping, { 'content-type': type })
    assert.equal(answer.status, 200, type)
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: 'p', result: {} }, type)
  }
  const untyped = await fetch(`${api.root}/mcp`, {
    method: 'POST',
    headers: { 'x-api-key': key, accept: 'application/json, text/event-stream' },
    body: new TextEncoder().encode(ping)
  })
  assert.equal(untyped.status, 415)
  assert.equal(((await untyped.json()) as { error: { code: number } }).error.code, -32600)

  const batch = await send(api, 'POST', key, `[${ping}]`)
  assert.equal(batch.status, 400)
  const { error } = batch.body as { error: { code: number; message: string } }
  assert.equal(error.code, -32600)
  assert.match(error.message, /batch/, 'the answer says batches are not taken, not only that the message is invalid')
})

// Kills 245 (the charge's window headers not passed on: the answer then shows the door's peek,
// the windows before the charge).
test('the answer to a charged message carries the windows after its charge', async (t) => {
  const api = await start(t)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 100, perDay: 1000 })
  const before = await remainingMinute(api, key)
  const ping = await send(api, 'POST', key, '{"jsonrpc":"2.0","id":1,"method":"ping"}')
  assert.equal(ping.status, 200)
  assert.equal(ping.headers.get('x-ratelimit-remaining'), String(before - 1))
  assert.match(ping.headers.get('ratelimit') ?? '', new RegExp(`^"minute";r=${before - 1};`))
  assert.equal(await remainingMinute(api, key), before - 1)
  const response = await send(api, 'POST', key, '{"jsonrpc":"2.0","id":1,"result":{}}')
  assert.equal(response.status, 202)
  assert.equal(response.headers.get('x-ratelimit-remaining'), String(before - 2))
})

// Kills 316 (the server's name emptied) and 470 (an empty Mcp-Session-Id taken as the session:
// the check made true, or '' compared with another text).
test('initialize names the server and gives a new session id, also when the client sent an empty one', async (t) => {
  const api = await start(t)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 100, perDay: 1000 })
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: HELLO })
  const sessions = new Set<string>()
  for (const headers of [{}, { 'mcp-session-id': '' }]) {
    const answer = await send(api, 'POST', key, init, headers)
    assert.equal(answer.status, 200)
    const { serverInfo } = (answer.body as { result: { serverInfo: { name: string; version: string } } }).result
    assert.equal(serverInfo.name, 'petstore-api')
    assert.match(serverInfo.version, /^\d+\.\d+\.\d+/)
    const session = answer.headers.get('mcp-session-id') ?? ''
    assert.match(session, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, JSON.stringify(headers))
    sessions.add(session)
  }
  assert.equal(sessions.size, 2, 'each initialize its own session')
})

// Kills 479 (Retry-After not set from the refusal, or set only when it has none). The door only
// peeks at the key's windows; what the message costs is charged right after, so another request
// of the same key can land between the two: a stand-in limiter makes that happen (the real
// limiter, one unit taken by a REST call just after the door's peek). The door then saw the key
// allowed and set no Retry-After: the answer's is the charge's refusal's.
test('a refusal the door did not foresee (a request of the same key in between) carries the charge\'s Retry-After', async (t) => {
  let between: (() => Promise<void>) | null = null
  const api = await start(t, {
    limiter: async (now) => {
      const real = await openTestLimiter(t, now)
      return new Proxy(real, {
        get (target, name, receiver) {
          if (name !== 'peek') {
            const value = Reflect.get(target, name, receiver) as unknown
            return typeof value === 'function' ? value.bind(target) : value
          }
          return async (subject: string, quota: Quota) => {
            const decision = await real.peek(subject, quota)
            const step = between
            between = null
            if (step !== null) await step()
            return decision
          }
        }
      })
    }
  })
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 2, perDay: 1000 })
  const message = '{"jsonrpc":"2.0","id":1,"result":{}}'
  assert.equal((await send(api, 'POST', key, message)).status, 202)
  // One unit left, which the door sees; a request of the same key takes it before the charge.
  between = async () => { assert.equal((await api.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200) }
  const limited = await send(api, 'POST', key, message)
  assert.equal(limited.status, 429, JSON.stringify(limited.body))
  type Refusal = { error: { code: number; data: { status: number; retryAfter?: number; error: { code: string } } } }
  const { data } = (limited.body as Refusal).error
  assert.equal(data.error.code, 'rate_limited')
  assert.ok(data.retryAfter !== undefined && data.retryAfter > 0)
  assert.equal(limited.headers.get('retry-after'), String(data.retryAfter), 'the charge\'s Retry-After')
})

// Kills 85 (the items of an array joined without commas: the operation is then sent a body that
// is not JSON).
test('a tool\'s body with arrays reaches the operation whole', async (t) => {
  const api = await start(t)
  const agent = new Client({ name: 'petstore-test', version: '1.0.0' })
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${api.root}/mcp`), {
    requestInit: { headers: { 'x-api-key': api.keys.admin } }
  }))
  t.after(() => agent.close())
  const scopes = ['catalog:read', 'orders:read', 'orders:write']
  const made = await agent.callTool({ name: 'createApiKey', arguments: { body: { role: 'customer', plan: 'free', scopes } } }) as unknown as {
    isError?: boolean
    structuredContent: { status: number; data: { id: number; scopes: string[] } }
  }
  assert.equal(made.isError, undefined, JSON.stringify(made.structuredContent))
  assert.equal(made.structuredContent.status, 201)
  assert.deepEqual(made.structuredContent.data.scopes, scopes)
  const stored = await api.call({ method: 'GET', url: `/v1/admin/keys/${made.structuredContent.data.id}` })
  assert.deepEqual(stored.json().scopes, scopes)
})
