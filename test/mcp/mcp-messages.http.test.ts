// Every message POSTed to /mcp gets an answer at once (issue 48 finding 1), as the Streamable HTTP
// transport of MCP 2025-06-18 says: a JSON-RPC error object and 400 for a malformed one (not JSON,
// a batch, an id that is null, a fraction or an object, params that are not an object), 202 for
// a response or a notification, the answer for a request; and each costs what a request costs
// (a notification nothing, while the key may call). A limited or banned key's notifications and
// responses are refused like any request. Faults caught: a message handed to the SDK that it
// never answers (the connection held), a message that costs nothing.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { listenTestApp } from '../helpers/app.ts'

interface Exchange { status: number; body: unknown; headers: Headers }

async function post (root: string, key: string, body: string, contentType = 'application/json'): Promise<Exchange> {
  const answer = await fetch(`${root}/mcp`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': contentType, accept: 'application/json, text/event-stream' },
    body,
    // An answer that never comes fails the test here, not at the suite's timeout.
    signal: AbortSignal.timeout(5_000)
  })
  const text = await answer.text()
  return { status: answer.status, body: text === '' ? null : JSON.parse(text), headers: answer.headers }
}

async function remainingMinute (baseUrl: string, key: string): Promise<number> {
  const answer = await fetch(`${baseUrl}/rate_limit`, { headers: { 'x-api-key': key } })
  return ((await answer.json()) as { windows: { minute: { remaining: number } } }).windows.minute.remaining
}

interface Case { name: string; body: string; contentType?: string; status: number; code?: number; charged: boolean }

const CASES: Case[] = [
  { name: 'a response (reply-shaped)', body: '{"jsonrpc":"2.0","id":1,"result":{}}', status: 202, charged: true },
  { name: 'an error response', body: '{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no"}}', status: 202, charged: true },
  { name: 'an id of null', body: '{"jsonrpc":"2.0","id":null,"method":"tools/list"}', status: 400, code: -32600, charged: true },
  { name: 'an id of 1.5', body: '{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', status: 400, code: -32600, charged: true },
  { name: 'an id that is an object', body: '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', status: 400, code: -32600, charged: true },
  { name: 'params that are not an object', body: '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[1]}', status: 400, code: -32600, charged: true },
  { name: 'a batch', body: '[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]', status: 400, code: -32600, charged: true },
  { name: 'an empty batch', body: '[]', status: 400, code: -32600, charged: true },
  { name: 'no jsonrpc member', body: '{"id":4,"method":"tools/list"}', status: 400, code: -32600, charged: true },
  { name: 'garbage', body: '{"jsonrpc": "2.0", "id": 5,', status: 400, code: -32700, charged: true },
  { name: 'an empty body', body: '', status: 400, code: -32700, charged: true },
  { name: 'a JSON string', body: '"tools/list"', status: 400, code: -32600, charged: true },
  { name: 'text', body: 'hello', contentType: 'text/plain', status: 415, code: -32600, charged: true },
  { name: 'a notification', body: '{"jsonrpc":"2.0","method":"notifications/initialized"}', status: 202, charged: false },
  { name: 'an unknown notification', body: '{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}', status: 202, charged: false }
]

test('every /mcp message is answered at once: 400 and a JSON-RPC error when malformed, 202 for a response or a notification; each charged but notifications', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 1000, perDay: 10_000 })
  for (const c of CASES) {
    const before = await remainingMinute(api.baseUrl, key)
    const answer = await post(root, key, c.body, c.contentType)
    assert.equal(answer.status, c.status, `${c.name}: ${JSON.stringify(answer.body)}`)
    if (c.code === undefined) {
      assert.equal(answer.body, null, `${c.name}: no body`)
    } else {
      const { error, ...envelope } = answer.body as { error: { code: number; message: string } }
      assert.deepEqual(envelope, { jsonrpc: '2.0', id: null }, c.name)
      assert.deepEqual(Object.keys(error), ['code', 'message'], c.name)
      assert.equal(error.code, c.code, c.name)
      assert.match(error.message, /^(Parse error|Invalid Request|Unsupported Media Type): /, c.name)
    }
    assert.equal(await remainingMinute(api.baseUrl, key), before - (c.charged ? 1 : 0), `${c.name}: charged ${c.charged ? 'one request' : 'nothing'}`)
  }
})

test('a request the server cannot serve is answered with its JSON-RPC error, and charged', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 1000, perDay: 10_000 })
  const before = await remainingMinute(api.baseUrl, key)
  const unknown = await post(root, key, '{"jsonrpc":"2.0","id":7,"method":"resources/list"}')
  assert.equal(unknown.status, 200)
  assert.deepEqual(unknown.body, { jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found' } })
  const badCall = await post(root, key, '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":5}}')
  assert.deepEqual(badCall.body, {
    jsonrpc: '2.0',
    id: 8,
    error: { code: -32602, message: 'Invalid params: tools/call takes { "name": string, "arguments"?: object }' }
  })
  const ping = await post(root, key, '{"jsonrpc":"2.0","id":"p","method":"ping"}')
  assert.deepEqual(ping.body, { jsonrpc: '2.0', id: 'p', result: {} })
  assert.equal(await remainingMinute(api.baseUrl, key), before - 3)
})

test('a limited key\'s notifications and responses are refused with 429 and a JSON-RPC error carrying the refusal; a banned key\'s too', async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 2, perDay: 1000 })
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) statuses.push((await post(root, key, `{"jsonrpc":"2.0","id":${i},"result":{}}`)).status)
  assert.deepEqual(statuses, [202, 202, 429], 'two responses charged, the third refused')
  const notification = await post(root, key, '{"jsonrpc":"2.0","method":"notifications/initialized"}')
  assert.equal(notification.status, 429)
  assert.ok(Number(notification.headers.get('retry-after')) > 0, 'with Retry-After')
  type Refusal = { id: unknown; error: { code: number; data: { status: number; error: { code: string } } } }
  const body = notification.body as Refusal
  assert.equal(body.id, null)
  assert.equal(body.error.code, -32000)
  assert.equal(body.error.data.status, 429)
  assert.equal(body.error.data.error.code, 'rate_limited')

  // Calling on while refused ends in a ban: then every message is refused as banned.
  const codeOf = (answer: Exchange) => (answer.body as Partial<Refusal>).error?.data?.error?.code
  let last = notification
  for (let i = 0; i < 40 && codeOf(last) !== 'api_key_banned'; i++) last = await post(root, key, '{"jsonrpc":"2.0","id":9,"result":{}}')
  assert.equal(codeOf(last), 'api_key_banned')
  assert.equal(last.status, 429)
  for (const message of ['{"jsonrpc":"2.0","method":"notifications/initialized"}', '{"jsonrpc":"2.0","id":null}', '{"jsonrpc":"2.0","id":3,"method":"tools/list"}']) {
    const answer = await post(root, key, message)
    assert.equal(codeOf(answer), 'api_key_banned', `${message}: ${JSON.stringify(answer.body)}`)
  }
})
