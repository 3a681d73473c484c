// The connection guard's rules (src/transport/connections.ts, guardConnections), driven by hand:
// stand-in sockets on a stand-in server, the clock and timers mocked, so that each rule is pinned
// in milliseconds: which connection makes room at each cap, the first-request grace and its
// boundary, the refusal lane's size and deadline, the log's windows, and the answer's deadline.
// The same rules over real sockets: address-burst.test.ts, answer-deadline.test.ts,
// test/server/slow-clients.test.ts.
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import type { Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { test, type TestContext } from 'node:test'
import type { ServerLimits } from '../../src/config.ts'
import {
  FIRST_REQUEST_GRACE_MS,
  guardConnections,
  overdueAnswers,
  REFUSAL_LANE_MS,
  refusalLaneSize,
  reportRefusals,
  type RefusalReason
} from '../../src/transport/connections.ts'

/** A socket as the guard reads it: its address, Node's answer in progress and request being parsed. */
class StandInSocket extends EventEmitter {
  readonly remoteAddress: string | undefined
  destroyed = false
  _httpMessage: { headersSent: boolean } | null = null
  parser: { incoming: { complete: boolean } | null } | null = null
  writableLength = 0
  constructor (remoteAddress: string | undefined) {
    super()
    this.remoteAddress = remoteAddress
  }

  destroy (): void {
    if (this.destroyed) return
    this.destroyed = true
    this.emit('close')
  }
}

interface Guarded {
  server: Server
  /** A new connection from `from`, as the server's 'connection' event gives it. */
  connect (from: string): StandInSocket
  /** A request on `socket` (its answer pending until `done`). */
  request (socket: StandInSocket): { done (): void }
  refused: Array<[RefusalReason, string]>
  /** Moves the mocked clock (performance.now) to `ms`. */
  at (ms: number): void
}

const LIMITS = { headersTimeoutMs: 10_000, requestTimeoutMs: 10_000 }

function guarded (t: TestContext, caps: { maxConnections: number; maxConnectionsPerAddress: number }): Guarded {
  let clock = 0
  t.mock.method(performance, 'now', () => clock)
  const server = new EventEmitter() as unknown as Server
  const refused: Array<[RefusalReason, string]> = []
  guardConnections(server, { ...LIMITS, ...caps }, {
    onRefused: (reason, address) => refused.push([reason, address]),
    onOverdue () {}
  })
  return {
    server,
    refused,
    connect (from) {
      const socket = new StandInSocket(from)
      server.emit('connection', socket)
      return socket
    },
    request (socket) {
      // Node attaches the answer to the socket as soon as the request's headers are read.
      const response = { headersSent: false, req: { complete: true } }
      socket._httpMessage = response
      server.emit('request', { socket }, response)
      return { done () { socket._httpMessage = null } }
    },
    at (ms) { clock = ms }
  }
}

const A = '192.0.2.1'
const B = '192.0.2.2'
const C = '192.0.2.3'

test('the server\'s own cap is set far above the guard\'s: twice MAX_CONNECTIONS and the refusal lane', (t) => {
  const { server } = guarded(t, { maxConnections: 10, maxConnectionsPerAddress: 2 })
  assert.equal(server.maxConnections, 36)
})

test('the refusal lane holds a twentieth of MAX_CONNECTIONS, and never fewer than 16', () => {
  assert.deepEqual([10, 320, 321, 1000].map((maxConnections) => refusalLaneSize({ maxConnections })), [16, 16, 17, 50])
})

test('at its share, an address\'s new connection is refused while its others are within their first-request grace, then makes room by closing one', (t) => {
  // Fault caught (issue 48 item 9): a connection accepted a moment ago, its request on its way,
  // was closed as idle to make room for the next one of its address.
  const guard = guarded(t, { maxConnections: 10, maxConnectionsPerAddress: 2 })
  const first = guard.connect(A)
  guard.at(10)
  const second = guard.connect(A)
  guard.at(FIRST_REQUEST_GRACE_MS - 1)
  const early = guard.connect(A)
  assert.deepEqual(guard.refused, [['address', 'ip:192.0.2.1']])
  assert.deepEqual([first.destroyed, second.destroyed, early.destroyed], [false, false, false], 'refused, not closed: the lane answers it')
  // The grace ends FIRST_REQUEST_GRACE_MS after the connection: then the first one counts as idle.
  guard.at(FIRST_REQUEST_GRACE_MS)
  const late = guard.connect(A)
  assert.equal(guard.refused.length, 1)
  assert.deepEqual([first.destroyed, second.destroyed, late.destroyed], [true, false, false])
})

test('a connection that has had a request answered is idle at once, grace or not, and the one idle longest makes room', (t) => {
  const guard = guarded(t, { maxConnections: 10, maxConnectionsPerAddress: 3 })
  const [first, second, third] = [guard.connect(A), guard.connect(A), guard.connect(A)]
  // All three within their grace; the third, then the second, have each had a request answered.
  guard.request(third).done()
  guard.request(second).done()
  const fourth = guard.connect(A)
  assert.deepEqual([first.destroyed, second.destroyed, third.destroyed], [false, false, true], 'the third was idle longest')
  const fifth = guard.connect(A)
  assert.deepEqual([first.destroyed, second.destroyed, fourth.destroyed, fifth.destroyed], [false, true, false, false])
  assert.deepEqual(guard.refused, [])
})

test('a connection with a request in flight is never closed to make room, long after its grace: the newcomer is refused', (t) => {
  const guard = guarded(t, { maxConnections: 10, maxConnectionsPerAddress: 2 })
  const held = [guard.connect(A), guard.connect(A)]
  for (const socket of held) guard.request(socket)
  guard.at(60_000)
  guard.connect(A)
  assert.deepEqual(held.map((socket) => socket.destroyed), [false, false])
  assert.deepEqual(guard.refused, [['address', 'ip:192.0.2.1']])
})

test('a closed connection gives its address its slot back', (t) => {
  const guard = guarded(t, { maxConnections: 10, maxConnectionsPerAddress: 2 })
  const held = [guard.connect(A), guard.connect(A)]
  for (const socket of held) guard.request(socket)
  held[0]!.destroy()
  const next = guard.connect(A)
  assert.deepEqual(guard.refused, [])
  assert.deepEqual([held[1]!.destroyed, next.destroyed], [false, false])
  // And the slot is the address's: its next one is refused again.
  guard.request(next)
  guard.connect(A)
  assert.deepEqual(guard.refused, [['address', 'ip:192.0.2.1']])
})

test('at MAX_CONNECTIONS the connection idle longest of any address makes room', (t) => {
  const guard = guarded(t, { maxConnections: 3, maxConnectionsPerAddress: 3 })
  const a = guard.connect(A)
  const b = guard.connect(B)
  const c = guard.connect(C)
  guard.request(b).done()
  guard.request(a).done()
  guard.connect(C)
  assert.deepEqual([a.destroyed, b.destroyed, c.destroyed], [false, true, false])
  assert.deepEqual(guard.refused, [])
})

test('at MAX_CONNECTIONS with none idle, the address holding the most gives up its connection waiting on its client longest, if it holds two more than the newcomer\'s', (t) => {
  // Faults caught (issue 30): busy connections that locked other addresses out; an address
  // losing a connection to make room for one no smaller than itself.
  const guard = guarded(t, { maxConnections: 6, maxConnectionsPerAddress: 6 })
  // A: four connections. The first is being served (not waiting on its client), the second's
  // answer waits in its socket for A to read it, the third's body is still arriving, the fourth
  // has said nothing yet (within its grace).
  const served = guard.connect(A)
  guard.request(served)
  const reading = guard.connect(A)
  guard.request(reading)
  reading._httpMessage = { headersSent: true }
  reading.writableLength = 65_536
  const sending = guard.connect(A)
  guard.request(sending)
  sending.parser = { incoming: { complete: false } }
  const silent = guard.connect(A)
  // B: two connections waiting on B.
  const b = [guard.connect(B), guard.connect(B)]
  for (const socket of b) socket.parser = { incoming: { complete: false } }
  // C is new: A holds 4 >= 0 + 2 and the most; of A's waiting ones, the one that began first.
  guard.connect(C)
  const all = [served, reading, sending, silent, ...b]
  assert.deepEqual(all.map((socket) => socket.destroyed), [false, true, false, false, false, false])
  // A's answer being written with nothing waiting in its socket is the server's work, not A's.
  sending.parser = null
  sending._httpMessage = { headersSent: true }
  sending.writableLength = 0
  guard.connect(C)
  assert.deepEqual([served, sending, silent].map((socket) => socket.destroyed), [false, false, true])
  // A holds 2 (served, sending), B 2, C 2: none holds two more than C, so C is refused; B's
  // connections still waiting on B are not taken for C.
  guard.connect(C)
  assert.deepEqual(guard.refused, [['total', 'ip:192.0.2.3']])
  assert.deepEqual(b.map((socket) => socket.destroyed), [false, false])
})

test('of two addresses holding as many, the connection that has waited longest is taken, whichever holds it', (t) => {
  const guard = guarded(t, { maxConnections: 6, maxConnectionsPerAddress: 6 })
  const a = [guard.connect(A), guard.connect(A), guard.connect(A)]
  const b = [guard.connect(B), guard.connect(B), guard.connect(B)]
  for (const socket of [...a, ...b]) socket.parser = { incoming: { complete: false } }
  // A's connections began later than B's: each has since sent a request whose body is arriving.
  for (const socket of a) guard.request(socket)
  guard.connect(C)
  assert.deepEqual([...a, ...b].map((socket) => socket.destroyed), [false, false, false, true, false, false])
})

test('a request on a connection the guard does not track (refused, or not yet seen) is left alone', (t) => {
  const guard = guarded(t, { maxConnections: 10, maxConnectionsPerAddress: 1 })
  guard.request(guard.connect(A))
  const refused = guard.connect(A)
  assert.doesNotThrow(() => guard.request(refused))
  assert.doesNotThrow(() => guard.request(new StandInSocket(B)))
})

test('a connection already gone when the guard sees it is not counted', (t) => {
  const guard = guarded(t, { maxConnections: 10, maxConnectionsPerAddress: 1 })
  const gone = new StandInSocket(A)
  gone.destroyed = true
  guard.server.emit('connection', gone)
  guard.server.emit('connection', new StandInSocket(undefined))
  const next = guard.connect(A)
  guard.request(next)
  assert.deepEqual(guard.refused, [])
})

test('a refused connection waits in the lane REFUSAL_LANE_MS for its request, then is closed; past the lane\'s size the one waiting longest is closed', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] })
  const guard = guarded(t, { maxConnections: 10, maxConnectionsPerAddress: 1 })
  guard.request(guard.connect(A))
  const lane = Array.from({ length: 16 }, () => guard.connect(A))
  assert.equal(lane.filter((socket) => socket.destroyed).length, 0, 'the lane holds 16')
  const seventeenth = guard.connect(A)
  assert.deepEqual(lane.map((socket) => socket.destroyed), [true, ...new Array<boolean>(15).fill(false)])
  // A connection that leaves the lane (answered, or gone) makes room in it.
  lane[1]!.destroy()
  const eighteenth = guard.connect(A)
  assert.deepEqual([lane[2]!.destroyed, seventeenth.destroyed, eighteenth.destroyed], [false, false, false])
  t.mock.timers.tick(REFUSAL_LANE_MS - 1)
  assert.equal(eighteenth.destroyed, false)
  t.mock.timers.tick(1)
  assert.equal([...lane.slice(2), seventeenth, eighteenth].every((socket) => socket.destroyed), true)
  assert.equal(guard.refused.length, 18)
})

