// No request stays in flight past its deadline (issue 48 item 1): a route that never answers is
// answered `503 service_unavailable` REQUEST_TIMEOUT_MS after its request arrived, and its
// connection closed, which frees its slot in the connection caps. The routes here are the test's
// own, on a Fastify server made as the API's is (connectionOptions, guardConnections), since any
// route may hang: a bug, or a service behind it that never replies. The sweep itself is driven by
// hand, on stand-in responses, in connection-guard.test.ts.
import assert from 'node:assert/strict'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { test, type TestContext } from 'node:test'
import Fastify from 'fastify'
import { DEFAULT_SERVER_LIMITS, type ServerLimits } from '../../src/config.ts'
import { connectionOptions, guardConnections, tagRequestId } from '../../src/transport/connections.ts'
import { parseAnswer, rawExchange } from '../server/raw.ts'

interface HangingServer {
  port: number
  /** Requests that reached the hanging route, by request id. */
  hanging: string[]
  overdue: string[]
}

/**
 * A server made as the API's (connectionOptions, guardConnections) with routes of its own:
 * GET /hang never answers; GET /ok answers at once; GET /slow after 60% of REQUEST_TIMEOUT_MS.
 */
async function hangingServer (t: TestContext, limits: ServerLimits): Promise<HangingServer> {
  let ids = 0
  const app = Fastify({
    ...connectionOptions(limits),
    genReqId: (request) => tagRequestId(request, `test-${++ids}`),
    // Closed after the test whatever is in flight: on the code before, the hanging requests were.
    forceCloseConnections: true
  })
  const hanging: string[] = []
  const overdue: string[] = []
  app.get('/hang', async (request) => {
    hanging.push(request.id)
    return await new Promise(() => {})
  })
  app.get('/ok', async () => ({ ok: true }))
  app.get('/slow', async () => {
    await new Promise((resolve) => setTimeout(resolve, limits.requestTimeoutMs * 0.6))
    return { ok: true }
  })
  guardConnections(app.server, limits, { onRefused () {}, onOverdue: (address) => overdue.push(address) })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.after(() => app.close())
  const address = app.server.address()
  assert.ok(address !== null && typeof address === 'object')
  return { port: address.port, hanging, overdue }
}

test('a route that never answers is answered 503 service_unavailable REQUEST_TIMEOUT_MS after its request, with Retry-After and its request id, and the connection closed; answers in time are untouched', { timeout: 30_000 }, async (t) => {
  // Fault caught: REQUEST_TIMEOUT_MS covered the arrival of a request only: a route that never
  // answered held its connection, and its slot in the connection caps, for ever.
  const limits = { ...DEFAULT_SERVER_LIMITS, headersTimeoutMs: 500, requestTimeoutMs: 1000 }
  const { port, hanging, overdue } = await hangingServer(t, limits)

  const cut = await rawExchange(port, 'GET /hang HTTP/1.1\r\nHost: localhost\r\n\r\n')
  const answer = parseAnswer(cut.text)
  assert.equal(answer.status, 503)
  assert.equal(answer.headers['retry-after'], '5')
  assert.equal(answer.headers.connection, 'close')
  assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8')
  assert.equal(answer.headers['x-content-type-options'], 'nosniff')
  assert.deepEqual(hanging, ['test-1'])
  assert.deepEqual(answer.body, {
    code: 'service_unavailable',
    message: 'the server did not answer within 1000 ms; the request may still take effect: retry after 5 s, a create with the same Idempotency-Key',
    status: 503,
    requestId: 'test-1'
  })
  assert.equal(answer.headers['request-id'], 'test-1', 'the id of the request\'s log line')
  // Never before the deadline (the connection's time includes the request's few milliseconds on
  // the wire); the upper bound only says that it came, on a shared machine.
  assert.ok(cut.ms >= 990, `cut after ${Math.round(cut.ms)} ms`)
  assert.ok(cut.ms < 5000, `cut after ${Math.round(cut.ms)} ms`)
  assert.deepEqual(overdue, ['ip:127.0.0.1'])

  // A route that takes most of the deadline is answered, and the deadline is each request's own:
  // three of them, one after the other on one keep-alive connection, take longer than
  // REQUEST_TIMEOUT_MS in all.
  const socket = connect({ port, host: '127.0.0.1' })
  t.after(() => socket.destroy())
  await new Promise((resolve) => socket.once('connect', resolve))
  const started = performance.now()
  for (let i = 0; i < 3; i++) {
    socket.write('GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n')
    const head = await new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))))
    assert.match(head, /^HTTP\/1\.1 200 /)
  }
  assert.ok(performance.now() - started > 1500)
  assert.deepEqual(overdue, ['ip:127.0.0.1'], 'nothing else was cut')
})

