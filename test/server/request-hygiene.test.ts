// The smaller items of issue 19 item 7, over real sockets (what a client can put on the wire):
// malformed URLs are logged and counted, a Request-Id that is a key is never taken, keys spelt
// with percent escapes never reach the log, and Link never names the host the request named.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseAnswer, rawExchange } from './raw.ts'
import { startTestServer } from '../helpers/server.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** One request on a connection of its own, closed after the answer. */
async function send (
  port: number,
  target: string,
  headers: Record<string, string>
): Promise<ReturnType<typeof parseAnswer>> {
  const lines = Object.entries({ host: 'localhost', connection: 'close', ...headers }).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  return parseAnswer((await rawExchange(port, `GET ${target} HTTP/1.1\r\n${lines}\r\n`)).text)
}

/** The log lines written so far (the logger buffers: flushed by closing the server). */
async function flushed (server: { close (): Promise<void> }): Promise<void> {
  await server.close()
}

test('a malformed URL (/v1/pets/%zz) is answered, logged in one request line and counted in /metrics', { timeout: 15_000 }, async (t) => {
  // Fault caught: Fastify answers it outside its hooks: it was charged, but neither logged nor counted.
  const logs: Array<Record<string, unknown>> = []
  const { server, port, keys } = await startTestServer(t, { LOG_LEVEL: 'info' }, logs)
  const answer = await send(port, '/v1/pets/%zz', { 'x-api-key': keys.customer })
  assert.equal(answer.status, 400)
  const requestId = answer.headers['request-id']!
  assert.equal((answer.body as { code: string }).code, 'validation_failed')
  assert.equal(answer.headers['x-ratelimit-limit'], '1000000', 'charged to the key')
  // Outside /v1 too.
  assert.equal((await send(port, '/docs/%zz', {})).status, 400)

  const metrics = await fetch(`${server.metricsUrl}/metrics`)
  const text = await metrics.text()
  assert.match(text, /^http_requests_total\{operation="malformed_url",method="GET",status="400"\} 2$/m)
  assert.match(text, /^http_request_duration_seconds_count\{operation="malformed_url",method="GET"\} 2$/m)

  await flushed(server)
  const line = logs.find((l) => l.reqId === requestId)
  assert.ok(line !== undefined, `a log line for ${requestId}`)
  assert.equal(line.msg, 'request completed')
  assert.equal(line.url, '/v1/pets/%zz')
  assert.equal(line.statusCode, 400)
  assert.equal(line.code, 'validation_failed')
  assert.equal(typeof line.responseTime, 'number')
  assert.equal(logs.filter((l) => l.msg === 'request completed' && l.url === '/docs/%zz').length, 1)
})

test('a Request-Id is taken when it looks like an id, and replaced when it looks like a key or is not an id', { timeout: 15_000 }, async (t) => {
  // Fault caught: `Request-Id: psk_…` was taken as the request id, logged as reqId and echoed.
  const logs: Array<Record<string, unknown>> = []
  const { server, port, keys } = await startTestServer(t, { LOG_LEVEL: 'info' }, logs)
  const uuid = '3f2c8a1e-5b7d-4e9f-a0c1-2d3e4f5a6b7c'
  for (const kept of [uuid, 'trace-123', 'a.b_c-D:9', 'x'.repeat(64)]) {
    const answer = await send(port, '/healthz', { 'request-id': kept })
    assert.equal(answer.headers['request-id'], kept, kept)
  }
  for (const replaced of [keys.customer, `x-${keys.staff}`, 'PSK_abcdef', 'x'.repeat(65), 'two words', '']) {
    const answer = await send(port, '/v1/pets?limit=1', { 'request-id': replaced, 'x-api-key': keys.customer })
    assert.equal(answer.status, 200)
    assert.match(answer.headers['request-id'] ?? '', UUID, replaced)
  }
  // And on an error answer: the body's requestId is the new one.
  const refused = await send(port, '/v1/pets', { 'request-id': keys.staff })
  assert.equal(refused.status, 401)
  assert.match((refused.body as { requestId: string }).requestId, UUID)
  await flushed(server)
  assert.ok(logs.length > 0)
  assert.doesNotMatch(JSON.stringify(logs), /psk_/i)
})

test('keys spelt with percent escapes, in the path or the query, once or twice encoded, are redacted in the log', { timeout: 15_000 }, async (t) => {
  // Fault caught: redaction looked for `psk_` in the URL as sent, so `%70sk_…` was logged whole.
  const logs: Array<Record<string, unknown>> = []
  const { server, port, keys } = await startTestServer(t, { LOG_LEVEL: 'info' }, logs)
  const secret = keys.staff.slice(4)
  const targets = [
    `/v1/pets?name=%70sk_${secret}`,
    `/v1/pets/%70sk_${secret}`,
    `/v1/pets/ps%6B%5F${secret}`,
    `/v1/pets?name=%2570sk_${secret}`,
    `/v1/nothing/%70sk_${secret}`
  ]
  for (const target of targets) {
    const answer = await send(port, target, { 'x-api-key': keys.customer })
    assert.ok(answer.status < 500, `${target}: ${answer.status}`)
    assert.ok(!JSON.stringify(answer.body).includes(secret), `${target}: the answer echoes no key`)
  }
  await flushed(server)
  const lines = logs.filter((l) => l.msg === 'request completed')
  assert.equal(lines.length, targets.length)
  for (const line of lines) assert.match(String(line.url), /\[redacted\]/)
  assert.ok(!JSON.stringify(logs).includes(secret), 'no part of the key in any log line')
})

test('Link rel="next" is relative to the route, never built from the host of an absolute-form target', { timeout: 15_000 }, async (t) => {
  // Fault caught: `GET http://evil.example/v1/pets?limit=1` answered `Link: <http://evil.example/v1/pets?…>`.
  const { port, keys } = await startTestServer(t, {})
  for (const target of ['http://evil.example/v1/pets?limit=1&status=available', 'http://evil.example:8080/v1/%70ets?limit=1&status=available', '/v1/pets?limit=1&status=available']) {
    const answer = await send(port, target, { 'x-api-key': keys.customer, host: 'evil.example' })
    assert.equal(answer.status, 200, target)
    const link = answer.headers.link ?? ''
    const next = /^<([^>]+)>; rel="next"$/.exec(link)?.[1]
    assert.ok(next !== undefined, `${target}: ${link}`)
    assert.match(next, /^\/v1\/pets\?limit=1&status=available&cursor=[A-Za-z0-9_-]+$/, target)
    // The link works: the second page.
    const page = await send(port, next, { 'x-api-key': keys.customer })
    assert.equal(page.status, 200)
    assert.equal((page.body as unknown[]).length, 1)
  }
})
