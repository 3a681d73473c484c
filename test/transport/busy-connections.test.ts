// Busy connections cannot lock anyone out (issue 30 item 1), on the process as `petstore serve`
// runs it, over real sockets from many loopback addresses (all of 127.0.0.0/8 is local): while
// 11 addresses hold their share of connections busy, another address's probes (/healthz, and a
// /v1 read with a key) are answered, every one of them.
// - slow readers: each socket asks for the docs bundle (4.35 MB, Accept-Encoding: identity)
//   and never reads a byte of it;
// - slow bodies outside /v1: POST /nothing with Content-Length: 60000 and a byte every 2 s,
//   reconnecting whenever the server closes.
// The suite runs each with the caps lowered fiftyfold (MAX_CONNECTIONS=20, 2 per address: 11 x 2
// sockets) and 5 s of probes; PETSTORE_SOAK_SECONDS=20 (or more) runs the scenario: the
// default caps, 11 x 100 sockets, probes for that long. On the code before, both lock the probes
// out (0 of 60 answered in the runs).
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { cleanupStack, startServerProcess, type ServerProcess } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'

const SOAK_SECONDS = Number(process.env.PETSTORE_SOAK_SECONDS ?? 0)
const SOAK = SOAK_SECONDS > 0
const ADDRESSES = 11
const PER_ADDRESS = SOAK ? 100 : 2
const PROBE_SECONDS = SOAK ? Math.max(20, SOAK_SECONDS) : 5
const CAPS: Record<string, string> = SOAK ? {} : { MAX_CONNECTIONS: '20', MAX_CONNECTIONS_PER_ADDRESS: '2' }
const PROBE_FROM = '127.0.0.200'
// With few sockets, the kernel's buffers on loopback take a whole bundle each (tens of MB a
// socket), and the server sees its answer written: the short run asks for it ten times on each
// socket (pipelined), so that most of it waits in the server, as one request does with 1,100
// sockets (the kernel's TCP memory is then under pressure).
const REQUESTS_PER_SOCKET = SOAK ? 1 : 10
const TIMEOUT_MS = (PROBE_SECONDS + 40) * 1000

/** The attackers' addresses: 127.0.1.1 to 127.0.1.11. */
const attackerAddresses = Array.from({ length: ADDRESSES }, (_, i) => `127.0.1.${i + 1}`)

interface Started { server: ServerProcess; port: number; adminKey: string; bundle: string }

async function start (t: TestContext): Promise<Started> {
  const cleanup = cleanupStack(t)
  const dir = tempDir(t, 'petstore-busy-')
  const keysFile = join(dir, 'keys.txt')
  const server = await startServerProcess(cleanup, { DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, LOG_LEVEL: 'warn', ...CAPS }, ['--sample-data', '--keys-file', keysFile])
  const adminKey = /^\s+admin\s+(psk_\S+)$/m.exec(await readFile(keysFile, 'utf8'))?.[1]
  assert.ok(adminKey !== undefined)
  const page = await (await fetch(`${server.url}/docs`)).text()
  const bundle = /\/docs\/assets\/scalar-api-reference\.[0-9a-f]{16}\.js/.exec(page)?.[0]
  assert.ok(bundle !== undefined)
  // Read once, so that it is compressed and held before the attack begins.
  await (await fetch(`${server.url}${bundle}`)).arrayBuffer()
  return { server, port: Number(new URL(server.url).port), adminKey, bundle }
}

/**
 * One request on a connection of its own from PROBE_FROM: its status, or 0 when refused, cut or
 * not answered within 5 s.
 */
function probe (port: number, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      localAddress: PROBE_FROM,
      agent: false,
      headers: { connection: 'close', ...headers },
      signal: AbortSignal.timeout(5000)
    }, (res) => {
      res.resume()
      res.once('end', () => resolve(res.statusCode ?? 0))
      res.once('error', () => resolve(0))
    })
    req.once('error', () => resolve(0))
    req.end()
  })
}

