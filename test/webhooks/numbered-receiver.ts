// An http receiver that numbers its connections (from 1), for the tests of kept-alive connections
// (attempt-keep-alive.test.ts, attempt-edges.test.ts): which connection each request came on, the
// address it reached, and which connections it has seen closed. Answers 204, or what `answer` writes.
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { TestContext } from 'node:test'

export interface NumberedReceiver {
  port: number
  /** Per request: its connection's number, the address it reached, its Host header's name (no port). */
  requests: Array<{ connection: number; localAddress: string; host: string }>
  /** Connections the receiver has seen closed, by number. */
  closed: Set<number>
}

export async function numberedReceiver (
  t: TestContext,
  options: {
    host?: string
    port?: number
    answer?: (req: IncomingMessage, res: ServerResponse, connection: number) => void
  } = {}
): Promise<NumberedReceiver> {
  const { answer } = options
  const state: NumberedReceiver = { port: 0, requests: [], closed: new Set() }
  const numbers = new WeakMap<Socket, number>()
  const sockets = new Set<Socket>()
  let connections = 0
  const server = createServer((req, res) => {
    const connection = numbers.get(req.socket)!
    state.requests.push({ connection, localAddress: req.socket.localAddress!, host: req.headers.host!.split(':')[0]! })
    req.resume()
    req.on('end', () => { if (answer === undefined) res.writeHead(204).end(); else answer(req, res, connection) })
  })
  server.on('connection', (socket: Socket) => {
    const n = ++connections
    numbers.set(socket, n)
    sockets.add(socket)
    socket.on('close', () => { state.closed.add(n); sockets.delete(socket) })
  })
  server.listen(options.port ?? 0, options.host ?? '127.0.0.1')
  await once(server, 'listening')
  state.port = (server.address() as { port: number }).port
  t.after(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return state
}
