// The refusal lane of the connection guard (src/transport/connections.ts), with stand-in sockets
// that close as Node's do: 'close' comes a tick after destroy(), so a burst of refusals within
// one tick sees every socket it closed still in the lane. Its size and deadline on mocked timers:
// connection-guard.test.ts.
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import type { Server } from 'node:http'
import { test } from 'node:test'
import { guardConnections } from '../../src/transport/connections.ts'

class ClosingLater extends EventEmitter {
  readonly remoteAddress = '192.0.2.1'
  destroyed = false
  _httpMessage: object | null = null
  destroy (): void {
    if (this.destroyed) return
    this.destroyed = true
    process.nextTick(() => this.emit('close'))
  }
}

/** A guard allowing one connection per address, that one busy: every other one is refused. */
function fullAddress (): (count: number) => ClosingLater[] {
  const server = new EventEmitter() as unknown as Server
  const limits = { maxConnections: 10, maxConnectionsPerAddress: 1, headersTimeoutMs: 10_000, requestTimeoutMs: 10_000 }
  guardConnections(server, limits, { onRefused () {}, onOverdue () {} })
  const busy = new ClosingLater()
  server.emit('connection', busy)
  busy._httpMessage = {}
  return (count) => Array.from({ length: count }, () => {
    const socket = new ClosingLater()
    server.emit('connection', socket)
    return socket
  })
}

test('refusals past the lane\'s size within one tick close as many of the longest waiting, one each, before any has closed', () => {
  // Fault caught: a lane that forgot a closed socket only at its 'close' event would pick the
  // same, already closed, socket again for every refusal of the tick, and grow past its size.
  const connect = fullAddress()
  const lane = connect(16)
  const more = connect(3)
  assert.deepEqual(lane.map((socket) => socket.destroyed), [true, true, true, ...new Array<boolean>(13).fill(false)])
  assert.deepEqual(more.map((socket) => socket.destroyed), [false, false, false])
  for (const socket of [...lane, ...more]) socket.destroy()
})

test('a connection waiting in the lane does not keep the process alive', () => {
  // Fault caught: the lane's deadline timer not unref'd held a stopping server up to
  // REFUSAL_LANE_MS after its last connection was refused.
  const timers = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length
  const connect = fullAddress()
  const before = timers()
  const refused = connect(5)
  assert.equal(timers(), before)
  for (const socket of refused) socket.destroy()
})
