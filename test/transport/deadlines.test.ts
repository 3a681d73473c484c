// Each phase of a connection has a deadline, writing included, and what the server answers
// before Fastify (issue 30): a client that stops reading its answer is cut at WRITE_TIMEOUT_MS; a
// request no route takes is answered at once without reading its body, and its connection
// closed; an Expect other than 100-continue gets 417 with the error object; /metrics is served on
// the private listener only. Over real sockets, on startServer (test/helpers/server.ts).
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { test } from 'node:test'
import { parseAnswer, rawExchange } from '../server/raw.ts'
import { startTestServer } from '../helpers/server.ts'
import type { RunningServer } from '../../src/server.ts'

/** The path of the docs bundle (Scalar's script, 4.35 MB uncompressed), read from the docs page. */
export async function docsBundlePath (url: string): Promise<string> {
  const page = await (await fetch(`${url}/docs`)).text()
  const path = /\/docs\/assets\/scalar-api-reference\.[0-9a-f]{16}\.js/.exec(page)?.[0]
  assert.ok(path !== undefined, 'the docs page names its bundle')
  return path
}

/** The server's side of the connections from `from`: how many are open now. */
function connectionsFrom (server: RunningServer, from: string): () => number {
  const sockets = new Set<Socket>()
  server.app.server.on('connection', (socket: Socket) => {
    if (socket.remoteAddress !== from) return
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  return () => sockets.size
}

async function waitFor (what: string, condition: () => Promise<boolean>, withinMs: number): Promise<number> {
  const started = performance.now()
  while (!await condition()) {
    if (performance.now() - started > withinMs) throw new Error(`${what}: not within ${withinMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return performance.now() - started
}

test('a client that asks for the docs bundle and never reads it is cut WRITE_TIMEOUT_MS after it stopped; one that reads gets all of it', { timeout: 20_000 }, async (t) => {
  // Fault caught: no deadline on writing: 100 such sockets stayed open for 100 s, each a busy
  // connection that the caps could not close, and 11 addresses of them locked everyone out.
  const { server, port } = await startTestServer(t, { WRITE_TIMEOUT_MS: '500' })
  const bundle = await docsBundlePath(server.url)
  const open = connectionsFrom(server, '127.0.0.9')
  const readers: Socket[] = []
  t.after(() => { for (const socket of readers) socket.destroy() })
  for (let i = 0; i < 5; i++) {
    const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.9' })
    socket.on('error', () => {})
    // Never read: what the kernel buffers is all the server can hand over.
    socket.pause()
    socket.write(`GET ${bundle} HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: identity\r\n\r\n`)
    readers.push(socket)
  }
  await waitFor('the five connections open', async () => open() === 5, 5000)
  const ms = await waitFor('the five non-readers cut', async () => open() === 0, 5000)
  t.diagnostic(`5 non-readers cut ${Math.round(ms)} ms after they were all open (WRITE_TIMEOUT_MS=500)`)

  // A client that reads takes the whole bundle, however long it is, under the same deadline.
  const whole = await fetch(`${server.url}${bundle}`, { headers: { 'accept-encoding': 'identity' } })
  assert.equal(whole.status, 200)
  assert.equal((await whole.arrayBuffer()).byteLength, Number(whole.headers.get('content-length')))
  assert.ok(Number(whole.headers.get('content-length')) > 4_000_000)
})

test('a body sent to a path no route takes is not read: 404 or 405 at once, and the connection closed; a route that takes a body still reads it', { timeout: 20_000 }, async (t) => {
  // Fault caught: Fastify read the whole body before its not-found handler ran: POST /nothing
  // with Content-Length 60000 and a byte every 2 s held its connection until the request deadline.
  const { port, keys } = await startTestServer(t, {})
  const head = (method: string, path: string, extra = '') => `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n${extra}\r\n{`
  const trickle = { bytes: 'x'.repeat(100), everyMs: 2000 }

  const notFound = await rawExchange(port, head('POST', '/nothing'), trickle)
  const answer = parseAnswer(notFound.text)
  assert.equal(answer.status, 404)
  assert.equal((answer.body as { code: string }).code, 'not_found')
  assert.equal(answer.headers.connection, 'close')
  assert.ok(notFound.ms < 1500, `answered and closed after ${Math.round(notFound.ms)} ms`)

  const notAllowed = await rawExchange(port, head('PATCH', '/healthz'), trickle)
  const refused = parseAnswer(notAllowed.text)
  assert.equal(refused.status, 405)
  assert.equal((refused.body as { code: string }).code, 'method_not_allowed')
  assert.equal(refused.headers.connection, 'close')
  assert.ok(notAllowed.ms < 1500, `answered and closed after ${Math.round(notAllowed.ms)} ms`)

  // Under /v1 too, whatever answers first (here the access step, for a path no route takes).
  const underV1 = await rawExchange(port, head('POST', '/v1/nothing', `X-API-Key: ${keys.customer}\r\n`), trickle)
  assert.equal(parseAnswer(underV1.text).status, 404)
  assert.ok(underV1.ms < 1500, `answered and closed after ${Math.round(underV1.ms)} ms`)

  // A route that takes a body reads it as before: a whole order is placed.
  const body = JSON.stringify({ petId: 2, quantity: 1 })
  const placed = await rawExchange(port, `POST /v1/store/orders HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${keys.customer}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
  assert.equal(parseAnswer(placed.text).status, 201)
})

test('Expect other than 100-continue is answered 417 expectation_failed with the error object, and 100-continue still works', { timeout: 15_000 }, async (t) => {
  // Fault caught: Node's own answer, a bare 417 without the error object or a request id.
  const { port, keys } = await startTestServer(t, {})
  const exchange = await rawExchange(port, `POST /v1/store/orders HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${keys.customer}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 200-ok\r\n\r\n`)
  const answer = parseAnswer(exchange.text)
  assert.equal(answer.status, 417)
  assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8')
  assert.equal(answer.headers.connection, 'close')
  assert.deepEqual(answer.body, { code: 'expectation_failed', message: 'Expect: 200-ok cannot be met; only 100-continue is supported', status: 417, requestId: answer.headers['request-id'] })

  const body = JSON.stringify({ petId: 2, quantity: 1 })
  const continued = await rawExchange(port, `POST /v1/store/orders HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${keys.customer}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n${body}`)
  assert.match(continued.text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /)
})

test('/metrics is served on the private listener and is an unknown path on the public one; the private listener serves the probes and nothing else', { timeout: 15_000 }, async (t) => {
  // Fault caught: /metrics (key ids, traffic, milliseconds of CPU a scrape) on the public port.
  const { server } = await startTestServer(t, {})
  assert.match(server.metricsUrl, /^http:\/\/127\.0\.0\.1:\d+$/, 'loopback by default')
  assert.notEqual(server.metricsUrl, server.url)

  for (const target of ['/metrics', '/metrics?format=text']) {
    const hidden = await fetch(`${server.url}${target}`)
    assert.equal(hidden.status, 404, target)
    assert.equal((await hidden.json() as { code: string }).code, 'not_found')
  }
  const head = await fetch(`${server.url}/metrics`, { method: 'HEAD' })
  assert.equal(head.status, 404)

  const scraped = await fetch(`${server.metricsUrl}/metrics`)
  assert.equal(scraped.status, 200)
  assert.match(await scraped.text(), /^http_requests_total\{operation="\/metrics",method="GET",status="404"\} 2$/m, 'the refusals on the public listener are counted')
  assert.equal((await fetch(`${server.metricsUrl}/healthz`)).status, 200)
  assert.equal((await fetch(`${server.metricsUrl}/readyz`)).status, 200)
  const api = await fetch(`${server.metricsUrl}/v1/pets`)
  assert.equal(api.status, 404)
  assert.equal((await api.json() as { code: string }).code, 'not_found')
})
