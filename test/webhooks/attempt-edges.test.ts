// Edges of one delivery attempt (webhooks/attempt.ts) that the main tests leave open: exact
// boundaries of what is read and kept, receivers that misbehave at the byte level (raw node:net
// servers: a reset mid-body, a status line then silence, an odd status), the result's exact shape,
// the stale-connection retry's conditions, and the agent cache's least-recently-used order.
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createNetServer, getDefaultAutoSelectFamily, setDefaultAutoSelectFamily, type Socket } from 'node:net'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import {
  ATTEMPT_DETAILS_KEPT_MS,
  attemptDelivery,
  keptBody,
  MAX_AGENTS,
  RESPONSE_BODY_KEPT_BYTES,
  USER_AGENT,
  type AttemptInput
} from '../../src/webhooks/attempt.ts'
import { tempDir } from '../helpers/temp.ts'
import { numberedReceiver } from './numbered-receiver.ts'
import { selfSignedCert, startReceiver } from './receiver.ts'

const BOUNDED = { timeout: 15_000 }

function input (url: string, overrides: Partial<AttemptInput> = {}): AttemptInput {
  return {
    url: new URL(url),
    address: { address: '127.0.0.1', family: 4 },
    headers: { 'webhook-id': 'msg_edge' },
    body: '{"a":1}',
    timeoutMs: 3000,
    ...overrides
  }
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

const until = async (check: () => boolean, ms: number): Promise<boolean> => {
  const end = Date.now() + ms
  while (!check() && Date.now() < end) await sleep(20)
  return check()
}

/**
 * A raw TCP receiver: `onRequest` gets the socket and the request's number (from 1) on that
 * connection once a whole request (head and content-length body) has arrived, and writes what it likes.
 */
async function rawReceiver (
  t: TestContext,
  onRequest: (socket: Socket, nth: number) => void,
  host = '127.0.0.1'
): Promise<{ port: number; requests: () => number }> {
  let requests = 0
  const sockets = new Set<Socket>()
  const server = createNetServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buffered = Buffer.alloc(0)
    let nth = 0
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk])
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n')
        if (headEnd < 0) return
        const length = Number(/content-length: *(\d+)/i.exec(buffered.subarray(0, headEnd).toString())?.[1] ?? 0)
        if (buffered.length < headEnd + 4 + length) return
        buffered = buffered.subarray(headEnd + 4 + length)
        requests++
        onRequest(socket, ++nth)
      }
    })
  })
  server.listen(0, host)
  await once(server, 'listening')
  t.after(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return { port: (server.address() as { port: number }).port, requests: () => requests }
}

// --- Constants and what is sent ----------------------------------------------------------------

test('an attempt\'s details are kept 7 days, in milliseconds', () => {
  assert.equal(ATTEMPT_DETAILS_KEPT_MS, 7 * 24 * 60 * 60 * 1000)
})

test('the receiver gets the Petstore user-agent', BOUNDED, async (t) => {
  const receiver = await startReceiver(t)
  const result = await attemptDelivery(input(`http://ua.test:${receiver.port}/`))
  assert.equal(result.outcome, 'succeeded')
  assert.equal(USER_AGENT, 'Petstore-Webhooks/1.0')
  assert.equal(receiver.received[0]?.headers['user-agent'], 'Petstore-Webhooks/1.0')
})

test('a scheme other than http and https is refused before connecting', BOUNDED, async (t) => {
  const receiver = await startReceiver(t)
  const result = await attemptDelivery(input(`ftp://scheme.test:${receiver.port}/`))
  assert.deepEqual(result, { outcome: 'failed', error: 'unsupported scheme', durationMs: 0 })
  await sleep(50)
  assert.equal(receiver.received.length, 0)
})

test('without happy-eyeballs (a lookup asked for one address) the pinned address is still reached', BOUNDED, async (t) => {
  const before = getDefaultAutoSelectFamily()
  setDefaultAutoSelectFamily(false)
  t.after(() => { setDefaultAutoSelectFamily(before) })
  const receiver = await startReceiver(t, undefined, { host: '127.0.0.9' })
  const result = await attemptDelivery(input(`http://one-address.test:${receiver.port}/`, {
    address: { address: '127.0.0.9', family: 4 },
    timeoutMs: 2000
  }))
  assert.deepEqual([result.outcome, result.status], ['succeeded', 204])
  assert.deepEqual(receiver.received.map((r) => r.localAddress), ['127.0.0.9'])
})