test('the log reports the first refusal of each cap at once, then once per 10 s with the count and up to 10 addresses', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] })
  const lines: Array<{ level: string; fields: object; message: string }> = []
  const log = {
    warn: (fields: object, message: string) => { lines.push({ level: 'warn', fields, message }) },
    error: (fields: object, message: string) => { lines.push({ level: 'error', fields, message }) }
  }
  const events = reportRefusals(log, { maxConnections: 1000, maxConnectionsPerAddress: 100, requestTimeoutMs: 30_000 })
  events.onRefused('address', 'ip:192.0.2.1')
  events.onRefused('total', 'ip:192.0.2.2')
  for (let i = 1; i <= 12; i++) events.onRefused('address', `ip:198.51.100.${i}`)
  events.onOverdue('ip:192.0.2.3')
  assert.deepEqual(lines, [
    { level: 'warn', fields: { refused: 1, maxConnectionsPerAddress: 100, addresses: ['ip:192.0.2.1'] }, message: 'per-address connection cap reached: new connections answered 503' },
    { level: 'warn', fields: { refused: 1, maxConnections: 1000, addresses: ['ip:192.0.2.2'] }, message: 'connection cap reached: new connections answered 503' },
    { level: 'error', fields: { cut: 1, requestTimeoutMs: 30_000, addresses: ['ip:192.0.2.3'] }, message: 'requests unanswered at their deadline: answered 503 service_unavailable, connections closed' }
  ])
  lines.length = 0
  t.mock.timers.tick(9_999)
  assert.deepEqual(lines, [])
  t.mock.timers.tick(1)
  const addresses = Array.from({ length: 10 }, (_, i) => `ip:198.51.100.${i + 1}`)
  assert.deepEqual(lines, [
    { level: 'warn', fields: { refused: 12, maxConnectionsPerAddress: 100, addresses }, message: 'per-address connection cap reached: new connections answered 503' }
  ])
  // A quiet window writes nothing; the next refusal is reported at once again.
  lines.length = 0
  t.mock.timers.tick(10_000)
  assert.deepEqual(lines, [])
  events.onRefused('address', 'ip:192.0.2.9')
  assert.deepEqual(lines, [
    { level: 'warn', fields: { refused: 1, maxConnectionsPerAddress: 100, addresses: ['ip:192.0.2.9'] }, message: 'per-address connection cap reached: new connections answered 503' }
  ])
})

