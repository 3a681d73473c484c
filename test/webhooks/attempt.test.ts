// One delivery attempt against real receivers on 127.0.0.0/8: what arrives, what counts as
// success, the total deadline, the answer cap, TLS, and that only the checked address is reached.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { ServerResponse } from 'node:http'
import { test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { attemptDelivery, type AttemptInput, type AttemptResult } from '../../src/webhooks/attempt.ts'
import { newSecret, webhookHeaders } from '../../src/webhooks/signature.ts'
import { checkWebhookUrl, type Resolve, type UrlCheck } from '../../src/webhooks/url-guard.ts'
import { closedPort, selfSignedCert, startReceiver } from './receiver.ts'

// A hanging attempt must fail its test, not hold the run: no test here needs more than a few seconds.
const BOUNDED = { timeout: 20_000 }
const LOOPBACK = { address: '127.0.0.1', family: 4 } as const
const body = JSON.stringify({ type: 'order.created', timestamp: '2026-11-20T10:00:00.000Z', data: { id: 7, status: 'placed' } })

function signed (secret: string, id = 'evt_01'): ReturnType<typeof webhookHeaders> {
  return webhookHeaders({ id, timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] })
}

function input (url: string, overrides: Partial<AttemptInput> = {}): AttemptInput {
  return { url: new URL(url), address: LOOPBACK, headers: signed(newSecret()), body, timeoutMs: 5000, ...overrides }
}

/** Writes the body of a 200 until the sender goes away. */
function streamForever (res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/octet-stream' })
  const chunk = Buffer.alloc(16_384, 'x')
  const pump = (): void => { while (!res.destroyed && res.write(chunk)); }
  res.on('drain', pump)
  pump()
}

test('a delivery POSTs the exact body with content-type and the webhook headers to the URL\'s path, and standardwebhooks verifies it', BOUNDED, async (t) => {
  const receiver = await startReceiver(t)
  const secret = newSecret()
  const headers = signed(secret, 'evt_42')
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/in/orders?tenant=3`, { headers }))

  assert.equal(result.outcome, 'succeeded')
  assert.equal(result.status, 204)
  assert.equal(result.error, undefined)
  assert.ok(result.durationMs >= 0 && result.durationMs < 5000)
  assert.equal(receiver.received.length, 1)
  const [delivery] = receiver.received
  assert.ok(delivery)
  assert.equal(delivery.method, 'POST')
  assert.equal(delivery.url, '/in/orders?tenant=3')
  assert.equal(delivery.body, body)
  assert.equal(delivery.headers['content-type'], 'application/json')
  assert.equal(delivery.headers['content-length'], String(Buffer.byteLength(body)))
  // hooks.test has no DNS entry: the Host header names it while the connection went to the pinned address.
  assert.equal(delivery.headers.host, `hooks.test:${receiver.port}`)
  assert.equal(delivery.headers['webhook-id'], 'evt_42')
  assert.equal(delivery.headers['webhook-timestamp'], headers['webhook-timestamp'])
  assert.equal(delivery.headers['webhook-signature'], headers['webhook-signature'])
  const asReceived = Object.fromEntries(Object.entries(delivery.headers).map(([name, value]) => [name, String(value)]))
  assert.deepEqual(new Webhook(secret).verify(delivery.body, asReceived), JSON.parse(body))
})

test('the connection goes to the pinned address, not to what the name resolves to now', BOUNDED, async (t) => {
  // localhost resolves to 127.0.0.1 or ::1; the receiver listens on 127.0.0.3 only.
  const receiver = await startReceiver(t, undefined, { host: '127.0.0.3' })
  const result = await attemptDelivery(input(`http://localhost:${receiver.port}/`, { address: { address: '127.0.0.3', family: 4 } }))
  assert.equal(result.outcome, 'succeeded')
  assert.deepEqual(receiver.received.map((r) => [r.localAddress, r.headers.host]), [['127.0.0.3', `localhost:${receiver.port}`]])
})

test('two attempts to one name and port, pinned to two addresses, each reach their own address (no pooled connection is reused)', BOUNDED, async (t) => {
  const first = await startReceiver(t, undefined, { host: '127.0.0.5' })
  const second = await startReceiver(t, undefined, { host: '127.0.0.6', port: first.port })
  const url = `http://hooks.test:${first.port}/`
  assert.equal((await attemptDelivery(input(url, { address: { address: '127.0.0.5', family: 4 } }))).outcome, 'succeeded')
  assert.equal((await attemptDelivery(input(url, { address: { address: '127.0.0.6', family: 4 } }))).outcome, 'succeeded')
  assert.deepEqual([first.received.length, second.received.length], [1, 1])
})

