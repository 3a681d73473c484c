// The exporter's redaction (src/telemetry/redacted-export.ts) on one span, with the logs' own
// functions (src/http/redact.ts): every text a span holds (its name, status message, attributes,
// events and links) loses anything shaped like a key, plain or percent-escaped, and the URL
// attributes lose secret-looking query values too; what is not text, and the span's identity,
// pass unchanged. Fault caught: a field of the span left out of the copy.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { redactText, redactUrl } from '../../src/http/redact.ts'
import { redactedSpan, redactingExporter, type SpanExporter } from '../../src/telemetry/redacted-export.ts'

type ReadableSpan = Parameters<SpanExporter['export']>[0][number]

const KEY = 'psk_4Fh8sKq2LmN7pQ9rT1vW3xY5zA6bC8dE0fG2hJ4kM6nP8qR0s'
const context = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 }

function span (): ReadableSpan {
  return {
    name: `GET /v1/pets/${KEY}`,
    kind: 1,
    spanContext: () => context,
    startTime: [1, 0],
    endTime: [2, 0],
    status: { code: 2, message: `unknown field "${KEY}"` },
    attributes: {
      'url.path': '/v1/pets/%70sk_4Fh8sKq2LmN7pQ9rT1vW3xY5zA6bC8dE0fG2',
      'url.query': `api_key=${KEY}&limit=5&token=s3cret`,
      'url.full': `http://127.0.0.1/v1/pets?access_token=abc&name=${KEY.toUpperCase()}`,
      'http.target': `/v1/pets?key=${KEY}`,
      'exception.message': `bad ${KEY}`,
      'http.response.status_code': 400,
      'petstore.access.refused': true,
      'some.list': ['plain', `x${KEY}`]
    },
    links: [{ context, attributes: { why: `psk%5F${KEY.slice(4)}` } }],
    events: [{ name: 'exception', time: [1, 5], attributes: { 'exception.stacktrace': `Error: ${KEY}\n    at x` } }],
    duration: [1, 0],
    ended: true,
    resource: {} as ReadableSpan['resource'],
    instrumentationScope: { name: 'test' },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0
  }
}

test('a span leaves the exporter with every key redacted like the logs: name, status, attributes, events, links', () => {
  const original = span()
  const out = redactedSpan(original, { url: redactUrl, text: redactText })
  assert.equal(out.name, 'GET /v1/pets/[redacted]')
  assert.deepEqual(out.status, { code: 2, message: 'unknown field "[redacted]"' })
  assert.deepEqual(out.attributes, {
    'url.path': '/v1/pets/[redacted]',
    'url.query': 'api_key=[redacted]&limit=5&token=[redacted]',
    'url.full': 'http://127.0.0.1/v1/pets?access_token=[redacted]&name=[redacted]',
    'http.target': '/v1/pets?key=[redacted]',
    'exception.message': 'bad [redacted]',
    'http.response.status_code': 400,
    'petstore.access.refused': true,
    'some.list': ['plain', 'x[redacted]']
  })
  assert.deepEqual(out.events, [{ name: 'exception', time: [1, 5], attributes: { 'exception.stacktrace': 'Error: [redacted]\n    at x' } }])
  assert.deepEqual(out.links, [{ context, attributes: { why: '[redacted]' } }])
  assert.equal(out.spanContext(), context)
  const { name: _n, status: _s, attributes: _a, events: _e, links: _l, spanContext: _c, ...rest } = out
  const { name: _n2, status: _s2, attributes: _a2, events: _e2, links: _l2, spanContext: _c2, ...same } = original
  assert.deepEqual(rest, same, 'every other field as it was')
  assert.doesNotMatch(JSON.stringify(out), /psk_|%70sk|psk%5F|s3cret/i)
  assert.equal(original.attributes['exception.message'], `bad ${KEY}`, 'the span itself is not changed')
})

test('the exporter hands on the redacted copies, and flushes and shuts down the one it wraps', async () => {
  const exported: ReadableSpan[][] = []
  const calls: string[] = []
  const inner: SpanExporter = {
    export: (spans, done) => { exported.push(spans); done({ code: 0 }) },
    shutdown: async () => { calls.push('shutdown') },
    forceFlush: async () => { calls.push('flush') }
  }
  const exporter = redactingExporter(inner, { url: redactUrl, text: redactText })
  const results: unknown[] = []
  exporter.export([span()], (result) => results.push(result))
  assert.deepEqual(results, [{ code: 0 }])
  assert.equal(exported[0]![0]!.name, 'GET /v1/pets/[redacted]')
  await exporter.forceFlush!()
  await exporter.shutdown()
  assert.deepEqual(calls, ['flush', 'shutdown'])
})