// --- The result's exact shape ------------------------------------------------------------------

test('a success carries no error, no errorType; a refused connection no status and no response', BOUNDED, async (t) => {
  const receiver = await startReceiver(t)
  const ok = await attemptDelivery(input(`http://shape.test:${receiver.port}/`))
  assert.deepEqual(Object.keys(ok).sort(), ['durationMs', 'outcome', 'requestHeaders', 'response', 'status'])
  const port = receiver.port
  await new Promise((resolve) => receiver.server.close(resolve))
  receiver.server.closeAllConnections()
  const refused = await attemptDelivery(input(`http://refused.test:${port}/`))
  assert.deepEqual(Object.keys(refused).sort(), ['durationMs', 'error', 'errorType', 'outcome', 'requestHeaders'])
  assert.deepEqual([refused.error, refused.errorType], ['connection refused', 'ECONNREFUSED'])
})

test('a receiver that never answers fails with errorType timeout and no response', BOUNDED, async (t) => {
  const receiver = await rawReceiver(t, () => {})
  const result = await attemptDelivery(input(`http://silent.test:${receiver.port}/`, { timeoutMs: 200 }))
  assert.deepEqual([result.outcome, result.error, result.errorType, 'response' in result],
    ['failed', 'timed out after 200 ms', 'timeout', false])
})

test('a failing answer whose body stalls past the deadline fails for its status, not for the time', BOUNDED, async (t) => {
  const receiver = await rawReceiver(t, (socket) => { socket.write('HTTP/1.1 503 Busy\r\ncontent-length: 100\r\n\r\npartial') })
  const result = await attemptDelivery(input(`http://stall.test:${receiver.port}/`, { timeoutMs: 300 }))
  assert.deepEqual([result.outcome, result.status, result.error, result.errorType], ['failed', 503, 'HTTP 503', undefined])
  assert.deepEqual([result.response?.body, result.response?.truncated], ['partial', true])
})

// --- Status classification ---------------------------------------------------------------------

test('status 300 is a redirect not followed, 299 a success, 399 a redirect, 400 an HTTP failure', BOUNDED, async (t) => {
  for (const [status, outcome, error] of [[300, 'failed', 'redirect not followed'], [299, 'succeeded', undefined],
    [399, 'failed', 'redirect not followed'], [400, 'failed', 'HTTP 400'], [200, 'succeeded', undefined]] as const) {
    const receiver = await rawReceiver(t, (socket) => { socket.write(`HTTP/1.1 ${status} X\r\ncontent-length: 2\r\n\r\nok`) })
    const result = await attemptDelivery(input(`http://status.test:${receiver.port}/`))
    assert.deepEqual([result.outcome, result.status, result.error], [outcome, status, error], String(status))
  }
})

test('a status below 100 (not informational, not 2xx) is a failure with its number, not a redirect', BOUNDED, async (t) => {
  const receiver = await rawReceiver(t, (socket) => { socket.write('HTTP/1.1 099 Odd\r\ncontent-length: 2\r\n\r\nok') })
  const result = await attemptDelivery(input(`http://odd.test:${receiver.port}/`))
  assert.deepEqual([result.outcome, result.status, result.error], ['failed', 99, 'HTTP 99'])
})

// --- Errors ------------------------------------------------------------------------------------

test('an answer that is not HTTP fails as an invalid HTTP answer with its parser code', BOUNDED, async (t) => {
  const receiver = await rawReceiver(t, (socket) => { socket.end('HTTP/1.1 abc nonsense\r\n\r\n') })
  const result = await attemptDelivery(input(`http://garbage.test:${receiver.port}/`))
  assert.equal(result.outcome, 'failed')
  assert.match(result.error ?? '', /^invalid HTTP answer \(HPE_[A-Z_]+\)$/)
  assert.equal(result.error, `invalid HTTP answer (${result.errorType})`)
})

test('an error without a word of its own shows its code: https to a plain-text receiver', BOUNDED, async (t) => {
  const server = createNetServer((socket) => { socket.on('error', () => {}); socket.end('HTTP/1.1 400 Bad Request\r\n\r\n') })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => { server.close() })
  const port = (server.address() as { port: number }).port
  const result = await attemptDelivery(input(`https://plain.test:${port}/`, { timeoutMs: 2000 }))
  assert.equal(result.outcome, 'failed')
  assert.match(result.error ?? '', /^network error \([A-Z0-9_]+\)$/)
  assert.equal(result.error, `network error (${result.errorType})`)
})