test('a literal host that is not the checked address is not contacted (a literal bypasses the pinned lookup)', BOUNDED, async (t) => {
  const receiver = await startReceiver(t)
  const result = await attemptDelivery(input(`http://127.0.0.1:${receiver.port}/`, { address: { address: '127.0.0.2', family: 4 } }))
  assert.deepEqual(result, { outcome: 'failed', error: 'address does not match the URL', durationMs: 0 })
  assert.equal(receiver.received.length, 0)
})

test('every 2xx succeeds; 4xx and 5xx fail with their status', BOUNDED, async (t) => {
  for (const [status, outcome, error] of [[200, 'succeeded', undefined], [202, 'succeeded', undefined], [299, 'succeeded', undefined],
    [400, 'failed', 'HTTP 400'], [410, 'failed', 'HTTP 410'], [500, 'failed', 'HTTP 500'], [503, 'failed', 'HTTP 503']] as const) {
    const receiver = await startReceiver(t, (_req, res) => { res.writeHead(status).end('answer') })
    const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`))
    assert.deepEqual([result.outcome, result.status, result.error], [outcome, status, error], String(status))
  }
})

test('a redirect is a failure and is never followed: its target receives nothing', BOUNDED, async (t) => {
  const target = await startReceiver(t)
  for (const status of [301, 302, 303, 307, 308]) {
    const redirecting = await startReceiver(t, (_req, res) => {
      res.writeHead(status, { location: `http://127.0.0.1:${target.port}/stolen` }).end()
    })
    const result = await attemptDelivery(input(`http://hooks.test:${redirecting.port}/`))
    assert.deepEqual([result.outcome, result.status, result.error], ['failed', status, 'redirect not followed'])
    assert.equal(redirecting.received.length, 1)
  }
  assert.equal(target.received.length, 0)
})

// Issue 50 changed this test: a failing answer used to end the attempt at its status line, its
// body neither read nor reported; now its first 4 KiB are kept, read within the same deadline.
test('a failing answer whose body never ends is read until the deadline: what came is kept, marked truncated, and the secret is nowhere', BOUNDED, async (t) => {
  const secret = newSecret()
  const headers = signed(secret)
  // The receiver echoes the request's headers and never ends its body.
  const receiver = await startReceiver(t, (req, res) => {
    res.writeHead(500, { 'x-echo': 'yes' }).write(JSON.stringify(req.headers))
  })
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`, { headers, timeoutMs: 1000 }))
  assert.deepEqual([result.outcome, result.status, result.error], ['failed', 500, 'HTTP 500'])
  assert.ok(result.durationMs >= 990 && result.durationMs < 2500, `took ${result.durationMs} ms`)
  assert.equal(result.response?.truncated, true)
  assert.deepEqual(JSON.parse(result.response.body)['webhook-signature'], headers['webhook-signature'])
  assert.ok(result.response.headers.some(([name, value]) => name === 'x-echo' && value === 'yes'))
  assert.ok(!JSON.stringify(result).includes(secret.slice(6, 20)), 'the secret is not in the result')
})

test('a failing answer is read no further than 4 KiB: a 10 MB body ends the attempt at once, kept as 4 KiB of text, truncated', BOUNDED, async (t) => {
  let finished: boolean | undefined
  let closed!: Promise<unknown>
  const receiver = await startReceiver(t, (_req, res) => {
    closed = once(res, 'close').then(() => { finished = res.writableFinished })
    res.writeHead(503, { 'content-type': 'text/html' }).end(Buffer.alloc(10 * 1024 * 1024, '<b>'))
  })
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`, { timeoutMs: 5000 }))
  assert.deepEqual([result.outcome, result.status, result.error], ['failed', 503, 'HTTP 503'])
  assert.ok(result.durationMs < 2000, `took ${result.durationMs} ms`)
  assert.equal(result.response?.truncated, true)
  assert.equal(result.response.body, '<b>'.repeat(2000).slice(0, 4096))
  await closed
  assert.equal(finished, false, 'the receiver saw the connection closed before it finished writing')
})

