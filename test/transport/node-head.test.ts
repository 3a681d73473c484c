// src/transport/header-block.ts writes the response head in place of Node's private
// `_storeHeader`, and reads fields of Node's response that Node does not document. Node promises
// none of it: these tests fail, naming the internal, when a release changes what is relied on;
// they show that the module's load-time check finds such a change, and that its fallback (every
// head Node's own) answers the same bytes.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http'
import { connect, Socket, type AddressInfo } from 'node:net'
import { test } from 'node:test'
import { listenTestApp } from '../helpers/app.ts'
import {
  closeConnectionsAfterAnswer, forceHeadBlockFallback, headBlockFallback, headBlocks
} from '../../src/transport/header-block.ts'

/** The failure message: the internal, the file that relies on it, and what to do. */
function alarm (what: string): string {
  const fallback = headBlockFallback()
  const check = fallback === null
    ? 'its load-time check (headShapeProblem) did not see this: make it see it'
    : `its load-time check saw it, and every head is Node's own: right, but slower (${fallback})`
  return `Node ${process.version}: ${what}. src/transport/header-block.ts writes the response head in place `
    + `of Node's private _storeHeader and reads the fields it reads; ${check}. Compare with Node's `
    + 'lib/_http_outgoing.js, adapt header-block.ts and re-measure (docs/performance-history.md, '
    + '"The response head in one pass"), or remove it.'
}

type Internals = Record<string, unknown>

type Setup = (response: ServerResponse & Internals) => void

/** The head Node's own response stores for `headers`, after `setup`, and the state it leaves. */
function nodeHead (setup: Setup, headers: Record<string, string> = { 'content-length': '2' }): Internals {
  const request = new IncomingMessage(new Socket())
  request.method = 'GET'
  request.httpVersionMajor = 1
  request.httpVersionMinor = 1
  const response = new ServerResponse(request) as ServerResponse & Internals
  response.sendDate = false
  response.shouldKeepAlive = true
  setup(response)
  response.writeHead(200, headers)
  return response
}

test('Node\'s private _storeHeader is what writeHead calls, and the fields header-block.ts reads steer its head', () => {
  const store = (ServerResponse.prototype as unknown as Internals)._storeHeader
  assert.equal(typeof store, 'function', alarm('ServerResponse.prototype._storeHeader is not a function'))
  let calls = 0
  class Counted extends ServerResponse {
    _storeHeader (...args: unknown[]): void {
      calls++
      ;(store as (...args: unknown[]) => void).apply(this, args)
    }
  }
  new Counted(new IncomingMessage(new Socket())).writeHead(200, { 'content-length': '0' })
  assert.equal(calls, 1, alarm('writeHead no longer stores the head through this._storeHeader'))

  const plain = nodeHead(() => {})
  const whole = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: keep-alive\r\n\r\n'
  assert.equal(plain._header, whole, alarm('_header is not the whole head, as one string'))
  assert.equal(plain._headerSent, false, alarm('_headerSent is not false once the head is stored'))
  assert.equal(plain._last, false, alarm('_last is not false on a kept-alive connection'))
  // Each field as header-block.ts reads it, shown by what Node's own head does with it.
  const steered: Array<[string, Setup, string | RegExp]> = [
    ['_keepAliveTimeout', (r) => { r._keepAliveTimeout = 5000 }, 'Keep-Alive: timeout=5\r\n'],
    ['_maxRequestsPerSocket', (r) => { r._keepAliveTimeout = 5000; r._maxRequestsPerSocket = 7 }, ', max=7\r\n'],
    ['_defaultKeepAlive', (r) => { r._keepAliveTimeout = 5000; r._defaultKeepAlive = false }, /^(?![\s\S]*Keep-Alive)/],
    ['maxRequestsOnConnectionReached', (r) => { r.maxRequestsOnConnectionReached = true }, 'Connection: close\r\n'],
    ['shouldKeepAlive', (r) => { r.shouldKeepAlive = false }, 'Connection: close\r\n']
  ]
  for (const [field, setup, expected] of steered) {
    const head = String(nodeHead(setup)._header)
    const fail = alarm(`${field} no longer steers Node's head (to ${String(expected)})`)
    if (typeof expected === 'string') assert.ok(head.includes(expected), fail)
    else assert.match(head, expected, fail)
  }
  const closing = nodeHead((r) => { r.shouldKeepAlive = false })
  assert.equal(closing._last, true, alarm('_last is not set when the connection closes'))
  // A header removed stays so in the state of a head that does not give it again.
  const removed = [
    ['connection', '_removedConnection'], ['content-length', '_removedContLen'], ['transfer-encoding', '_removedTE']
  ]
  for (const [name, field] of removed) {
    const head = nodeHead((r) => { r.removeHeader(name!) }, { 'x-a': 'b' })
    assert.equal(head[field!], true, alarm(`removeHeader('${name}') no longer sets ${field}`))
  }
  const chunked = nodeHead(() => {}, { 'x-a': 'b' })
  assert.equal(chunked.chunkedEncoding, true, alarm('chunkedEncoding is not set for a head without Content-Length'))
})