// --- What is kept of an answer -----------------------------------------------------------------

test('keptBody: exactly 4096 bytes are kept whole, 4097 are cut and marked truncated', () => {
  assert.equal(RESPONSE_BODY_KEPT_BYTES, 4096)
  assert.deepEqual(keptBody(Buffer.alloc(4096, 'a'), false), { body: 'a'.repeat(4096), truncated: false })
  assert.deepEqual(keptBody(Buffer.alloc(4097, 'a'), false), { body: 'a'.repeat(4096), truncated: true })
  assert.deepEqual(keptBody(Buffer.alloc(10, 'a'), true), { body: 'a'.repeat(10), truncated: true })
})

test('keptBody: NUL becomes U+FFFD (not dropped), and a character cut at 4096 bytes is left out, not replaced', () => {
  assert.deepEqual(keptBody(Buffer.from('a\u0000b'), false), { body: 'a\ufffdb', truncated: false })
  // 4093 bytes, then a 4-byte character of which 3 bytes fit: the cut character is left out.
  const cut = Buffer.concat([Buffer.alloc(4093, 'a'), Buffer.from('\u{1F600}')])
  assert.deepEqual(keptBody(cut, false), { body: 'a'.repeat(4093), truncated: true })
  // A 2-byte character cut after its first byte.
  const cutTwo = Buffer.concat([Buffer.alloc(4095, 'a'), Buffer.from('\u00e9')])
  assert.deepEqual(keptBody(cutTwo, false), { body: 'a'.repeat(4095), truncated: true })
})

