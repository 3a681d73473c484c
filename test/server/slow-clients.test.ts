// Slow clients are cut off at the configured deadlines while the others are served, and the
// connection cap holds (docs/product.md section 9). The deadlines are set short here (a few
// hundred ms) so the suite stays fast; the production defaults are in docs/configuration.md.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { idleConnection, parseAnswer, rawExchange } from './raw.ts'
import { startTestServer } from '../helpers/server.ts'

const LIMITS = { HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '600', KEEP_ALIVE_TIMEOUT_MS: '300' }
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const timeoutAnswer = (requestId: string) => ({
  code: 'request_timeout',
  message: 'the request did not arrive in time: its headers are allowed 300 ms, the whole request 600 ms',
  status: 408,
  requestId
})

test('slow headers and a body trickling 1 byte at a time are cut off with 408 request_timeout while other clients are served', { timeout: 15_000 }, async (t) => {
  const { server, port, keys } = await startTestServer(t, LIMITS)

  // Headers that never end: one more byte of a header every 50 ms.
  const slowHeaders = rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ', { bytes: 'a'.repeat(1000), everyMs: 50 })
  // A complete head, then a 40-byte body at 1 byte every 50 ms: 2 s for the whole body.
  const body = JSON.stringify({ petId: 1, quantity: 1, x: 'abcdefghijk' })
  const slowBody = rawExchange(port,
    `POST /v1/store/orders HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${keys.customer}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    { bytes: body, everyMs: 50 })

  // Meanwhile the others are served, and at once.
  const pet = await fetch(`${server.url}/v1/pets/2`, { headers: { 'x-api-key': keys.customer } })
  assert.equal(pet.status, 200)
  assert.equal((await pet.json() as { name: string }).name, 'Bella')
  for (let i = 0; i < 5; i++) {
    const started = performance.now()
    const health = await fetch(`${server.url}/healthz`)
    assert.equal(health.status, 200)
    await health.arrayBuffer()
    assert.ok(performance.now() - started < 250, 'a normal request waits for no slow client')
  }

  const headersCut = await slowHeaders
  const headersAnswer = parseAnswer(headersCut.text)
  assert.equal(headersAnswer.status, 408)
  assert.match(headersAnswer.headers['request-id'] ?? '', UUID)
  assert.equal(headersAnswer.headers['content-type'], 'application/json; charset=utf-8')
  assert.equal(headersAnswer.headers.connection, 'close')
  assert.deepEqual(headersAnswer.body, timeoutAnswer(headersAnswer.headers['request-id']!))
  assert.ok(headersCut.ms >= 300 && headersCut.ms < 1500, `slow headers were cut after ${Math.round(headersCut.ms)} ms (deadline 300 ms)`)

  const bodyCut = await slowBody
  const bodyAnswer = parseAnswer(bodyCut.text)
  assert.equal(bodyAnswer.status, 408)
  assert.deepEqual(bodyAnswer.body, timeoutAnswer(bodyAnswer.headers['request-id']!))
  assert.ok(bodyCut.ms >= 600 && bodyCut.ms < 1800, `the trickled body was cut after ${Math.round(bodyCut.ms)} ms (deadline 600 ms)`)
  t.diagnostic(`slow headers cut after ${Math.round(headersCut.ms)} ms, slow body after ${Math.round(bodyCut.ms)} ms`)

  // The order was never placed: the stock is untouched.
  const inventory = await fetch(`${server.url}/v1/store/inventory/1`, { headers: { 'x-api-key': keys.customer } })
  assert.equal((await inventory.json() as { quantity: number }).quantity, 1)
})

test('a body still trickling after its 401 gets no second answer when its deadline passes: the connection is closed', { timeout: 10_000 }, async (t) => {
  const { port } = await startTestServer(t, LIMITS)
  const body = JSON.stringify({ petId: 1, quantity: 1, x: 'abcdefghijk' })
  const exchange = await rawExchange(port,
    `POST /v1/store/orders HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    { bytes: body, everyMs: 50 })
  // One answer, the 401 (the key is checked before the body is read), and nothing after it.
  const answer = parseAnswer(exchange.text)
  assert.equal(answer.status, 401)
  assert.equal((answer.body as { code: string }).code, 'unauthenticated')
  assert.ok(exchange.ms < 1800, `closed after ${Math.round(exchange.ms)} ms`)
})

test('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', { timeout: 10_000 }, async (t) => {
  const { port } = await startTestServer(t, LIMITS)
  const exchange = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n')
  assert.match(exchange.text, /^HTTP\/1\.1 200 OK\r\n/)
  assert.match(exchange.text, /\r\nConnection: keep-alive\r\n/i)
  assert.ok(exchange.ms >= 250 && exchange.ms < 1500, `closed ${Math.round(exchange.ms)} ms after the answer began (keep-alive 300 ms)`)
})

test('past MAX_CONNECTIONS a newcomer is still served while the connections that never sent a request are within their first-request grace; those are cut at the header deadline', { timeout: 10_000 }, async (t) => {
  // Refusing a newcomer while the cap is held by connections that do nothing is covered, with
  // busy connections, in connection-fairness.test.ts.
  const { port } = await startTestServer(t, { ...LIMITS, MAX_CONNECTIONS: '4', MAX_CONNECTIONS_PER_ADDRESS: '4' })
  const idle: Awaited<ReturnType<typeof idleConnection>>[] = []
  for (let i = 0; i < 4; i++) idle.push(await idleConnection(port))

  const fifth = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
  assert.equal(parseAnswer(fifth.text).status, 200)
  assert.deepEqual(parseAnswer(fifth.text).body, { status: 'ok' })
  // None of the four was closed to make room: a just-accepted connection has 1 s to send its
  // request before it counts as idle (transport/connections.ts, FIRST_REQUEST_GRACE_MS; closing
  // one after the grace is covered in test/transport/address-burst.test.ts).
  // A connection that never sends a request is a slow client too: cut at the header deadline.
  for (const socket of idle) {
    const { text } = await socket.ended
    const answer = parseAnswer(text)
    assert.equal(answer.status, 408)
    assert.equal((answer.body as { code: string }).code, 'request_timeout')
  }
})
