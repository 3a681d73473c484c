// The connection guard's choices that connection-guard.test.ts left open (src/transport/connections.ts;
// issue 48 items 1 and 9), driven by hand with stand-in sockets and a mocked clock: which address
// gives up a connection at MAX_CONNECTIONS when several could, a body still arriving long after
// the first-request grace, a connection that leaves the refusal lane from its middle, and the
// guard's timers, which must never keep a stopping process alive. Faults caught: a connection
// taken from an address holding fewer than another, or from one holding just one more than the
// newcomer; a slow upload past the grace taken for the server's own work (the newcomer refused
// while a client holds the server up); a closed connection left counting in the lane, so that a
// live one is closed early to make room; the answer deadline's sweep or the log's window holding
// the process up.
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import type { Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { test, type TestContext } from 'node:test'
import {
  FIRST_REQUEST_GRACE_MS,
  guardConnections,
  overdueAnswers,
  reportRefusals,
  type RefusalReason
} from '../../src/transport/connections.ts'

/** A socket as the guard reads it: its address, Node's answer in progress and request being parsed. */
class StandInSocket extends EventEmitter {
  readonly remoteAddress: string
  destroyed = false
  _httpMessage: { headersSent: boolean } | null = null
  parser: { incoming: { complete: boolean } | null } | null = null
  writableLength = 0
  constructor (remoteAddress: string) {
    super()
    this.remoteAddress = remoteAddress
  }

  destroy (): void {
    if (this.destroyed) return
    this.destroyed = true
    this.emit('close')
  }
}

function guarded (t: TestContext, caps: { maxConnections: number; maxConnectionsPerAddress: number }) {
  let clock = 0
  t.mock.method(performance, 'now', () => clock)
  const server = new EventEmitter() as unknown as Server
  const refused: Array<[RefusalReason, string]> = []
  guardConnections(server, { headersTimeoutMs: 10_000, requestTimeoutMs: 10_000, ...caps }, {
    onRefused: (reason, address) => refused.push([reason, address]),
    onOverdue () {}
  })
  return {
    refused,
    connect (from: string): StandInSocket {
      const socket = new StandInSocket(from)
      server.emit('connection', socket)
      return socket
    },
    /** A request on `socket` whose answer is pending (Node attaches it when the headers are read). */
    request (socket: StandInSocket): void {
      const response = { headersSent: false, req: { complete: true } }
      socket._httpMessage = response
      server.emit('request', { socket }, response)
    },
    at (ms: number): void { clock = ms }
  }
}

/** Its request's body still arriving: the connection waits on its client. */
const uploading = (socket: StandInSocket): StandInSocket => {
  socket.parser = { incoming: { complete: false } }
  return socket
}

const A = '192.0.2.1'
const B = '192.0.2.2'
const C = '192.0.2.3'
const destroyed = (sockets: StandInSocket[]): boolean[] => sockets.map((socket) => socket.destroyed)

test('at MAX_CONNECTIONS with none idle, the address holding the most gives up a connection even when a smaller one waits longer, seen first or last', (t) => {
  const guard = guarded(t, { maxConnections: 7, maxConnectionsPerAddress: 7 })
  // B is seen first and its connections are the oldest; A holds more.
  const b = [guard.connect(B), guard.connect(B), guard.connect(B)].map(uploading)
  const a = [guard.connect(A), guard.connect(A), guard.connect(A), guard.connect(A)].map(uploading)
  guard.connect(C)
  assert.deepEqual(destroyed(a), [true, false, false, false], 'A\'s that waited longest')
  assert.deepEqual(destroyed(b), [false, false, false])
  assert.deepEqual(guard.refused, [])
})

test('the address holding the most gives up its connection when it is seen first and a smaller one\'s connections are older', (t) => {
  const guard = guarded(t, { maxConnections: 7, maxConnectionsPerAddress: 7 })
  // A is seen first (its first connection), then B's three, then A's other three.
  const a = [uploading(guard.connect(A))]
  const b = [guard.connect(B), guard.connect(B), guard.connect(B)].map(uploading)
  a.push(...[guard.connect(A), guard.connect(A), guard.connect(A)].map(uploading))
  // Each of A's has since sent a request whose body is arriving: all of B's began earlier.
  for (const socket of a) guard.request(socket)
  guard.connect(C)
  assert.deepEqual(destroyed(a), [true, false, false, false])
  assert.deepEqual(destroyed(b), [false, false, false], 'B holds fewer: its older connections are not taken')
})

test('of two addresses holding as many, the one seen first gives up its oldest when its connections are the older', (t) => {
  const guard = guarded(t, { maxConnections: 6, maxConnectionsPerAddress: 6 })
  const a = [guard.connect(A), guard.connect(A), guard.connect(A)].map(uploading)
  const b = [guard.connect(B), guard.connect(B), guard.connect(B)].map(uploading)
  guard.connect(C)
  assert.deepEqual(destroyed([...a, ...b]), [true, false, false, false, false, false])
})

test('an address gives up a connection when it holds two more than the newcomer\'s address, not one more', (t) => {
  const guard = guarded(t, { maxConnections: 6, maxConnectionsPerAddress: 6 })
  // C already holds one. A holds three (1 + 2), B two (1 + 1).
  const c = uploading(guard.connect(C))
  const a = [guard.connect(A), guard.connect(A), guard.connect(A)].map(uploading)
  const b = [guard.connect(B), guard.connect(B)].map(uploading)
  guard.connect(C)
  assert.deepEqual(destroyed([c, ...a, ...b]), [false, true, false, false, false, false])
  assert.deepEqual(guard.refused, [])
  // Now A holds two, B two, C two: none holds two more than C, so C's third is refused.
  guard.connect(C)
  assert.deepEqual(guard.refused, [['total', 'ip:192.0.2.3']])
  assert.deepEqual(destroyed([c, ...a.slice(1), ...b]), [false, false, false, false, false])
})

test('a request whose body is still arriving long after the first-request grace waits on its client: it makes room at MAX_CONNECTIONS', (t) => {
  const guard = guarded(t, { maxConnections: 6, maxConnectionsPerAddress: 6 })
  const a = [guard.connect(A), guard.connect(A), guard.connect(A), guard.connect(A)]
  const b = [guard.connect(B), guard.connect(B)]
  // Every one has a request in flight (none idle); of A's, only the third's body is still coming.
  for (const socket of [...a, ...b]) guard.request(socket)
  uploading(a[2]!)
  guard.at(60 * FIRST_REQUEST_GRACE_MS)
  guard.connect(C)
  assert.deepEqual(destroyed([...a, ...b]), [false, false, true, false, false, false])
  assert.deepEqual(guard.refused, [])
})

test('a connection that leaves the refusal lane from its middle frees its place at once: the oldest waiting keeps its own', (t) => {
  const guard = guarded(t, { maxConnections: 10, maxConnectionsPerAddress: 1 })
  guard.request(guard.connect(A))
  const lane = Array.from({ length: 16 }, () => guard.connect(A))
  assert.equal(guard.refused.length, 16)
  assert.deepEqual(destroyed(lane), new Array<boolean>(16).fill(false), 'the lane holds 16')
  // The sixth is answered and closes; the lane has room for one more without closing anyone.
  lane[5]!.destroy()
  const next = guard.connect(A)
  assert.deepEqual(destroyed([lane[0]!, next]), [false, false])
  // Full again: the next refusal closes the one waiting longest.
  guard.connect(A)
  assert.deepEqual(destroyed([lane[0]!, lane[1]!]), [true, false])
  for (const socket of lane) socket.destroy()
})

/** The timers that keep the process alive (an unref'd one is not listed). */
const liveTimers = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length

test('the answer deadline\'s sweep, armed by a request in flight, does not keep the process alive', () => {
  const response = { headersSent: false, req: { complete: true } }
  const connections = [{ socket: { _httpMessage: response } as unknown as Socket, address: '192.0.2.1' }]
  const answers = overdueAnswers({ headersTimeoutMs: 500, requestTimeoutMs: 1000 }, { onOverdue () {} }, connections)
  const before = liveTimers()
  answers.stamp(response as unknown as ServerResponse)
  assert.equal(liveTimers(), before)
  // Re-armed by a sweep that finds the request still in flight: still not holding the process.
  answers.sweep()
  assert.equal(liveTimers(), before)
  // Answered: the next sweep finds nothing in flight and arms nothing.
  response.headersSent = true
  answers.sweep()
})

test('the log\'s 10 s window after a refusal does not keep the process alive', () => {
  const log = { warn () {}, error () {} }
  const events = reportRefusals(log, { maxConnections: 1000, maxConnectionsPerAddress: 100, requestTimeoutMs: 30_000 })
  const before = liveTimers()
  events.onRefused('address', 'ip:192.0.2.1')
  events.onRefused('total', 'ip:192.0.2.1')
  events.onOverdue('ip:192.0.2.1')
  assert.equal(liveTimers(), before)
})