test('a 2xx body of exactly 4097 bytes in two pieces is kept as 4096 and marked truncated; 4096 is whole', BOUNDED, async (t) => {
  for (const [size, truncated] of [[4097, true], [4096, false]] as const) {
    const receiver = await rawReceiver(t, (socket) => {
      socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${size}\r\n\r\n`)
      socket.write(Buffer.alloc(4096, 'k'))
      if (size > 4096) setTimeout(() => socket.write('k'), 50)
    })
    const result = await attemptDelivery(input(`http://kept.test:${receiver.port}/`))
    assert.deepEqual([result.outcome, result.response?.body, result.response?.truncated],
      ['succeeded', 'k'.repeat(4096), truncated], String(size))
  }
})

test('a failing answer of exactly 4096 bytes that ends is kept whole, not truncated', BOUNDED, async (t) => {
  const receiver = await rawReceiver(t, (socket) => {
    socket.write(Buffer.concat([Buffer.from('HTTP/1.1 500 Oops\r\ncontent-length: 4096\r\n\r\n'), Buffer.alloc(4096, 'e')]))
  })
  const result = await attemptDelivery(input(`http://exact.test:${receiver.port}/`))
  assert.deepEqual([result.outcome, result.error, result.response?.body, result.response?.truncated],
    ['failed', 'HTTP 500', 'e'.repeat(4096), false])
})

test('a failing answer that sends exactly 4097 bytes then stalls ends the attempt at once, not at the deadline', BOUNDED, async (t) => {
  const receiver = await rawReceiver(t, (socket) => {
    socket.write(Buffer.concat([Buffer.from('HTTP/1.1 500 Oops\r\ncontent-length: 9000\r\n\r\n'), Buffer.alloc(4097, 'f')]))
  })
  const result = await attemptDelivery(input(`http://stall4097.test:${receiver.port}/`, { timeoutMs: 3000 }))
  assert.deepEqual([result.outcome, result.error, result.response?.body, result.response?.truncated],
    ['failed', 'HTTP 500', 'f'.repeat(4096), true])
  assert.ok(result.durationMs < 1500, `took ${result.durationMs} ms`)
})

test('a failing answer that streams 5000 bytes then stalls ends at once after 4 KiB, not at the deadline', BOUNDED, async (t) => {
  const receiver = await rawReceiver(t, (socket) => {
    socket.write('HTTP/1.1 502 Bad\r\ncontent-length: 90000\r\n\r\n')
    socket.write(Buffer.alloc(3000, 'g'))
    setTimeout(() => socket.write(Buffer.alloc(2000, 'g')), 30)
  })
  const result = await attemptDelivery(input(`http://stall5000.test:${receiver.port}/`, { timeoutMs: 3000 }))
  assert.deepEqual([result.outcome, result.error, result.response?.truncated], ['failed', 'HTTP 502', true])
  assert.ok(result.durationMs < 1500, `took ${result.durationMs} ms`)
})

test('a 2xx that sends exactly maxResponseBytes then stalls succeeds at once', BOUNDED, async (t) => {
  const receiver = await rawReceiver(t, (socket) => {
    socket.write(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 9000\r\n\r\n'), Buffer.alloc(1024, 'm')]))
  })
  const result = await attemptDelivery(input(`http://limit.test:${receiver.port}/`, { maxResponseBytes: 1024, timeoutMs: 3000 }))
  assert.deepEqual([result.outcome, result.error], ['succeeded', undefined])
  assert.ok(result.durationMs < 1500, `took ${result.durationMs} ms`)
})

test('a 2xx cut mid-body (closed or reset) fails as a reset connection, not a success', BOUNDED, async (t) => {
  for (const how of ['end', 'reset'] as const) {
    const receiver = await rawReceiver(t, (socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\nhalf')
      setTimeout(() => { if (how === 'end') socket.end(); else socket.resetAndDestroy() }, 30)
    })
    const result = await attemptDelivery(input(`http://cut.test:${receiver.port}/`))
    const { outcome, status, error, errorType, response } = result
    assert.deepEqual([outcome, status, error, errorType, response?.body, response?.truncated],
      ['failed', 200, 'connection reset', 'ECONNRESET', 'half', true], how)
  }
})

test('a failing answer cut mid-body (closed or reset) fails for its status, with what came kept and marked truncated', BOUNDED, async (t) => {
  for (const how of ['end', 'reset'] as const) {
    const receiver = await rawReceiver(t, (socket) => {
      socket.write('HTTP/1.1 500 Oops\r\ncontent-length: 1000\r\n\r\nhalf')
      setTimeout(() => { if (how === 'end') socket.end(); else socket.resetAndDestroy() }, 30)
    })
    const result = await attemptDelivery(input(`http://cut500.test:${receiver.port}/`))
    assert.deepEqual(
      [result.outcome, result.status, result.error, result.errorType],
      ['failed', 500, 'HTTP 500', undefined], how)
    assert.deepEqual([result.response?.body, result.response?.truncated], ['half', true], how)
  }
})

test('an answer\'s header name and value are kept up to 256 and 1024 characters: at the bound whole, past it cut', BOUNDED, async (t) => {
  const name = (n: number): string => 'x-' + 'n'.repeat(n - 2)
  const receiver = await rawReceiver(t, (socket) => {
    socket.write(`HTTP/1.1 500 X\r\n${name(256)}: ${'v'.repeat(1024)}\r\n${name(257)}: ${'w'.repeat(1025)}\r\n`
      + 'content-length: 0\r\n\r\n')
  })
  const result = await attemptDelivery(input(`http://headers.test:${receiver.port}/`))
  assert.deepEqual(result.response?.headers.slice(0, 2), [[name(256), 'v'.repeat(1024)], [name(256), 'w'.repeat(1024)]])
})

test('control characters in an answer\'s header value are replaced by U+FFFD (a lenient parser lets them through)', BOUNDED, async (t) => {
  // Node's strict parser refuses them (HPE_INVALID_HEADER_TOKEN); with --insecure-http-parser they
  // reach the attempt, which must still keep none of them.
  const receiver = await rawReceiver(t, (socket) => {
    socket.write('HTTP/1.1 500 X\r\nx-ctl: a\u0001b\u001bc\u007fd\t\u00b5\r\ncontent-length: 0\r\n\r\n', 'latin1')
  })
  const attempt = new URL('../../src/webhooks/attempt.ts', import.meta.url).href
  const script = `const { attemptDelivery } = await import(${JSON.stringify(attempt)})
const result = await attemptDelivery({ url: new URL('http://ctl.test:${receiver.port}/'),
  address: { address: '127.0.0.1', family: 4 }, headers: {}, body: '', timeoutMs: 3000 })
process.stdout.write(JSON.stringify(result.response?.headers ?? result.error))`
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--insecure-http-parser', '--no-warnings', '--input-type=module', '-e', script],
      { timeout: 10_000 }, (error, out) => { if (error === null) resolve(out); else reject(error) })
  })
  assert.deepEqual(JSON.parse(stdout)[0], ['x-ctl', 'a\ufffdb\ufffdc\ufffdd\t\u00b5'])
})

