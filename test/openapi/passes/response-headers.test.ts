// addResponseHeaders (src/openapi/passes/response-headers.ts): every header the pipeline sends
// is on every response it is sent with, as a $ref to a shared header.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { addResponseHeaders } from '../../../src/openapi/passes/response-headers.ts'
import type { OpenApiDocument, Operation } from '../../../src/openapi/types.ts'

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` })
const EVERY = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit', 'RateLimit-Policy', 'Request-Id', 'X-Content-Type-Options']
const every = () => Object.fromEntries(EVERY.map((name) => [name, ref(name)]))

/** The headers of each response of the one operation of a document made of it. */
function headersOf (path: string, operation: Operation): Record<string, unknown> {
  const doc: OpenApiDocument = { paths: { [path]: { get: operation } }, components: {} }
  addResponseHeaders(doc)
  return Object.fromEntries(Object.entries(doc.paths[path]!.get!.responses)
    .map(([status, response]) => [status, response.headers]))
}

test('the shared headers are components, each required, and nothing else is', () => {
  const doc: OpenApiDocument = { paths: {}, components: {} }
  addResponseHeaders(doc)
  const headers = doc.components.headers as Record<string, { required: boolean; description: string }>
  assert.deepEqual(Object.keys(headers).sort(), [...EVERY, 'Deprecation', 'Sunset', 'Warning', 'Link-Deprecation', 'Retry-After', 'Cache-Control', 'WWW-Authenticate'].sort())
  for (const [name, header] of Object.entries(headers)) {
    assert.equal(header.required, true, name)
    assert.ok(header.description.length > 0, name)
  }
})

test('a success gets the rate-limit headers, Request-Id and X-Content-Type-Options, before its own', () => {
  const headers = headersOf('/pets/{petId}', { responses: { 200: { description: 'ok', headers: { etag: { schema: { type: 'string' } } } } } })
  assert.deepEqual(headers['200'], { ...every(), ETag: { schema: { type: 'string' }, required: true } })
  assert.deepEqual(Object.keys(headers['200']!), [...EVERY, 'ETag'])
})

test('a route\'s own headers are spelled as sent and required, except Link and its own Retry-After', () => {
  const headers = headersOf('/pets', {
    responses: {
      200: {
        description: 'ok',
        headers: {
          link: { schema: { type: 'string' } },
          location: { schema: { type: 'string' } },
          'retry-after': { schema: { type: 'integer' } },
          'X-Other': { schema: { type: 'string' } }
        }
      }
    }
  })
  assert.deepEqual(headers['200'], {
    ...every(),
    Link: { schema: { type: 'string' } },
    Location: { schema: { type: 'string' }, required: true },
    'Retry-After': { schema: { type: 'integer' } },
    'X-Other': { schema: { type: 'string' }, required: true }
  })
})

test('401 gets WWW-Authenticate, 429 and 503 get Retry-After, and /admin paths Cache-Control', () => {
  const headers = headersOf('/admin/keys', { responses: { 401: { description: '' }, 429: { description: '' }, 503: { description: '' } } })
  const admin = { ...every(), 'Cache-Control': ref('Cache-Control') }
  assert.deepEqual(headers, {
    401: { ...admin, 'WWW-Authenticate': ref('WWW-Authenticate') },
    429: { ...admin, 'Retry-After': ref('Retry-After') },
    503: { ...admin, 'Retry-After': ref('Retry-After') }
  })
  assert.deepEqual(headersOf('/pets', { responses: { 404: { description: '' } } }), { 404: every() }, 'no Cache-Control outside /admin')
})

test('every response of a deprecated operation gets Deprecation, Sunset, Warning and Link (the Link-Deprecation header)', () => {
  const headers = headersOf('/pets/{petId}', { deprecated: true, responses: { 200: { description: '' }, 410: { description: '' } } })
  const deprecation = { Deprecation: ref('Deprecation'), Sunset: ref('Sunset'), Warning: ref('Warning'), Link: ref('Link-Deprecation') }
  assert.deepEqual(headers, { 200: { ...every(), ...deprecation }, 410: { ...every(), ...deprecation } })
})

test('408 and 431, answered by Node before a request exists, carry only Request-Id and X-Content-Type-Options', () => {
  const headers = headersOf('/pets', {
    deprecated: true,
    responses: { 408: { description: '', headers: { etag: {} } }, 431: { description: '' } }
  })
  const connection = { 'Request-Id': ref('Request-Id'), 'X-Content-Type-Options': ref('X-Content-Type-Options') }
  assert.deepEqual(headers, { 408: connection, 431: connection })
})

test('on a 400 every header but Request-Id and X-Content-Type-Options is not required and says it is absent for malformed HTTP', () => {
  const doc: OpenApiDocument = { paths: { '/pets': { post: { responses: { 400: { description: '' } } } } }, components: {} }
  addResponseHeaders(doc)
  const shared = doc.components.headers as Record<string, { description: string; schema: unknown }>
  const headers = doc.paths['/pets']!.post!.responses['400']!.headers!
  assert.deepEqual(Object.keys(headers), EVERY)
  assert.deepEqual(headers['Request-Id'], ref('Request-Id'))
  assert.deepEqual(headers['X-Content-Type-Options'], ref('X-Content-Type-Options'))
  assert.deepEqual(headers['X-RateLimit-Limit'], {
    description: `${shared['X-RateLimit-Limit']!.description} Absent on a 400 for malformed HTTP, which Node answers before a request exists (like 408 and 431).`,
    schema: shared['X-RateLimit-Limit']!.schema,
    required: false
  })
  assert.equal((shared['X-RateLimit-Limit'] as unknown as { required: boolean }).required, true, 'the shared header stays required')
})
