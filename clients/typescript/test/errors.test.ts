// How the client turns a non-2xx answer into a PetstoreError (src/errors.ts), one behaviour per
// test: each pins a fault that mutation testing showed the end-to-end tests would let through.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PetstoreError, errorOf, retryAfterSeconds } from '../src/errors.ts'

const NOW = Date.parse('2026-11-24T00:00:00Z')

test('retryAfterSeconds: absent, empty or blank is null; whole seconds, spaces around them allowed, are read as they are', () => {
  assert.equal(retryAfterSeconds(null, NOW), null)
  assert.equal(retryAfterSeconds('', NOW), null)
  assert.equal(retryAfterSeconds('   ', NOW), null)
  assert.equal(retryAfterSeconds('120', NOW), 120)
  assert.equal(retryAfterSeconds('  0  ', NOW), 0)
})

test('retryAfterSeconds: an HTTP-date is the seconds from now to it, rounded up, never negative; garbage is null', () => {
  assert.equal(retryAfterSeconds('Tue, 24 Nov 2026 00:01:00 GMT', NOW), 60)
  assert.equal(retryAfterSeconds('Tue, 24 Nov 2026 00:01:00 GMT', NOW + 500), 60, '59.5 s rounds up to 60')
  assert.equal(retryAfterSeconds('Mon, 23 Nov 2026 00:00:00 GMT', NOW), 0, 'a date in the past: no wait')
  assert.equal(retryAfterSeconds('later', NOW), null)
  assert.equal(retryAfterSeconds('12 s', NOW), null, 'not whole seconds, not a date')
})

test('retryAfterSeconds defaults now to the real clock', () => {
  const inAMinute = new Date(Date.now() + 60_000).toUTCString()
  const seconds = retryAfterSeconds(inAMinute)
  assert.ok(seconds !== null && seconds >= 58 && seconds <= 60, String(seconds))
})

function response (status: number, headers: Record<string, string> = {}): Response {
  return new Response(null, { status, headers })
}

test('errorOf of the API\'s error object: status, code, message, the body\'s requestId over the header, Retry-After in seconds', () => {
  const error = errorOf(response(429, { 'request-id': 'from-header', 'retry-after': '30' }), JSON.stringify({ code: 'rate_limited', message: 'slow down', requestId: 'from-body' }))
  assert.ok(error instanceof PetstoreError)
  assert.ok(error instanceof Error)
  assert.equal(error.name, 'PetstoreError')
  assert.deepEqual(
    {
      status: error.status,
      code: error.code,
      message: error.message,
      requestId: error.requestId,
      retryAfter: error.retryAfter,
      details: error.details
    },
    { status: 429, code: 'rate_limited', message: 'slow down', requestId: 'from-body', retryAfter: 30, details: undefined }
  )
  assert.equal('details' in error && error.details !== undefined, false, 'only validation_failed carries details')
})

test('errorOf: a body without message or requestId falls back to "HTTP status" and the Request-Id header; no Retry-After is null', () => {
  const error = errorOf(response(404, { 'request-id': 'rid-1' }), JSON.stringify({ code: 'not_found' }))
  assert.deepEqual(
    { code: error.code, message: error.message, requestId: error.requestId, retryAfter: error.retryAfter },
    { code: 'not_found', message: 'HTTP 404', requestId: 'rid-1', retryAfter: null }
  )
  assert.equal(errorOf(response(404), JSON.stringify({ code: 'not_found' })).requestId, null)
})

test('errorOf: validation_failed carries its details, an empty list when the body has none', () => {
  const details = [{ field: 'name', message: 'must not be empty' }]
  assert.deepEqual(errorOf(response(400), JSON.stringify({ code: 'validation_failed', message: 'bad', details })).details, details)
  assert.deepEqual(errorOf(response(400), JSON.stringify({ code: 'validation_failed', message: 'bad' })).details, [])
})

test('errorOf: a body that is not the error object (HTML, JSON null, a number, no string code) is unexpected_response, with the headers\' requestId and Retry-After', () => {
  for (const text of ['<html>bad gateway</html>', 'null', '42', '"text"', '{"code":7}', '{"message":"no code"}', '']) {
    const error = errorOf(response(502, { 'request-id': 'rid-2', 'retry-after': '5' }), text)
    assert.deepEqual(
      {
        status: error.status,
        code: error.code,
        message: error.message,
        requestId: error.requestId,
        retryAfter: error.retryAfter,
        details: error.details
      },
      { status: 502, code: 'unexpected_response', message: 'HTTP 502 without the API\'s error object', requestId: 'rid-2', retryAfter: 5, details: undefined },
      text
    )
  }
})

test('retryAfterSeconds: spaces before and after the seconds are allowed, anything else around them is not (the digits test is anchored)', () => {
  assert.equal(retryAfterSeconds(' 120 ', NOW), 120)
  assert.equal(retryAfterSeconds('120 ', NOW), 120)
  assert.equal(retryAfterSeconds(' 120', NOW), 120)
  assert.equal(retryAfterSeconds('a5', NOW), null)
})
