// The spans of issue 35 beside storage's, against the real OTLP/HTTP receiver: a `petstore serve`
// process on Redis (through a TCP proxy, with a key prefix of its own) charges each request in a
// `redis ratelimit consume` span under the request's, and marks it an error when Redis is gone
// (the fallback then answers); each webhook attempt is a CLIENT span whose traceparent reaches
// the receiver, with the HTTP client conventions and, for an endpoint that refuses or is gone,
// error status; the dispatch round a request woke stays out of that request's trace.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { cleanupStack, pollUntil, startServerProcess } from '../helpers/server.ts'
import { TEST_ENGINE } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'
import { isolatedRedis, requireServices, schemaDatabaseUrl, tcpProxy, TEST_REDIS_URL } from '../scale/helpers.ts'
import { startReceiver } from '../webhooks/receiver.ts'
import { startOtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts'

const SERVER = 2
const CLIENT = 3
const ERROR = 2

test('the Redis limiter call and each webhook attempt are spans: the limiter under its request, the attempt\'s traceparent sent to the receiver', { timeout: 120_000 }, async (t) => {
  if (!await requireServices(t, TEST_ENGINE === 'postgres' ? ['postgres', 'redis'] : ['redis'])) return
  const cleanup = cleanupStack(t)
  const dir = tempDir(t)
  const otlp = await startOtlpReceiver(t)
  const proxy = await tcpProxy(cleanup, TEST_REDIS_URL)
  const redis = isolatedRedis(cleanup)
  const databaseUrl = TEST_ENGINE === 'postgres' ? (await schemaDatabaseUrl(t)).url() : `sqlite:${join(dir, 'p.db')}`
  const keysFile = join(dir, 'keys.txt')
  const server = await startServerProcess(cleanup, {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url(proxy.via(TEST_REDIS_URL)),
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    WEBHOOK_POLL_MS: '50',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_SERVICE_NAME: 'petstore-child-spans-test'
  }, ['--sample-data', '--keys-file', keysFile])
  const customer = /^\s+customer\s+(psk_\S+)$/m.exec(await readFile(keysFile, 'utf8'))![1]!
  const headers = { 'x-api-key': customer, 'content-type': 'application/json' }

  // A request charged through Redis, from a caller that sends its trace context.
  const traceId = randomBytes(16).toString('hex')
  const listed = await fetch(`${server.url}/v1/pets?limit=1`, { headers: { ...headers, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` } })
  assert.equal(listed.status, 200, await listed.text())
  assert.ok((await redis.client.keys(`${redis.prefix}petstore:rl:*`)).length > 0, 'the request was not counted in Redis')

  // Three endpoints: one answers 204, one refuses with 503, one is a closed port; the URL's query holds a token.
  const good = await startReceiver(t)
  const bad = await startReceiver(t, (_req, res) => { res.writeHead(503).end() })
  const closed = await closedPort()
  const endpoints: Record<string, string> = {}
  for (const [name, port] of [['good', good.port], ['bad', bad.port], ['gone', closed]] as const) {
    const created = await fetch(`${server.url}/v1/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: `http://127.0.0.1:${port}/hooks?token=s3cret-${name}`, types: ['order.*'] }) })
    const text = await created.text()
    assert.equal(created.status, 201, text)
    endpoints[name] = (JSON.parse(text) as { id: string }).id
    const queued = await fetch(`${server.url}/v1/webhooks/${endpoints[name]}/test`, { method: 'POST', headers: { 'x-api-key': customer } })
    assert.equal(queued.status, 202, await queued.text())
  }
  await pollUntil(
    async () => good.received.length > 0 && bad.received.length > 0 ? true : undefined,
    { timeoutMs: 10_000, intervalMs: 50, message: 'no delivery reached the receivers' }
  )

  // Redis goes away: the next request is answered by the fallback, and its limiter span says why.
  proxy.setUp(false)
  const fallbackTrace = randomBytes(16).toString('hex')
  const degraded = await fetch(`${server.url}/v1/pets?limit=1`, {
    headers: { ...headers, traceparent: `00-${fallbackTrace}-${randomBytes(8).toString('hex')}-01` }
  })
  assert.equal(degraded.status, 200, await degraded.text())

  const attemptOf = (all: ReceivedSpan[], id: string) => all.find((s) => s.kind === CLIENT && s.attributes['petstore.webhook.id'] === id)
  const { value: spans } = await pollUntil(async () => {
    const all = otlp.spans
    const done = [traceId, fallbackTrace].every((id) => (
      all.some((s) => s.traceId === id && s.kind === SERVER)
      && all.some((s) => s.traceId === id && s.name.startsWith('redis ratelimit '))
    )) && ['good', 'bad', 'gone'].every((name) => attemptOf(all, endpoints[name]!) !== undefined)
    return done ? all : undefined
  }, { timeoutMs: 10_000, intervalMs: 100, message: `spans missing; received: ${otlp.spans.map((s) => s.name).join(', ')}` })

  // The limiter's span: a client span under the request's server span, named by its operation and outcome.
  const request = spans.find((s) => s.kind === SERVER && s.traceId === traceId)!
  const charged = spans.find((s) => s.traceId === traceId && s.name === 'redis ratelimit consume')!
  // Its parent is Fastify's request span (@fastify/otel's `request`), the child of the server span.
  const parent = spans.find((s) => s.spanId === charged.parentSpanId)
  assert.equal(parent?.name, 'request', `the limiter span's parent: ${JSON.stringify(parent)}`)
  assert.equal(parent.parentSpanId, request.spanId)
  assert.equal(charged.kind, CLIENT)
  assert.equal(charged.status.code, 0)
  assert.equal(charged.attributes['db.system.name'], 'redis')
  assert.match(String(charged.attributes['db.operation.name']), /^EVAL(SHA)?$/)
  assert.equal(charged.attributes['server.address'], '127.0.0.1')
  assert.equal(charged.attributes['server.port'], proxy.port)
  assert.equal(charged.attributes['petstore.ratelimit.operation'], 'consume')
  assert.equal(charged.attributes['petstore.ratelimit.outcome'], 'allowed')

  // Redis unreachable: the span is an error with the fallback's reason, and the request still
  // succeeded. Which call meets the failure depends on the key cache: the address's peek (a key
  // read again) or the key's charge; the fallback answers the rest without asking Redis.
  const failed = spans.find((s) => s.traceId === fallbackTrace && s.name.startsWith('redis ratelimit '))!
  assert.ok(descendsFrom(failed, spans.find((s) => s.kind === SERVER && s.traceId === fallbackTrace)!, spans))
  assert.equal(failed.status.code, ERROR)
  assert.match(failed.status.message, /^rate limit store unavailable: /)
  assert.equal(typeof failed.attributes['error.type'], 'string')
  assert.equal(failed.attributes['petstore.ratelimit.outcome'], undefined)
  assert.deepEqual(
    spans.filter((s) => s.traceId === fallbackTrace && s.name.startsWith('redis ratelimit ')).map((s) => s.status.code),
    [ERROR]
  )

  // The delivered attempt: a root CLIENT span whose traceparent the receiver got.
  const delivered = attemptOf(spans, endpoints.good!)!
  const sent = good.received[0]!
  assert.equal(sent.headers.traceparent, `00-${delivered.traceId}-${delivered.spanId}-01`)
  assert.equal(delivered.parentSpanId, '')
  assert.equal(delivered.name, 'POST')
  assert.equal(delivered.status.code, 0)
  assert.deepEqual(pick(delivered.attributes, ['http.request.method', 'server.address', 'server.port', 'url.full', 'http.response.status_code', 'petstore.webhook.attempt', 'petstore.event.type', 'petstore.event.id']), {
    'http.request.method': 'POST',
    'server.address': '127.0.0.1',
    'server.port': good.port,
    'url.full': `http://127.0.0.1:${good.port}/hooks?token=[redacted]`,
    'http.response.status_code': 204,
    'petstore.webhook.attempt': 1,
    'petstore.event.type': 'webhook.test',
    'petstore.event.id': sent.headers['webhook-id']
  })
  assert.equal(typeof delivered.attributes['petstore.webhook.delivery_id'], 'number')
  // The attempt is the delivery's only client span (the HTTP instrumentation's own is silenced).
  assert.deepEqual(
    spans.filter((s) => s.kind === CLIENT && s.attributes['server.port'] === good.port).map((s) => s.spanId),
    [delivered.spanId]
  )

  // The refused attempt: error status, the answer's status as the error type.
  const refused = attemptOf(spans, endpoints.bad!)!
  assert.equal(bad.received[0]!.headers.traceparent, `00-${refused.traceId}-${refused.spanId}-01`)
  assert.equal(refused.status.code, ERROR)
  assert.equal(refused.status.message, 'HTTP 503')
  assert.equal(refused.attributes['http.response.status_code'], 503)
  assert.equal(refused.attributes['error.type'], '503')

  // No answer at all: the network error's code is the error type.
  const gone = attemptOf(spans, endpoints.gone!)!
  assert.equal(gone.status.code, ERROR)
  assert.equal(gone.status.message, 'connection refused')
  assert.equal(gone.attributes['error.type'], 'ECONNREFUSED')
  assert.equal(gone.attributes['http.response.status_code'], undefined)

  // The dispatch round a test request woke is not that request's work: nothing of its trace
  // (storage included) ends after its server span.
  const woke = spans.filter((s) => s.kind === SERVER && s.attributes['http.route'] === '/v1/webhooks/:webhookId/test')
  assert.equal(woke.length, 3)
  for (const server of woke) {
    // @fastify/otel's own spans of the request (`request`, its hooks and handler) and the request's
    // own transaction end (BEGIN/COMMIT) may end a moment after the server span on a busy machine:
    // they are the request's. A round run under the request shows its reads, claims and attempts.
    const late = spans.filter((s) => s.traceId === server.traceId && BigInt(s.endTime) > BigInt(server.endTime)
      && !/^(request$|handler - |hook - |pg\.query:(BEGIN|COMMIT|ROLLBACK)\b)/.test(s.name))
    assert.deepEqual(late.map((s) => s.name), [], 'spans of the dispatch round under the request that woke it')
  }

  // No span carries a key or the endpoint's token.
  assert.doesNotMatch(JSON.stringify(spans), /psk_|s3cret/)
  assert.equal(await server.stop(), 0)
})

/** A port on 127.0.0.1 that nothing listens on (just closed). */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

function pick (attributes: Record<string, unknown>, names: string[]): Record<string, unknown> {
  return Object.fromEntries(names.map((name) => [name, attributes[name]]))
}

function descendsFrom (span: ReceivedSpan, ancestor: ReceivedSpan, spans: ReceivedSpan[]): boolean {
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  for (let s: ReceivedSpan | undefined = span; s !== undefined; s = byId.get(s.parentSpanId)) {
    if (s.parentSpanId === ancestor.spanId) return true
  }
  return false
}
