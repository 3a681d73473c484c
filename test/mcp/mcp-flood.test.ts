// Issue 48 finding 1, as it was found: eleven client addresses send a hundred /mcp messages each
// at once with one customer key, messages that used to get no answer at all (a reply-shaped
// message, an id of null, 1.5 or an object, params that are not an object). They held every
// connection the server allows (MAX_CONNECTIONS 1000, 100 per address), so another address's API
// calls got 503 connection_limit_reached. Now each is answered at once and charged to the key, so
// the connections are free again: probes from a twelfth address, during the flood and after it,
// are served, and the key's day window counts every message. Against the real listener and its
// connection caps (startServer in this process).
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { test } from 'node:test'
import { startTestServer } from '../helpers/server.ts'

const ADDRESSES = Array.from({ length: 11 }, (_, i) => `127.0.0.${i + 2}`)
const PER_ADDRESS = 100
const PROBE_ADDRESS = '127.0.0.13'

/** Messages the endpoint once left unanswered. */
const MESSAGES = [
  '{"jsonrpc":"2.0","id":1,"result":{}}',
  '{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
  '{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}',
  '{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}',
  '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":"x"}'
]

interface Sent { status: number; body: string }

/** One request on a connection of its own from `address`; fails when no answer comes within 10 s. */
interface Sending { method: string; path: string; headers: Record<string, string>; body?: string }

function send (port: number, address: string, options: Sending): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      localAddress: address,
      agent: false,
      method: options.method,
      path: options.path,
      headers: options.headers,
      timeout: 10_000
    }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => { resolve({ status: res.statusCode!, body }) })
    })
    req.on('timeout', () => { req.destroy(new Error(`no answer from ${options.method} ${options.path} within 10 s`)) })
    req.on('error', reject)
    req.end(options.body)
  })
}

test('11 addresses × 100 unanswerable-once /mcp messages with one key: each answered and charged; a 12th address is served during and after', { timeout: 120_000 }, async (t) => {
  const { port, keys } = await startTestServer(t, { MAX_CONNECTIONS: '1000', MAX_CONNECTIONS_PER_ADDRESS: '100' })
  const mcp = (address: string, body: string) => send(port, address, {
    method: 'POST',
    path: '/mcp',
    headers: { 'x-api-key': keys.customer, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body
  })
  const probe = () => send(port, PROBE_ADDRESS, { method: 'GET', path: '/v1/pets?limit=1', headers: { 'x-api-key': keys.staff } })
  const day = async () => {
    const answer = await send(port, PROBE_ADDRESS, { method: 'GET', path: '/v1/rate_limit', headers: { 'x-api-key': keys.customer } })
    return (JSON.parse(answer.body) as { windows: { day: { remaining: number } } }).windows.day.remaining
  }
  const before = await day()

  const flood = Promise.all(ADDRESSES.flatMap((address) =>
    Array.from({ length: PER_ADDRESS }, (_, i) => mcp(address, MESSAGES[i % MESSAGES.length]!))))
  const during = await Promise.all(Array.from({ length: 30 }, probe))
  const answers = await flood

  assert.deepEqual([...new Set(answers.map((a) => a.status))].sort(), [202, 400], 'each message answered: 202 for the response, 400 for the others')
  for (const answer of answers.filter((a) => a.status === 400)) {
    assert.equal((JSON.parse(answer.body) as { error: { code: number } }).error.code, -32600)
  }
  assert.deepEqual(during.map((p) => p.status), Array(30).fill(200), 'another address is served during the flood')
  assert.deepEqual((await Promise.all(Array.from({ length: 30 }, probe))).map((p) => p.status), Array(30).fill(200), 'and after it')
  assert.equal(await day(), before - ADDRESSES.length * PER_ADDRESS, 'every message was charged to the key, once')
})
