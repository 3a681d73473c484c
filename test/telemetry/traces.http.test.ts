// OpenTelemetry traces (issue 35), against a real OTLP/HTTP receiver (http/json): a `petstore
// serve` process exports a server span per request with the HTTP conventions and the access
// decision, storage spans under it (the SQLite writer, or pg's queries), continues a caller's
// traceparent and names the trace in its log line; a 429 is a refusal event.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { cleanupStack, pollUntil, startServerProcess } from '../helpers/server.ts'
import { TEST_ENGINE } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'
import { requireServices, schemaDatabaseUrl } from '../scale/helpers.ts'
import { startOtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts'

const SERVER = 2

test('requests are traced to an OTLP receiver: attributes, storage children, a continued traceparent, the 429 refusal', { timeout: 90_000 }, async (t) => {
  if (TEST_ENGINE === 'postgres' && !await requireServices(t, ['postgres'])) return
  const cleanup = cleanupStack(t)
  const dir = tempDir(t)
  const receiver = await startOtlpReceiver(t)
  const databaseUrl = TEST_ENGINE === 'postgres' ? (await schemaDatabaseUrl(t)).url() : `sqlite:${join(dir, 'p.db')}`
  const keysFile = join(dir, 'keys.txt')
  const server = await startServerProcess(cleanup, {
    DATABASE_URL: databaseUrl,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_SERVICE_NAME: 'petstore-traces-test'
  }, ['--sample-data', '--keys-file', keysFile])
  const keys = Object.fromEntries([...(await readFile(keysFile, 'utf8')).matchAll(/^\s+(customer|staff|admin)\s+(psk_\S+)$/gm)].map((m) => [m[1]!, m[2]!]))
  const customer = keys.customer!

  // A write from a caller that sends its own trace context.
  const traceId = randomBytes(16).toString('hex')
  const parentId = randomBytes(8).toString('hex')
  const placed = await fetch(`${server.url}/v1/store/orders`, {
    method: 'POST',
    headers: { 'x-api-key': customer, 'content-type': 'application/json', traceparent: `00-${traceId}-${parentId}-01` },
    body: JSON.stringify({ petId: 10, quantity: 1 })
  })
  assert.equal(placed.status, 201, await placed.text())

  // The customer's key is on the free plan (60 a minute): call until the minute window refuses.
  let refusedStatus = 0
  for (let i = 0; i < 130 && refusedStatus !== 429; i++) {
    const res = await fetch(`${server.url}/v1/pets?limit=1`, { headers: { 'x-api-key': customer } })
    await res.arrayBuffer()
    refusedStatus = res.status
  }
  assert.equal(refusedStatus, 429)

  const { value: spans } = await pollUntil(async () => {
    const all = receiver.spans
    const done = all.some((s) => s.kind === SERVER && s.traceId === traceId)
      && all.some((s) => s.kind === SERVER && s.attributes['http.response.status_code'] === 429)
    return done ? all : undefined
  }, { timeoutMs: 10_000, intervalMs: 100, message: `spans missing; received: ${receiver.contentTypes.join(', ')}` })

  // The write's server span: the caller's trace continued, HTTP conventions, the route, our attributes.
  const request = spans.find((s) => s.kind === SERVER && s.traceId === traceId)!
  assert.equal(request.parentSpanId, parentId)
  assert.equal(request.resource['service.name'], 'petstore-traces-test')
  assert.equal(request.attributes['http.request.method'], 'POST')
  assert.equal(request.attributes['http.route'], '/v1/store/orders')
  assert.equal(request.attributes['http.response.status_code'], 201)
  assert.equal(request.attributes['petstore.operation_id'], 'placeOrder')
  assert.equal(request.attributes['petstore.key.role'], 'customer')
  assert.equal(request.attributes['petstore.plan'], 'free')
  assert.equal(typeof request.attributes['petstore.key.id'], 'number')
  assert.equal(request.attributes['petstore.ratelimit.window'], 'minute')
  assert.equal(request.attributes['petstore.ratelimit.remaining.minute'], 59)
  assert.equal(request.attributes['petstore.ratelimit.remaining.day'], 999)
  assert.equal(request.attributes['petstore.access.refused'], false)

  // Storage work is a descendant of the request's span.
  const storage = spans.filter((s) => s.traceId === traceId && descendsFrom(s, request, spans))
  if (TEST_ENGINE === 'postgres') {
    assert.ok(storage.some((s) => s.attributes['db.system.name'] === 'postgresql' || s.attributes['db.system'] === 'postgresql'), storage.map((s) => s.name).join(', '))
  } else {
    assert.ok(storage.some((s) => s.name === 'sqlite write'), storage.map((s) => s.name).join(', '))
    const batch = spans.find((s) => s.name === 'sqlite batch commit' && s.traceId === traceId)
    assert.ok(batch !== undefined && descendsFrom(batch, request, spans))
  }

  // The refusal: a 429 span with the refusal's attributes and event.
  const refused = spans.find((s) => s.kind === SERVER && s.attributes['http.response.status_code'] === 429)!
  assert.equal(refused.attributes['petstore.access.refused'], true)
  assert.equal(refused.attributes['petstore.access.code'], 'rate_limited')
  assert.equal(refused.attributes['petstore.ratelimit.remaining.minute'], 0)
  assert.deepEqual(refused.events.map((e) => [e.name, e.attributes['petstore.access.code']]), [['petstore.access.refused', 'rate_limited']])

  // The request's log line names its trace; no span carries the key itself.
  const line = await server.logLine((l) => l.msg === 'request completed' && l.method === 'POST')
  assert.equal(line.traceId, traceId)
  assert.doesNotMatch(JSON.stringify(spans), /psk_/)
  assert.equal(await server.stop(), 0)
})

function descendsFrom (span: ReceivedSpan, ancestor: ReceivedSpan, spans: ReceivedSpan[]): boolean {
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  for (let s: ReceivedSpan | undefined = span; s !== undefined; s = byId.get(s.parentSpanId)) {
    if (s.parentSpanId === ancestor.spanId) return true
  }
  return false
}