// ---------------------------------------------------------------------------------------------
// The answer's deadline (overdueAnswers): the sweep, by hand. Over real sockets:
// answer-deadline.test.ts.

/** A response as the sweep sees it, recording what is written to it. */
interface StandIn {
  headersSent: boolean
  req: { complete: boolean }
  written: Array<{ status: number; headers: Record<string, unknown>; body?: string }>
  socket: { destroyed: boolean; destroy (): void }
  writeHead (status: number, headers: Record<string, unknown>): void
  end (body: string): void
}

function standIn (options: { complete?: boolean; refuseHead?: boolean } = {}): StandIn {
  const response: StandIn = {
    headersSent: false,
    req: { complete: options.complete ?? true },
    written: [],
    socket: { destroyed: false, destroy () { this.destroyed = true } },
    writeHead (status, headers) {
      if (options.refuseHead === true) throw new TypeError('invalid header')
      this.written.push({ status, headers })
      this.headersSent = true
    },
    end (body) { this.written.at(-1)!.body = body }
  }
  return response
}

/** The sweep over one connection per response (null: a connection with no request in flight). */
function sweepOver (limits: Pick<ServerLimits, 'headersTimeoutMs' | 'requestTimeoutMs'>, responses: Array<StandIn | null>) {
  const overdue: string[] = []
  const connections = responses.map((response, i) => ({
    socket: { _httpMessage: response } as unknown as Socket,
    address: `192.0.2.${i + 1}`
  }))
  const answers = overdueAnswers(limits, { onOverdue: (address) => overdue.push(address) }, connections)
  return { ...answers, overdue, stamp: (response: StandIn) => answers.stamp(response as unknown as ServerResponse) }
}