test('a failing answer\'s body is kept as text: invalid UTF-8 and NUL become U+FFFD, within 4 KiB of UTF-8, and headers are bounded', BOUNDED, async (t) => {
  const receiver = await startReceiver(t, (_req, res) => {
    // Within Node's 16 KiB of headers: 80 short ones, and one long.
    const many = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`x-h${i}`, 'v'.repeat(60)]))
    res.writeHead(500, { 'x-long': 'w'.repeat(5000), ...many }).end(Buffer.concat([Buffer.from('ok\u0000'), Buffer.alloc(3000, 0xff)]))
  })
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`))
  const response = result.response
  assert.ok(response)
  assert.equal(response.body.slice(0, 3), 'ok\ufffd')
  assert.ok(/^ok\ufffd+$/.test(response.body))
  assert.ok(Buffer.byteLength(response.body) <= 4096, `${Buffer.byteLength(response.body)} bytes`)
  assert.equal(response.truncated, true, 'the text was cut to fit')
  assert.equal(response.headers.length, 64)
  assert.deepEqual(response.headers[0], ['x-long', 'w'.repeat(1024)])
})

test('a failing answer with a short body that ends is kept whole, not truncated, with its headers in their order', BOUNDED, async (t) => {
  const receiver = await startReceiver(t, (_req, res) => {
    res.writeHead(422, [['X-Reason', 'bad <script>'], ['Set-Cookie', 'a=1'], ['Set-Cookie', 'b=2'], ['Content-Type', 'text/plain']])
    res.end('no such order')
  })
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`))
  assert.deepEqual(result.response && { ...result.response, headers: result.response.headers.slice(0, 4) }, {
    status: 422,
    headers: [['X-Reason', 'bad <script>'], ['Set-Cookie', 'a=1'], ['Set-Cookie', 'b=2'], ['Content-Type', 'text/plain']],
    body: 'no such order',
    truncated: false
  })
  assert.deepEqual(result.requestHeaders?.map(([name]) => name),
    ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type', 'content-length', 'user-agent'])
})

test('a receiver that never answers fails the attempt at the deadline', BOUNDED, async (t) => {
  const receiver = await startReceiver(t, () => {})
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`, { timeoutMs: 300 }))
  assert.deepEqual([result.outcome, result.status, result.error], ['failed', undefined, 'timed out after 300 ms'])
  assert.ok(result.durationMs >= 290 && result.durationMs < 2000, `took ${result.durationMs} ms`)
})

test('the deadline is total: a 200 whose body trickles a byte every 50 ms fails at the deadline (an idle timeout never fires)', BOUNDED, async (t) => {
  let written = 0
  const receiver = await startReceiver(t, (_req, res) => {
    res.writeHead(200)
    const timer = setInterval(() => { res.write('x'); written++ }, 50)
    res.on('close', () => clearInterval(timer))
  })
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`, { timeoutMs: 600 }))
  assert.deepEqual([result.outcome, result.status, result.error], ['failed', 200, 'timed out after 600 ms'])
  assert.ok(result.durationMs >= 590 && result.durationMs < 2500, `took ${result.durationMs} ms`)
  assert.ok(written >= 3, `the body was flowing (${written} writes)`)
})

test('a 200 that streams forever succeeds once 64 KiB are read, long before the deadline, and the connection is closed', BOUNDED, async (t) => {
  let closed!: Promise<unknown>
  const receiver = await startReceiver(t, (_req, res) => { closed = once(res, 'close'); streamForever(res) })
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`, { timeoutMs: 10_000 }))
  assert.deepEqual([result.outcome, result.status, result.error], ['succeeded', 200, undefined])
  assert.ok(result.durationMs < 3000, `took ${result.durationMs} ms`)
  await closed
})

test('a 10 MB answer is not read to its end: the receiver sees the connection closed before it finished writing', BOUNDED, async (t) => {
  let finished: boolean | undefined
  let closed!: Promise<unknown>
  const receiver = await startReceiver(t, (_req, res) => {
    closed = once(res, 'close').then(() => { finished = res.writableFinished })
    res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) }).end(Buffer.alloc(10 * 1024 * 1024, 'y'))
  })
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`))
  assert.equal(result.outcome, 'succeeded')
  await closed
  assert.equal(finished, false)
})

