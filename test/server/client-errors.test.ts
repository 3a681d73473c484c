// Node answers some requests itself, before Fastify sees them: malformed HTTP (400), oversized
// headers (431), timeouts (408, in slow-clients.test.ts). Those answers carry the API's error
// object with a code from the catalogue, like every other answer, and close the connection.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ERROR_CATALOGUE } from '../../src/errors.ts'
import { parseAnswer, rawExchange } from './raw.ts'
import { startTestServer } from '../helpers/server.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

test('malformed HTTP gets 400 validation_failed with the error object, and the connection is closed', { timeout: 10_000 }, async (t) => {
  const { port, keys } = await startTestServer(t, {})
  const malformed = [
    // Request smuggling: both framings at once.
    'POST /v1/store/orders HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    // A header line without a colon.
    'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nNo colon here\r\n\r\n',
    // Not HTTP at all.
    'HELLO\r\n\r\n',
    // A bad chunk size, in a body the server reads (with a valid key; without one the 401 is
    // answered before the body is read, and that answer stands).
    `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${keys.staff}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`
  ]
  for (const request of malformed) {
    const { text } = await rawExchange(port, request)
    const answer = parseAnswer(text)
    assert.equal(answer.status, 400, request)
    assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/)
    assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(answer.headers['x-content-type-options'], 'nosniff')
    assert.equal(answer.headers.connection, 'close')
    const requestId = answer.headers['request-id'] ?? ''
    assert.match(requestId, UUID)
    assert.deepEqual(answer.body, { code: 'validation_failed', message: 'the request is not well-formed HTTP/1.1', status: 400, requestId }, request)
  }
})

test('an HTTP/1.1 request without Host gets 400 validation_failed with the error object and nosniff, not Node\'s empty chunked 400', { timeout: 10_000 }, async (t) => {
  // Fault caught: Node answered it itself, with an empty chunked body and none of our headers.
  const { port, keys } = await startTestServer(t, {})
  for (const request of ['GET /healthz HTTP/1.1\r\n\r\n', `GET /v1/pets HTTP/1.1\r\nX-API-Key: ${keys.customer}\r\n\r\n`]) {
    const { text } = await rawExchange(port, request)
    assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/)
    const answer = parseAnswer(text)
    assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(answer.headers['x-content-type-options'], 'nosniff')
    assert.equal(answer.headers.connection, 'close')
    assert.equal(answer.headers['transfer-encoding'], undefined)
    const requestId = answer.headers['request-id'] ?? ''
    assert.match(requestId, UUID)
    assert.deepEqual(answer.body, { code: 'validation_failed', message: 'an HTTP/1.1 request must carry a Host header', status: 400, requestId }, request)
  }
  // HTTP/1.0 has no Host requirement: served as usual.
  const { text } = await rawExchange(port, 'GET /healthz HTTP/1.0\r\n\r\n')
  assert.equal(parseAnswer(text).status, 200)
})

test('headers over 16 KiB get 431 headers_too_large with the error object', { timeout: 10_000 }, async (t) => {
  const { port } = await startTestServer(t, {})
  for (const request of [
    `GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`,
    // The request line counts too.
    `GET /v1/pets?name=${'a'.repeat(17 * 1024)} HTTP/1.1\r\nHost: localhost\r\n\r\n`
  ]) {
    const { text } = await rawExchange(port, request)
    const answer = parseAnswer(text)
    assert.match(text, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/)
    assert.equal(answer.headers.connection, 'close')
    assert.deepEqual(answer.body, { code: 'headers_too_large', message: 'the request line and headers are larger than 16 KiB', status: 431, requestId: answer.headers['request-id'] })
  }
  // Just under the limit is served as usual (401: no key), not refused at the connection.
  const { text } = await rawExchange(port, `GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Big: ${'a'.repeat(15 * 1024)}\r\n\r\n`)
  assert.match(text, /^HTTP\/1\.1 401 Unauthorized\r\n/)
})

test('the codes of the connection-level answers are in the error catalogue with their statuses', () => {
  assert.equal(ERROR_CATALOGUE.request_timeout.status, 408)
  assert.equal(ERROR_CATALOGUE.headers_too_large.status, 431)
  assert.equal(ERROR_CATALOGUE.validation_failed.status, 400)
})