/** Probes every 250 ms for `seconds`, alternating /healthz and a /v1 read with a key. */
async function probeFor (
  port: number,
  adminKey: string,
  seconds: number
): Promise<{ statuses: number[]; slowestMs: number }> {
  const statuses: number[] = []
  let slowestMs = 0
  const until = performance.now() + seconds * 1000
  for (let i = 0; performance.now() < until; i++) {
    const started = performance.now()
    statuses.push(i % 2 === 0 ? await probe(port, '/healthz') : await probe(port, '/v1/pets/1', { 'x-api-key': adminKey }))
    const took = performance.now() - started
    slowestMs = Math.max(slowestMs, took)
    if (took < 250) await new Promise((resolve) => setTimeout(resolve, 250 - took))
  }
  return { statuses, slowestMs }
}

/** Opens a socket from `from` and resolves once it is connected (or failed: then null). */
function open (port: number, from: string): Promise<Socket | null> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: from })
    socket.on('error', () => {})
    socket.once('connect', () => resolve(socket))
    socket.once('close', () => resolve(null))
  })
}

test(`${ADDRESSES} addresses x ${PER_ADDRESS} sockets asking for the docs bundle and never reading: another address's /healthz and /v1 probes are answered every time for ${PROBE_SECONDS} s`, { timeout: TIMEOUT_MS }, async (t) => {
  // Faults caught: no write deadline, and busy connections never closed to make room: 10 x 100
  // such sockets answered 1 probe of 60, 11 x 100 none.
  const { port, adminKey, bundle } = await start(t)
  const sockets: Socket[] = []
  t.after(() => { for (const socket of sockets) socket.destroy() })
  await Promise.all(attackerAddresses.map(async (from) => {
    for (let i = 0; i < PER_ADDRESS; i++) {
      const socket = await open(port, from)
      if (socket === null) continue
      socket.pause()
      socket.write(`GET ${bundle} HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: identity\r\n\r\n`.repeat(REQUESTS_PER_SOCKET))
      sockets.push(socket)
    }
  }))
  // Let the server take every request and fill the sockets' buffers.
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const { statuses, slowestMs } = await probeFor(port, adminKey, PROBE_SECONDS)
  t.diagnostic(`${sockets.length} slow readers; probes: ${statuses.length}, slowest ${Math.round(slowestMs)} ms`)
  assert.deepEqual(statuses, statuses.map(() => 200), `probes from ${PROBE_FROM}: ${statuses.join(' ')}`)
})

test(`${ADDRESSES} addresses x ${PER_ADDRESS} sockets trickling a 60,000-byte body to POST /nothing and reconnecting: another address's probes are answered every time for ${PROBE_SECONDS} s`, { timeout: TIMEOUT_MS }, async (t) => {
  // Fault caught: an unmatched route read the whole body before answering, so each connection
  // stayed busy until the request deadline (30 s): 11 x 100 answered none of 60 probes.
  const { port, adminKey } = await start(t)
  let stopped = false
  const live = new Set<Socket>()
  let answers = 0
  t.after(() => { stopped = true; for (const socket of live) socket.destroy() })
  // One loop per socket: connect, send the head, a byte every 2 s; when the server closes, the
  // next tick reconnects.
  const loop = async (from: string): Promise<void> => {
    while (!stopped) {
      const socket = await open(port, from)
      if (socket === null) { await new Promise((resolve) => setTimeout(resolve, 2000)); continue }
      live.add(socket)
      socket.on('data', () => { answers++ })
      socket.write('POST /nothing HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{')
      await new Promise<void>((resolve) => {
        const tick = setInterval(() => {
          if (stopped || socket.destroyed || !socket.writable) { clearInterval(tick); resolve(); return }
          socket.write('x')
        }, 2000)
        socket.once('close', () => { clearInterval(tick); setTimeout(resolve, 2000) })
      })
      live.delete(socket)
      socket.destroy()
    }
  }
  const loops = attackerAddresses.flatMap((from) => Array.from({ length: PER_ADDRESS }, () => loop(from)))
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const { statuses, slowestMs } = await probeFor(port, adminKey, PROBE_SECONDS)
  stopped = true
  for (const socket of live) socket.destroy()
  await Promise.all(loops)
  t.diagnostic(`${ADDRESSES * PER_ADDRESS} trickling loops, ${answers} answers to them; probes: ${statuses.length}, slowest ${Math.round(slowestMs)} ms`)
  assert.deepEqual(statuses, statuses.map(() => 200), `probes from ${PROBE_FROM}: ${statuses.join(' ')}`)
})
