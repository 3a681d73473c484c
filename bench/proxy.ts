// The stand-in for nginx when it is not installed (`npm run bench -- --instances N`): a small
// node:http round-robin proxy, started by bench/instances.ts as a child process of its own.
//
//   node bench/proxy.ts '<json: { upstreams: string[] }>'
//
// It does what deploy/nginx.conf's `location /` does and nothing more: round robin over the
// upstreams, keep-alive connections to them (nginx's `keepalive 32`), X-Forwarded-For replaced by
// the client's address, Host passed on. It tells the parent its port over IPC ({ type: 'ready' })
// and stops when the parent goes away. It costs CPU that nginx, written in C, costs less of: the
// output says which proxy ran.
import type { AddressInfo } from 'node:net'

// The CommonJS exports (see bench/server.ts): an ES import of node:http loads undici.
const { Agent, createServer, request } = process.getBuiltinModule('node:http')

const { upstreams } = JSON.parse(process.argv[2] ?? '{}') as { upstreams?: string[] }
if (upstreams === undefined || upstreams.length === 0) throw new Error('usage: node bench/proxy.ts \'{"upstreams":["http://127.0.0.1:PORT",…]}\'')
const targets = upstreams.map((u) => new URL(u))
const agent = new Agent({ keepAlive: true, maxFreeSockets: 32 })
let next = 0

const server = createServer((incoming, outgoing) => {
  const target = targets[next++ % targets.length]!
  const headers = { ...incoming.headers, 'x-forwarded-for': incoming.socket.remoteAddress ?? '', 'x-forwarded-proto': 'http', connection: 'keep-alive' }
  const upstream = request({
    host: target.hostname,
    port: target.port,
    method: incoming.method,
    path: incoming.url,
    headers,
    agent
  }, (answer) => {
    outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
    answer.pipe(outgoing)
  })
  upstream.on('error', () => {
    if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'application/json' })
    outgoing.end('{"code":"bad_gateway","message":"the upstream failed","status":502}\n')
  })
  incoming.pipe(upstream)
})
server.keepAliveTimeout = 65_000

server.listen(0, '127.0.0.1', () => {
  const ready = { type: 'ready', port: (server.address() as AddressInfo).port }
  process.send?.(ready)
})
const stop = (): void => { server.close(); server.closeAllConnections(); agent.destroy() }
process.on('disconnect', stop)
process.on('SIGTERM', stop)
