// Connections kept alive per endpoint (webhooks/attempt.ts, agentFor; issue 51 item 2): an
// endpoint's attempts reuse one connection to the address the check approved, never one opened to
// another address or for another origin; a connection whose answer was not read to its end is not
// reused; an idle one is closed after IDLE_SOCKET_MS; past MAX_AGENTS origins the least recently
// used one's connection is closed. Seen from the receivers: which connection each request came on.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { attemptDelivery, IDLE_SOCKET_MS, MAX_AGENTS, type AttemptInput } from '../../src/webhooks/attempt.ts'
import { numberedReceiver } from './numbered-receiver.ts'

const BOUNDED = { timeout: 30_000 }

function input (url: string, address = '127.0.0.1'): AttemptInput {
  return { url: new URL(url), address: { address, family: 4 }, headers: { 'webhook-id': 'msg_1' }, body: '{}', timeoutMs: 5000 }
}

const until = async (check: () => boolean, ms: number): Promise<boolean> => {
  const end = Date.now() + ms
  while (!check() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 25))
  return check()
}

test('an endpoint\'s attempts one after the other reuse one connection', BOUNDED, async (t) => {
  const r = await numberedReceiver(t)
  for (let i = 0; i < 3; i++) assert.equal((await attemptDelivery(input(`http://keep.test:${r.port}/in`))).outcome, 'succeeded')
  assert.deepEqual(r.requests.map((q) => q.connection), [1, 1, 1])
  assert.deepEqual(r.closed, new Set(), 'kept open')
})

test('one name and port pinned to two addresses: each address gets its own connection, never the other\'s', BOUNDED, async (t) => {
  const first = await numberedReceiver(t, { host: '127.0.0.7' })
  const second = await numberedReceiver(t, { host: '127.0.0.8', port: first.port })
  const url = `http://twice.test:${first.port}/`
  for (const address of ['127.0.0.7', '127.0.0.8', '127.0.0.7', '127.0.0.8']) {
    assert.equal((await attemptDelivery(input(url, address))).outcome, 'succeeded')
  }
  assert.deepEqual(first.requests.map((q) => [q.connection, q.localAddress]), [[1, '127.0.0.7'], [1, '127.0.0.7']])
  assert.deepEqual(second.requests.map((q) => [q.connection, q.localAddress]), [[1, '127.0.0.8'], [1, '127.0.0.8']])
})

test('another origin on the same address gets its own connection', BOUNDED, async (t) => {
  const r = await numberedReceiver(t)
  for (const name of ['one.test', 'two.test', 'one.test']) {
    assert.equal((await attemptDelivery(input(`http://${name}:${r.port}/`))).outcome, 'succeeded')
  }
  assert.deepEqual(r.requests.map((q) => [q.connection, q.host]), [[1, 'one.test'], [2, 'two.test'], [1, 'one.test']])
})

test('an answer not read to its end closes its connection: the next attempt opens another', BOUNDED, async (t) => {
  const r = await numberedReceiver(t, { answer: (req, res) => {
    if (req.url === '/big') {
      // A failing answer longer than what is kept: read no further than 4 KiB, then closed.
      res.writeHead(500, { 'content-type': 'text/plain' })
      res.end(Buffer.alloc(1_000_000, 'x'))
    } else {
      res.writeHead(204).end()
    }
  } })
  const result = await attemptDelivery(input(`http://cut.test:${r.port}/big`))
  assert.deepEqual([result.outcome, result.status], ['failed', 500])
  assert.equal((await attemptDelivery(input(`http://cut.test:${r.port}/small`))).outcome, 'succeeded')
  assert.deepEqual(r.requests.map((q) => q.connection), [1, 2])
  assert.ok(await until(() => r.closed.has(1), 2000), 'the first connection is closed')
})

test(`an idle connection is closed after ${IDLE_SOCKET_MS} ms`, BOUNDED, async (t) => {
  const r = await numberedReceiver(t)
  assert.equal((await attemptDelivery(input(`http://idle.test:${r.port}/`))).outcome, 'succeeded')
  await new Promise((resolve) => setTimeout(resolve, IDLE_SOCKET_MS - 1000))
  assert.deepEqual(r.closed, new Set(), 'still open a second before')
  assert.ok(await until(() => r.closed.has(1), 3000), 'closed')
})

test(`at most ${MAX_AGENTS} origins keep a connection: past it, the least recently used one's is closed`, BOUNDED, async (t) => {
  const r = await numberedReceiver(t)
  for (let i = 0; i <= MAX_AGENTS; i++) {
    assert.equal((await attemptDelivery(input(`http://lru-${i}.test:${r.port}/`))).outcome, 'succeeded')
  }
  assert.equal(r.requests.length, MAX_AGENTS + 1)
  assert.ok(await until(() => r.closed.has(1), 2000), 'the first origin\'s connection is closed')
  assert.equal(r.closed.has(MAX_AGENTS + 1), false, 'the last one\'s is kept')
})

test('a kept-alive connection the receiver resets as it is reused: the attempt is made again at once on a new one', BOUNDED, async (t) => {
  let seen = (): number => 0
  const r = await numberedReceiver(t, { answer: (req, res) => {
    // The second request, the first on a reused connection: closed unanswered, as a receiver's
    // idle timeout meeting our request on the wire does.
    if (seen() === 2) req.socket.resetAndDestroy()
    else res.writeHead(204).end()
  } })
  seen = () => r.requests.length
  assert.equal((await attemptDelivery(input(`http://reset.test:${r.port}/`))).outcome, 'succeeded')
  const again = await attemptDelivery(input(`http://reset.test:${r.port}/`))
  assert.deepEqual([again.outcome, again.status, again.error], ['succeeded', 204, undefined])
  assert.deepEqual(r.requests.map((q) => q.connection), [1, 1, 2], 'sent again once, on a new connection')
  // Only once: a new connection reset too is the attempt's failure.
  const r2 = await numberedReceiver(t, { answer: (req) => { req.socket.resetAndDestroy() } })
  const failed = await attemptDelivery(input(`http://reset2.test:${r2.port}/`))
  assert.deepEqual([failed.outcome, failed.error], ['failed', 'connection reset'])
  assert.equal(r2.requests.length, 1, 'a fresh connection reset is not sent again')
})