/** The attackers' addresses, 127.0.1.1 to 127.0.1.11, and the prober's. */
const ATTACKERS = Array.from({ length: 11 }, (_, i) => `127.0.1.${i + 1}`)
const PROBE_FROM = '127.0.0.200'

/** A connection from `from` that sends GET /hang; resolves with what came back once it closes. */
function hang (port: number, from: string): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    const socket = connect({ port, host: '127.0.0.1', localAddress: from }, () => {
      socket.write('GET /hang HTTP/1.1\r\nHost: localhost\r\n\r\n')
    })
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1')))
  })
}

test('11 addresses x 100 requests to a route that never answers hold every connection only until the deadline: then another address is served, and every hanging request has an answer', { timeout: 60_000 }, async (t) => {
  // Fault caught: issue 48's /mcp messages that got no answer: 11 addresses x 100 held all 1,000
  // connections for ever, and another address's calls got 30 of 30 `503 connection_limit_reached`.
  const limits = { ...DEFAULT_SERVER_LIMITS, headersTimeoutMs: 6000, requestTimeoutMs: 6000 }
  const { port, hanging, overdue } = await hangingServer(t, limits)
  const probe = async (): Promise<number> => {
    const { text } = await rawExchange(port, 'GET /ok HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', undefined, PROBE_FROM)
    return text === '' ? 0 : parseAnswer(text).status
  }
  const started = performance.now()
  const attacks = ATTACKERS.flatMap((from) => Array.from({ length: 100 }, () => hang(port, from)))
  // The caps hold 1,000 of them (100 per address) in flight; the other 100 are refused.
  while (hanging.length < 1000) {
    assert.ok(performance.now() - started < 5000, `only ${hanging.length} requests in flight after 5 s`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const filled = performance.now() - started
  assert.equal(await probe(), 503, 'the caps are full: a newcomer is refused')
  // Then the deadline frees them: the probes are served.
  const statuses: number[] = []
  while (statuses.at(-1) !== 200) {
    assert.ok(performance.now() - started < 20_000, `probes: ${statuses.join(' ')}`)
    statuses.push(await probe())
    if (statuses.at(-1) !== 200) await new Promise((resolve) => setTimeout(resolve, 250))
  }
  const servedAfter = performance.now() - started
  const answers = await Promise.all(attacks)
  t.diagnostic(`1,000 in flight after ${Math.round(filled)} ms; a probe served ${Math.round(servedAfter)} ms after the attack began`)
  assert.ok(servedAfter >= 5900, 'not before the deadline')
  const codes = answers.map((text) => text === '' ? 'no answer' : (parseAnswer(text).body as { code: string }).code)
  const count = (code: string) => codes.filter((c) => c === code).length
  assert.equal(count('service_unavailable'), 1000)
  assert.equal(count('connection_limit_reached'), 100)
  assert.equal(overdue.length, 1000)
})

// What the sweep reads of a real response, checked against Node itself: `_httpMessage` on the
// socket while an answer is pending, and `req.complete` once the request has arrived (a bodiless
// request's handler may run before Node has marked it: the sweep looks a check interval later).
test('Node keeps the pending answer on its socket as _httpMessage, with its request complete once it has arrived', { timeout: 10_000 }, async (t) => {
  const app = Fastify()
  let seen: { pending: boolean; complete: boolean } | undefined
  app.get('/look', async (request, reply) => {
    await new Promise((resolve) => setTimeout(resolve, 20))
    const pending = (request.raw.socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
    const complete = (pending?.req as IncomingMessage | undefined)?.complete === true
    seen = { pending: pending === reply.raw, complete }
    return {}
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.after(() => app.close())
  const address = app.server.address()
  assert.ok(address !== null && typeof address === 'object')
  assert.equal((await fetch(`http://127.0.0.1:${address.port}/look`)).status, 200)
  assert.deepEqual(seen, { pending: true, complete: true })
})