// Headers 500 ms and the whole request 1000 ms: a sweep every 50 ms, 20 sweeps to the deadline.
const SHORT = { headersTimeoutMs: 500, requestTimeoutMs: 1000 }

test('the sweep answers a request 503 only once REQUEST_TIMEOUT_MS worth of sweeps have run since it arrived, once', () => {
  // Faults caught: a deadline counted from the connection rather than the request, one sweep
  // short (a request cut before its time), an answer written twice.
  const late = standIn()
  const { stamp, sweep, overdue } = sweepOver(SHORT, [late])
  stamp(late)
  // The request arrived after sweep 0; sweep 20 may come a whisker less than 1000 ms after it.
  for (let i = 1; i <= 20; i++) sweep()
  assert.equal(late.written.length, 0, 'not answered at sweep 20')
  sweep()
  assert.equal(late.written.length, 1, 'answered at sweep 21')
  const { status, headers, body } = late.written[0]!
  assert.equal(status, 503)
  assert.equal(headers['retry-after'], '5')
  assert.equal(headers.connection, 'close')
  assert.deepEqual(JSON.parse(body!), {
    code: 'service_unavailable',
    message: 'the server did not answer within 1000 ms; the request may still take effect: retry after 5 s, a create with the same Idempotency-Key',
    status: 503,
    requestId: headers['request-id']
  })
  assert.deepEqual(overdue, ['192.0.2.1'])
  sweep()
  assert.equal(late.written.length, 1, 'answered once')
  assert.deepEqual(overdue, ['192.0.2.1'])
})

