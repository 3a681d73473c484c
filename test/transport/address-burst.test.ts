// A full address gets an answer (issue 48 item 9): a burst of connections from one address, past
// its share, has each of its requests answered: served, or `503 connection_limit_reached` with
// Retry-After, never closed unanswered. A new connection is not idle until it has had
// FIRST_REQUEST_GRACE_MS to send its request. Over real sockets, on startServer (the default caps:
// MAX_CONNECTIONS 1,000, a tenth of it per address; lowered where a test says).
import assert from 'node:assert/strict'
import type { Socket } from 'node:net'
import { test } from 'node:test'
import { idleConnection, parseAnswer, rawExchange } from '../server/raw.ts'
import { startTestServer } from '../helpers/server.ts'
import type { RunningServer } from '../../src/server.ts'
import { FIRST_REQUEST_GRACE_MS } from '../../src/transport/connections.ts'

const BURST = 150
const SHARE = 100
const FROM = '127.0.0.77'

/** The connections the server has accepted from `from` so far, and how many of them it has closed. */
function countFrom (server: RunningServer, from: string): { accepted: number; closed: number } {
  const counts = { accepted: 0, closed: 0 }
  server.app.server.on('connection', (socket: Socket) => {
    if (socket.remoteAddress !== from) return
    counts.accepted++
    socket.once('close', () => { counts.closed++ })
  })
  return counts
}

async function until (condition: () => boolean, what: string, withinMs = 5000): Promise<void> {
  const started = performance.now()
  while (!condition()) {
    assert.ok(performance.now() - started < withinMs, what)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

test(`${BURST} connections opened at once from one address, then a request on each: ${SHARE} are served and the others answered 503 connection_limit_reached with Retry-After, none closed unanswered`, { timeout: 60_000 }, async (t) => {
  // Fault caught: a connection accepted but whose request had not been read yet counted as idle,
  // and was closed to make room for the address's next one: 50 of 150 simultaneous requests got a
  // socket hang up. Here the server has accepted every connection before any request arrives, as
  // it does when a client's burst of connections outruns its requests (a round trip apart).
  const { server, port, keys } = await startTestServer(t, {})
  const counts = countFrom(server, FROM)
  const sockets = await Promise.all(Array.from({ length: BURST }, () => idleConnection(port, FROM)))
  t.after(() => { for (const socket of sockets) socket.destroy() })
  await until(() => counts.accepted === BURST, `the ${BURST} connections accepted`)
  for (const socket of sockets) {
    if (socket.writable) socket.write(`GET /v1/pets/1 HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${keys.customer}\r\nConnection: close\r\n\r\n`)
  }
  const answers = await Promise.all(sockets.map(async (socket) => (await socket.ended).text))
  const unanswered = answers.filter((text) => text === '').length
  assert.equal(unanswered, 0, `${unanswered} of ${BURST} connections were closed without an answer`)
  const parsed = answers.map(parseAnswer)
  const served = parsed.filter((answer) => answer.status === 200).length
  const refused = parsed.filter((answer) => answer.status !== 200)
  for (const answer of refused) {
    assert.equal(answer.status, 503)
    assert.equal(answer.headers['retry-after'], '1')
    assert.equal(answer.headers.connection, 'close')
    assert.deepEqual(answer.body, {
      code: 'connection_limit_reached',
      message: `this client address is at its cap of ${SHARE} open connections, each with a request in flight; retry after 1 s, or reuse a connection`,
      status: 503,
      requestId: answer.headers['request-id']
    })
  }
  t.diagnostic(`${served} served, ${refused.length} answered 503 connection_limit_reached`)
  assert.equal(served, SHARE)
})

test(`a new connection that has sent nothing holds its address's slot for FIRST_REQUEST_GRACE_MS (the next one is answered 503), then counts as idle and makes room`, { timeout: 30_000 }, async (t) => {
  // Fault caught: a connection accepted a moment ago, its request on its way, was closed as
  // idle; after the grace, a connection that has said nothing is a spare one and may be.
  const { server, port, keys } = await startTestServer(t, {
    MAX_CONNECTIONS: '10',
    MAX_CONNECTIONS_PER_ADDRESS: '2',
    HEADERS_TIMEOUT_MS: '10000',
    REQUEST_TIMEOUT_MS: '10000'
  })
  const counts = countFrom(server, FROM)
  const ask = `GET /v1/pets/1 HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${keys.customer}\r\nConnection: close\r\n\r\n`
  const silent = [await idleConnection(port, FROM), await idleConnection(port, FROM)]
  t.after(() => { for (const socket of silent) socket.destroy() })
  await until(() => counts.accepted === 2, 'both connections accepted')
  const opened = performance.now()

  const early = parseAnswer((await rawExchange(port, ask, undefined, FROM)).text)
  assert.ok(performance.now() - opened < FIRST_REQUEST_GRACE_MS, 'asked within the grace')
  assert.equal(early.status, 503)
  assert.equal((early.body as { code: string }).code, 'connection_limit_reached')
  assert.equal(counts.closed, 1, 'only the refused connection was closed')

  await new Promise((resolve) => setTimeout(resolve, FIRST_REQUEST_GRACE_MS + 100 - (performance.now() - opened)))
  const late = parseAnswer((await rawExchange(port, ask, undefined, FROM)).text)
  assert.equal(late.status, 200)
  // The silent connection opened first made room, without a word: it had no request to answer.
  assert.equal((await silent[0]!.ended).text, '')
  assert.equal(silent[1]!.destroyed, false)
  for (const socket of silent) socket.destroy()
})

test('at MAX_CONNECTIONS, a new connection of the address holding the most makes room for another address before it has sent its request', { timeout: 30_000 }, async (t) => {
  // Fault caught: with new connections no longer idle, an address opening connections and
  // sending nothing would hold the process cap until the header deadline; such a connection
  // waits on its client, like a body trickling in, and the biggest address gives it up first.
  const { server, port, keys } = await startTestServer(t, {
    MAX_CONNECTIONS: '4',
    MAX_CONNECTIONS_PER_ADDRESS: '4',
    HEADERS_TIMEOUT_MS: '10000',
    REQUEST_TIMEOUT_MS: '10000'
  })
  const counts = countFrom(server, FROM)
  const silent = await Promise.all(Array.from({ length: 4 }, () => idleConnection(port, FROM)))
  t.after(() => { for (const socket of silent) socket.destroy() })
  await until(() => counts.accepted === 4, 'the four connections accepted')
  const other = await rawExchange(port, `GET /v1/pets/1 HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${keys.customer}\r\nConnection: close\r\n\r\n`, undefined, '127.0.0.78')
  assert.equal(parseAnswer(other.text).status, 200)
  assert.equal(counts.closed, 1)
  for (const socket of silent) socket.destroy()
})