test('maxResponseBytes bounds what is read: with 1 KiB, a body that stops after 2 KiB without ending still succeeds at once', BOUNDED, async (t) => {
  const receiver = await startReceiver(t, (_req, res) => { res.writeHead(200).write(Buffer.alloc(2048, 'z')) })
  const result = await attemptDelivery(input(`http://hooks.test:${receiver.port}/`, { maxResponseBytes: 1024, timeoutMs: 3000 }))
  assert.equal(result.outcome, 'succeeded')
  assert.ok(result.durationMs < 2000, `took ${result.durationMs} ms`)
})

test('a refused connection fails with a short error and no status', BOUNDED, async () => {
  const port = await closedPort()
  const result = await attemptDelivery(input(`http://hooks.test:${port}/`))
  assert.deepEqual([result.outcome, result.status, result.error], ['failed', undefined, 'connection refused'])
})

test('https: the pinned address is reached while SNI, Host and the certificate check use the URL\'s name', BOUNDED, async (t) => {
  const tls = selfSignedCert(t, 'hooks.test')
  const receiver = await startReceiver(t, undefined, { tls })
  const result = await attemptDelivery(input(`https://hooks.test:${receiver.port}/in`, { tls: { ca: tls.cert } }))
  assert.deepEqual([result.outcome, result.status, result.error], ['succeeded', 204, undefined])
  assert.deepEqual(
    receiver.received.map((r) => [r.localAddress, r.servername, r.headers.host, r.body]),
    [['127.0.0.1', 'hooks.test', `hooks.test:${receiver.port}`, body]]
  )
})

test('https: an untrusted certificate and a certificate for another name fail with a short TLS error, sending nothing', BOUNDED, async (t) => {
  const tls = selfSignedCert(t, 'hooks.test')
  const receiver = await startReceiver(t, undefined, { tls })
  const untrusted = await attemptDelivery(input(`https://hooks.test:${receiver.port}/`))
  assert.deepEqual([untrusted.outcome, untrusted.status, untrusted.error], ['failed', undefined, 'TLS: self-signed certificate'])
  // Same address, same trusted certificate, another name in the URL: the name is what is checked.
  const otherName = await attemptDelivery(input(`https://other.test:${receiver.port}/`, { tls: { ca: tls.cert } }))
  assert.deepEqual([otherName.outcome, otherName.status, otherName.error], ['failed', undefined, 'TLS: certificate does not match the host name'])
  assert.equal(receiver.received.length, 0)
})

// --- The guard and the attempt together, as the dispatcher will use them -------------------------

/** Check the URL, then attempt through its first address: what every attempt will do. */
async function deliverOnce (
  url: string,
  resolve: Resolve,
  allowedHosts: string[],
  extra: Partial<AttemptInput> = {}
): Promise<UrlCheck | AttemptResult> {
  const check = await checkWebhookUrl(url, { allowedHosts, resolve })
  if (!check.ok) return check
  const [address] = check.addresses
  assert.ok(address)
  return await attemptDelivery({
    url: check.url,
    address,
    headers: signed(newSecret()),
    body,
    timeoutMs: 5000,
    ...extra
  })
}

test('check then attempt: an allowed host over http is delivered to the address the check resolved', BOUNDED, async (t) => {
  const receiver = await startReceiver(t, undefined, { host: '127.0.0.4' })
  const resolve: Resolve = async () => [{ address: '127.0.0.4', family: 4 }]
  const result = await deliverOnce(`http://receiver.test:${receiver.port}/hooks`, resolve, ['receiver.test'])
  assert.ok('outcome' in result)
  assert.deepEqual([result.outcome, result.status], ['succeeded', 204])
  assert.deepEqual(receiver.received.map((r) => [r.localAddress, r.url]), [['127.0.0.4', '/hooks']])
})

test('a name that resolved to a public address at creation and resolves to loopback at attempt time is refused then, and nothing is sent', BOUNDED, async (t) => {
  const tls = selfSignedCert(t, 'localhost')
  const receiver = await startReceiver(t, undefined, { tls })
  const answers = ['93.184.216.34', '127.0.0.1']
  const resolve: Resolve = async () => [{ address: answers.shift() ?? '127.0.0.1', family: 4 }]
  const url = `https://localhost:${receiver.port}/`
  const atCreation = await checkWebhookUrl(url, { allowedHosts: [], resolve })
  assert.equal(atCreation.ok, true)
  const atAttempt = await deliverOnce(url, resolve, [], { tls: { ca: tls.cert } })
  assert.deepEqual(atAttempt, { ok: false, reason: 'forbidden_address' })
  assert.equal(receiver.received.length, 0)
})