test('Node\'s server sets the fields header-block.ts reads on each response; the socket knows its server', async (t) => {
  let seen: Internals = {}
  const server: Server = createServer((request, response) => {
    const r = response as unknown as Internals
    seen = {
      keepAliveTimeout: r._keepAliveTimeout,
      maxRequestsPerSocket: r._maxRequestsPerSocket,
      defaultKeepAlive: r._defaultKeepAlive,
      maxReached: r.maxRequestsOnConnectionReached,
      server: (response.socket as unknown as Internals | null)?.server === server
    }
    response.end('ok')
  })
  t.after(() => { server.closeAllConnections(); server.close() })
  server.keepAliveTimeout = 4000
  server.maxRequestsPerSocket = 9
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  await exchange((server.address() as AddressInfo).port, 'GET / HTTP/1.1\r\nHost: t\r\n\r\n')
  const expected = {
    keepAliveTimeout: 4000, maxRequestsPerSocket: 9, defaultKeepAlive: true, maxReached: false, server: true
  }
  const fields = '_keepAliveTimeout, _maxRequestsPerSocket, _defaultKeepAlive, maxRequestsOnConnectionReached, '
    + 'socket.server'
  assert.deepEqual(seen, expected, alarm(`a response of Node's server carries ${JSON.stringify(seen)} (${fields})`))
})

test('the load-time check found the heads of header-block.ts to be Node\'s: the fast path is in use', () => {
  assert.equal(headBlockFallback(), null, alarm('the load-time check chose the fallback'))
})

test('a Node whose _storeHeader reads _keepAliveTimeout no more: the load-time check sees it, and every head is Node\'s', () => {
  // In a process of its own: the check runs once, as header-block.ts loads, after Node's method is changed.
  const module = new URL('../../src/transport/header-block.ts', import.meta.url).href
  const code = `
    const { OutgoingMessage, createServer } = await import('node:http')
    const { connect } = await import('node:net')
    const original = OutgoingMessage.prototype._storeHeader
    OutgoingMessage.prototype._storeHeader = function (firstLine, headers) {
      const timeout = this._keepAliveTimeout
      this._keepAliveTimeout = 0
      try { original.call(this, firstLine, headers) } finally { this._keepAliveTimeout = timeout }
    }
    const block = await import(${JSON.stringify(module)})
    const server = createServer({ ServerResponse: block.HeaderBlockResponse }, (request, response) => {
      response.writeHead(200, { 'content-length': '2' })
      response.end('ok')
    })
    server.keepAliveTimeout = 5000
    server.listen(0, '127.0.0.1', () => {
      const socket = connect(server.address().port, '127.0.0.1')
      socket.on('connect', () => socket.write('GET / HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n'))
      let text = ''
      socket.on('data', (chunk) => {
        text += chunk
        if (!text.endsWith('ok')) return
        const written = block.headBlocks.written
        console.log(JSON.stringify({ fallback: block.headBlockFallback(), head: text, written }))
        process.exit(0)
      })
    })`
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(child.status, 0, child.stderr)
  const out = JSON.parse(child.stdout) as { fallback: string | null; head: string; written: number }
  assert.match(String(out.fallback), /_header after a head for a kept-alive connection/)
  assert.equal(out.written, 0, 'no head written by header-block.ts')
  assert.match(out.head, /^HTTP\/1\.1 200 OK\r\ncontent-length: 2\r\nDate: [^\r]+\r\nConnection: keep-alive\r\n\r\nok$/)
})