test('the sweep leaves alone an answer already begun, a request whose body is still arriving, a request it never stamped, and a connection with no request', () => {
  // Faults caught: a second status line after a head that has gone out; a 503 where Node's own
  // 408 is due (a body that is late is the client's fault); a refused connection's request (the
  // lane has its own deadline) taken for an overdue one.
  const begun = standIn()
  const arriving = standIn({ complete: false })
  const unstamped = standIn()
  const { stamp, sweep, overdue } = sweepOver(SHORT, [begun, arriving, unstamped, null])
  stamp(begun)
  stamp(arriving)
  begun.headersSent = true
  for (let i = 0; i < 100; i++) sweep()
  assert.deepEqual([begun.written, arriving.written, unstamped.written], [[], [], []])
  assert.deepEqual(overdue, [])
  // Its answer begun, the arriving request no longer keeps the sweep's timer going.
  arriving.headersSent = true
})

test('the sweep counts each request from its own arrival: a later request on the same connection gets its full time', () => {
  const first = standIn()
  const second = standIn()
  const connection = { _httpMessage: first as StandIn | null }
  const overdue: string[] = []
  const connections = [{ socket: connection as unknown as Socket, address: '192.0.2.1' }]
  const answers = overdueAnswers(SHORT, { onOverdue: (address) => overdue.push(address) }, connections)
  answers.stamp(first as unknown as ServerResponse)
  for (let i = 0; i < 15; i++) answers.sweep()
  // The first is answered in time; the next request arrives on the same connection.
  connection._httpMessage = second
  answers.stamp(second as unknown as ServerResponse)
  for (let i = 0; i < 20; i++) answers.sweep()
  assert.equal(second.written.length, 0, '20 sweeps after it arrived, the second request is within its time')
  answers.sweep()
  assert.equal(second.written[0]?.status, 503)
})

test('a response whose head cannot be written at the deadline has its connection cut instead, and the sweep goes on to the next', () => {
  const refused = standIn({ refuseHead: true })
  const next = standIn()
  const { stamp, sweep, overdue } = sweepOver(SHORT, [refused, next])
  stamp(refused)
  stamp(next)
  for (let i = 0; i < 21; i++) sweep()
  assert.equal(refused.socket.destroyed, true)
  assert.equal(next.written[0]?.status, 503)
  assert.deepEqual(overdue, ['192.0.2.1', '192.0.2.2'])
})