/**
 * Certificates for hooks.test made by openssl: a CA (not trusted by the system), a leaf it signed,
 * and the same leaf's key in a certificate that expired in 2020.
 */
function certificates (t: TestContext): { ca: string; key: string; leaf: string; expired: string } {
  const dir = tempDir(t, 'petstore-webhook-pki-')
  const at = (name: string): string => join(dir, name)
  const run = (...args: string[]): void => { execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' }) }
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  run('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=Edge test CA')
  run('req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=hooks.test')
  writeFileSync(at('ext.cnf'), 'subjectAltName=DNS:hooks.test\n')
  run('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem',
    '-days', '1', '-extfile', 'ext.cnf')
  writeFileSync(at('ca.cnf'), '[ca]\ndefault_ca=edge\n[edge]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\n'
  + 'default_md=sha256\npolicy=any\n[any]\ncommonName=supplied\n')
  writeFileSync(at('index.txt'), '')
  writeFileSync(at('serial'), '01\n')
  run('ca', '-batch', '-notext', '-config', 'ca.cnf', '-cert', 'ca.pem', '-keyfile', 'ca.key', '-in', 'leaf.csr',
    '-out', 'expired.pem', '-startdate', '20200101000000Z', '-enddate', '20200102000000Z', '-extfile', 'ext.cnf')
  const read = (name: string): string => readFileSync(at(name), 'utf8')
  return { ca: read('ca.pem'), key: read('leaf.key'), leaf: read('leaf.pem'), expired: read('expired.pem') }
}

test('TLS failures in short words: an unknown authority, a self-signed authority in the chain, an expired certificate', BOUNDED, async (t) => {
  const pki = certificates(t)
  for (const [served, ca, error, errorType] of [
    [pki.leaf, undefined, 'TLS: unknown certificate authority', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'],
    [pki.leaf + pki.ca, undefined, 'TLS: self-signed certificate in chain', 'SELF_SIGNED_CERT_IN_CHAIN'],
    [pki.expired, pki.ca, 'TLS: certificate expired', 'CERT_HAS_EXPIRED']
  ] as const) {
    let requests = 0
    const server = createHttpsServer({ key: pki.key, cert: served }, (_req, res) => {
      requests++
      res.writeHead(204).end()
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    t.after(() => { server.close() })
    const port = (server.address() as { port: number }).port
    const result = await attemptDelivery(input(`https://hooks.test:${port}/`, ca === undefined ? {} : { tls: { ca } }))
    assert.deepEqual([result.outcome, result.status, result.error, result.errorType], ['failed', undefined, error, errorType])
    assert.equal(requests, 0)
  }
})

// --- The stale-connection retry: only before an answer, only on a reused pooled connection, once, fresh ----------

test('a reused connection that times out unanswered is not sent again: the attempt has ended', BOUNDED, async (t) => {
  const r = await numberedReceiver(t, { answer: (_req, res, connection) => {
    // The first request answers; a second on the same connection gets nothing.
    if (r.requests.filter((q) => q.connection === connection).length === 1) res.writeHead(204).end()
  } })
  assert.equal((await attemptDelivery(input(`http://late.test:${r.port}/`))).outcome, 'succeeded')
  const result = await attemptDelivery(input(`http://late.test:${r.port}/`, { timeoutMs: 200 }))
  assert.deepEqual([result.outcome, result.error, result.errorType], ['failed', 'timed out after 200 ms', 'timeout'])
  await sleep(200)
  assert.deepEqual(r.requests.map((q) => q.connection), [1, 1], 'no request after the deadline')
})

test('a reused connection reset after the status line is a failure, not sent again', BOUNDED, async (t) => {
  const r = await numberedReceiver(t, { answer: (_req, res, connection) => {
    if (r.requests.filter((q) => q.connection === connection).length === 1) {
      res.writeHead(204).end()
    } else {
      res.writeHead(200, { 'content-length': '1000' })
      res.write('half')
      setTimeout(() => { res.socket?.resetAndDestroy() }, 30)
    }
  } })
  assert.equal((await attemptDelivery(input(`http://midbody.test:${r.port}/`))).outcome, 'succeeded')
  const result = await attemptDelivery(input(`http://midbody.test:${r.port}/`))
  assert.deepEqual([result.outcome, result.status, result.error], ['failed', 200, 'connection reset'])
  await sleep(100)
  assert.deepEqual(r.requests.map((q) => q.connection), [1, 1], 'not sent again')
})

test('the attempt made again after a stale connection goes on a new connection, not another pooled one', BOUNDED, async (t) => {
  const r = await numberedReceiver(t, { answer: (req, res, connection) => {
    // Any request on a connection that has already served one is reset unanswered.
    if (r.requests.filter((q) => q.connection === connection).length > 1) req.socket.resetAndDestroy()
    else res.writeHead(204).end()
  } })
  const url = `http://stale.test:${r.port}/`
  // Two at once: two pooled connections, both idle afterwards.
  const warm = await Promise.all([attemptDelivery(input(url)), attemptDelivery(input(url))])
  assert.deepEqual(warm.map((w) => w.outcome), ['succeeded', 'succeeded'])
  assert.deepEqual(r.requests.map((q) => q.connection).sort(), [1, 2])
  const result = await attemptDelivery(input(url))
  assert.deepEqual([result.outcome, result.status], ['succeeded', 204])
  const third = r.requests.slice(2).map((q) => q.connection)
  assert.equal(third.length, 2, `one reset on a pooled connection, then one on a new connection (${third.join(', ')})`)
  assert.equal(third[1], 3)
})

test('with a test\'s own certificate authority no connection is pooled: each attempt opens its own', BOUNDED, async (t) => {
  const tls = selfSignedCert(t, 'ca.test')
  const receiver = await startReceiver(t, undefined, { tls })
  let connections = 0
  receiver.server.on('secureConnection', () => { connections++ })
  for (let i = 0; i < 2; i++) {
    const result = await attemptDelivery(input(`https://ca.test:${receiver.port}/`, { tls: { ca: tls.cert } }))
    assert.deepEqual([result.outcome, result.status], ['succeeded', 204])
  }
  assert.equal(connections, 2)
})

// --- The agent cache: least recently used, not least recently created --------------------------

test(`exactly ${MAX_AGENTS} origins keep their connections; past it the least recently used (not created) is dropped, and a dropped origin's connection in use is closed when its attempt ends`, BOUNDED, async (t) => {
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  const r = await numberedReceiver(t, { answer: (req, res) => {
    if (req.headers.host?.startsWith('busy.test') === true) void released.then(() => res.writeHead(204).end())
    else res.writeHead(204).end()
  } })
  const url = (name: string): string => `http://${name}:${r.port}/`
  const connectionOf = (name: string): number[] => r.requests.filter((q) => q.host === name).map((q) => q.connection)

  // An attempt in flight on busy.test while MAX_AGENTS newer origins push its agent out.
  const busy = attemptDelivery(input(url('busy.test')))
  assert.ok(await until(() => connectionOf('busy.test').length === 1, 2000))
  for (let i = 0; i < MAX_AGENTS; i++) assert.equal((await attemptDelivery(input(url(`lru-${i}.test`)))).outcome, 'succeeded')
  release()
  assert.equal((await busy).outcome, 'succeeded')
  const busyConnection = connectionOf('busy.test')[0]!
  assert.ok(await until(() => r.closed.has(busyConnection), 1000), 'the dropped agent\'s connection is closed once freed')

  // The cache now holds exactly lru-0 … lru-255: none was dropped, lru-0's connection is still there.
  await sleep(50)
  const first = connectionOf('lru-0.test')[0]!
  assert.equal(r.closed.has(first), false, `with exactly ${MAX_AGENTS} agents none is dropped`)
  // Used again, lru-0 becomes the most recently used; a new origin then drops lru-1, not lru-0.
  assert.equal((await attemptDelivery(input(url('lru-0.test')))).outcome, 'succeeded')
  assert.deepEqual(connectionOf('lru-0.test'), [first, first])
  assert.equal((await attemptDelivery(input(url('lru-new.test')))).outcome, 'succeeded')
  const second = connectionOf('lru-1.test')[0]!
  assert.ok(await until(() => r.closed.has(second), 1000), 'lru-1, the least recently used, is dropped')
  assert.equal(r.closed.has(first), false, 'lru-0, used again, is kept')
  assert.equal((await attemptDelivery(input(url('lru-0.test')))).outcome, 'succeeded')
  assert.deepEqual(connectionOf('lru-0.test'), [first, first, first])
})