const REQUEST_ID = '3f0c9b52-5d1e-4c43-9a51-0f6f2d1b7e20'

interface Exchanged { text: string; socket: Socket; closed: Promise<void> }

/** One request on a new connection: the answer's bytes once whole (its head, then Content-Length bytes). */
function exchange (port: number, request: string): Promise<Exchanged> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request))
    const closed = new Promise<void>((resolveClosed) => socket.on('close', () => { resolveClosed() }))
    let text = ''
    socket.setEncoding('latin1')
    socket.on('error', reject)
    socket.on('data', (chunk: string) => {
      text += chunk
      const end = text.indexOf('\r\n\r\n')
      if (end === -1) return
      const length = request.startsWith('HEAD') ? 0 : Number(/\r\ncontent-length: (\d+)/i.exec(text)?.[1] ?? 0)
      if (text.length - end - 4 >= length) resolve({ text, socket, closed })
    })
  })
}

test('on the fallback every head is Node\'s and every answer the same bytes; the stop\'s Connection: close holds', async (t) => {
  t.after(() => { forceHeadBlockFallback(false) })
  const { app, call, makeKey } = await listenTestApp(t)
  await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  const port = (app.server.address() as AddressInfo).port
  // A deprecated read (Warning, Link), a list, a HEAD, an error; each with a key of its own, so
  // that the rate-limit headers match.
  const lines = ['GET /v1/pets/1', 'GET /v1/pets?limit=5', 'HEAD /v1/pets', 'GET /v1/nowhere']
  const answers = async (fallback: boolean): Promise<Array<{ text: string; here: number }>> => {
    forceHeadBlockFallback(fallback)
    const out = []
    for (const line of lines) {
      const { key } = await makeKey('customer')
      const before = headBlocks.written
      const request = `${line} HTTP/1.1\r\nHost: t\r\nX-API-Key: ${key}\r\nRequest-Id: ${REQUEST_ID}\r\n\r\n`
      const { text, socket } = await exchange(port, request)
      socket.destroy()
      out.push({ text: text.replace(/\r\nDate: [^\r]*/, '\r\nDate: -'), here: headBlocks.written - before })
    }
    return out
  }
  const fast = await answers(false)
  const fallback = await answers(true)
  assert.equal(headBlockFallback(), 'forced by a test')
  assert.deepEqual(fast.map((a) => a.here), [1, 1, 1, 1], 'the fast path wrote each head')
  assert.deepEqual(fallback.map((a) => a.here), [0, 0, 0, 0], 'Node wrote each head')
  assert.deepEqual(fallback.map((a) => a.text), fast.map((a) => a.text))
  const deprecatedRead = /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\nwarning: 299 [\s\S]*\r\nConnection: keep-alive\r\nKeep-Alive: timeout=\d+\r\n\r\n\{/
  assert.match(fast[0]!.text, deprecatedRead)

  // A stopping server's answers close their connection, on Node's path too (writeHead, public).
  closeConnectionsAfterAnswer(app.server)
  const { key } = await makeKey('customer')
  const last = await exchange(port, `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: t\r\nX-API-Key: ${key}\r\n\r\n`)
  assert.match(last.text, /\r\nConnection: close\r\n\r\n/)
  await last.closed
})
