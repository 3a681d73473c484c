// The error envelope on every kind of failure, and what never leaks.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'
import { AppError, ERROR_CATALOGUE, orderLimitReached, ServiceUnavailableError } from '../../src/errors.ts'

test('an unknown path under /v1 is 404 not_found with the error object and request id', async (t) => {
  const { call } = await buildTestApp(t)
  const res = await call({ method: 'GET', url: '/v1/nope' })
  assert.equal(res.statusCode, 404)
  const body = res.json()
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'requestId', 'status'])
  assert.equal(body.code, 'not_found')
  assert.equal(body.status, 404)
  assert.equal(body.requestId, res.headers['request-id'])
})

test('a known path with another method is 405 method_not_allowed with an Allow header', async (t) => {
  const { call } = await buildTestApp(t)
  const res = await call({ method: 'POST', url: '/v1/pets/1' })
  assert.equal(res.statusCode, 405)
  assert.equal(res.json().code, 'method_not_allowed')
  assert.equal(res.headers.allow, 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS')
  const collection = await call({ method: 'DELETE', url: '/v1/pets' })
  assert.equal(collection.statusCode, 405)
  assert.equal(collection.headers.allow, 'GET, HEAD, POST, OPTIONS')
})

test('a body over 64 KiB is 413 payload_too_large', async (t) => {
  const { call } = await buildTestApp(t)
  const res = await call({
    method: 'POST',
    url: '/v1/categories',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ name: 'A', description: 'x'.repeat(70_000) })
  })
  assert.equal(res.statusCode, 413)
  assert.equal(res.json().code, 'payload_too_large')
})

test('a body that is not JSON is 415 unsupported_media_type', async (t) => {
  const { call } = await buildTestApp(t)
  const res = await call({ method: 'POST', url: '/v1/categories', headers: { 'content-type': 'text/plain' }, payload: 'name=Dogs' })
  assert.equal(res.statusCode, 415)
  assert.equal(res.json().code, 'unsupported_media_type')
})

test('malformed JSON and an empty body are 400 validation_failed', async (t) => {
  const { call } = await buildTestApp(t)
  for (const payload of ['{"name":', '', 'nul']) {
    const res = await call({ method: 'POST', url: '/v1/categories', headers: { 'content-type': 'application/json' }, payload })
    assert.equal(res.statusCode, 400, JSON.stringify(payload))
    assert.equal(res.json().code, 'validation_failed')
  }
})

test('an unexpected failure is 500 internal_error with no stack, SQL or internal message', async (t) => {
  const { call, stores } = await buildTestApp(t)
  stores.categories.getCategory = async () => { throw new Error('SQLITE_CORRUPT: SELECT secret FROM categories') }
  const res = await call({ method: 'GET', url: '/v1/categories/1' })
  assert.equal(res.statusCode, 500)
  const body = res.json()
  assert.equal(body.code, 'internal_error')
  assert.doesNotMatch(res.body, /SQLITE|SELECT|secret|at .*\.ts/)
})

test('a caller-supplied Request-Id is echoed when harmless, replaced otherwise', async (t) => {
  const { call } = await buildTestApp(t)
  const echoed = await call({ method: 'GET', url: '/v1/pets', headers: { 'request-id': 'trace-123' } })
  assert.equal(echoed.headers['request-id'], 'trace-123')
  const replaced = await call({ method: 'GET', url: '/v1/pets', headers: { 'request-id': 'bad id\u0007' } })
  assert.match(replaced.headers['request-id'] as string, /^[0-9a-f-]{36}$/)
})

test('every catalogue code is documented in the OpenAPI description', async (t) => {
  const { app } = await buildTestApp(t)
  const doc = app.swagger() as { info: { description: string } }
  for (const code of Object.keys(ERROR_CATALOGUE)) assert.match(doc.info.description, new RegExp(`\`${code}\``))
})

test('a malformed URL (bad percent-encoding, over-long segment) is 400 validation_failed with the rate-limit headers', async (t) => {
  const { call } = await buildTestApp(t)
  for (const url of ['/v1/categories/%E0%A4%A', '/v1/categories/' + '9'.repeat(300)]) {
    const res = await call({ method: 'GET', url })
    assert.equal(res.statusCode, 400, url)
    assert.equal(res.json().code, 'validation_failed')
    assert.equal(res.json().requestId, res.headers['request-id'])
    assert.ok(res.headers['x-ratelimit-remaining'] !== undefined)
  }
})

test('a 63 KB body of unknown fields is 400 validation_failed with at most 20 details and detailsTotal, smaller than the request', async (t) => {
  const { call } = await buildTestApp(t)
  const body: Record<string, number> = { name: 1 }
  for (let i = 0; body && JSON.stringify(body).length < 63_000; i++) body[`field${i}`] = i
  const payload = JSON.stringify(body)
  const res = await call({ method: 'POST', url: '/v1/categories', headers: { 'content-type': 'application/json' }, payload })
  assert.equal(res.statusCode, 400)
  const answer = res.json()
  assert.equal(answer.code, 'validation_failed')
  assert.equal(answer.details.length, 20)
  assert.equal(answer.detailsTotal, Object.keys(body).length) // every unknown field, and name's type
  assert.ok(res.body.length < 4_000, `the answer is ${res.body.length} bytes for a ${payload.length} byte request`)
})

test('a 56 KB field name is cut to 120 characters in the message and the details', async (t) => {
  const { call } = await buildTestApp(t)
  const res = await call({
    method: 'POST',
    url: '/v1/categories',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ name: 'Dogs', ['🐶'.repeat(14_000)]: 1 })
  })
  assert.equal(res.statusCode, 400)
  const answer = res.json()
  assert.equal(answer.details.length, 1)
  assert.ok(answer.details[0].message.length <= 120)
  assert.ok(answer.details[0].message.endsWith('…'))
  assert.ok(!/[\uD800-\uDBFF]…/.test(answer.details[0].message), 'no half surrogate pair before the ellipsis')
  assert.ok(res.body.length < 1_000, `the answer is ${res.body.length} bytes`)
})

test('a JSON body that is not an object is 400 validation_failed on every operation that takes a body', async (t) => {
  const { app, call } = await buildTestApp(t)
  const document = app.swagger() as { paths: Record<string, Record<string, { requestBody?: unknown }>> }
  let checked = 0
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (operation.requestBody === undefined) continue
      for (const payload of ['"text"', '7', 'null', '[]', 'true']) {
        const url = '/v1' + path.replace(/\{[^}]+\}/g, '1')
        const res = await call({ method: method.toUpperCase() as 'POST', url, headers: { 'content-type': 'application/json' }, payload })
        assert.equal(res.statusCode, 400, `${method.toUpperCase()} ${url} with ${payload}: ${res.body}`)
        assert.equal(res.json().code, 'validation_failed')
        checked++
      }
    }
  }
  assert.ok(checked >= 50, `only ${checked} requests were checked`)
})

// A refusal is an answer, not a fault: capturing its stack was 12% of the CPU of an order refused
// at the owner's cap (docs/performance.md). A 5xx keeps its stack for the log line.
test('a 4xx AppError is built without a stack trace; a 5xx keeps its frames; the limit is restored', () => {
  const limit = Error.stackTraceLimit
  const refused = orderLimitReached('the key holds 1000 open orders, its cap')
  assert.equal(refused.stack, 'AppError: the key holds 1000 open orders, its cap')
  assert.equal(new AppError('not_found', 'pet 7 not found').stack, 'AppError: pet 7 not found')
  assert.equal(Error.stackTraceLimit, limit)
  const unavailable = new ServiceUnavailableError('the database is unreachable')
  assert.match(unavailable.stack ?? '', /\n\s+at .*errors\.http\.test\.ts/)
  assert.equal(unavailable.status, 503)
  assert.equal(Error.stackTraceLimit, limit)
})

test('a body of one of several shapes is told in the shape the client meant: the replay\'s {since, until?} or {eventIds}', async (t) => {
  const { call } = await buildTestApp(t)
  const replay = async (body: unknown) => {
    const res = await call({ method: 'POST', url: '/v1/webhooks/wh_000000000000000000000000/replay', role: 'customer', payload: body as object })
    assert.equal(res.statusCode, 400, JSON.stringify(body))
    const answer = res.json<{ code: string; message: string; details: { path: string; message: string }[] }>()
    assert.equal(answer.code, 'validation_failed')
    return answer
  }
  const either = 'must have either "since" (optionally "until") or "eventIds"'
  // A field of no shape: which fields each shape takes, and the unknown field, each once.
  const guessed = await replay({ eventId: 'evt_01a229e4a2fa94968ba32e9ef7d474db' })
  assert.equal(guessed.message, `invalid body: / ${either}`)
  assert.deepEqual(guessed.details, [{ path: '/', message: either }, { path: '/', message: 'has an unknown field "eventId"' }])
  assert.deepEqual((await replay({})).details, [{ path: '/', message: either }])
  // The list shape with a bad id: that id, not the time range's missing "since".
  const badId = await replay({ eventIds: ['evt_1'] })
  assert.deepEqual(badId.details, [{ path: '/eventIds/0', message: 'must match pattern "^evt_[0-9a-f]{32}$"' }])
  // The time range with a bad time and an extra field: both, in that shape's words only.
  const badSince = await replay({ since: 'yesterday', until: '2026-11-30T00:00:00Z', extra: 1 })
  assert.deepEqual(badSince.details.map((d) => d.message).sort(), ['has an unknown field "extra"', 'must match format "date-time"'])
  // Both shapes at once: the choice is told.
  assert.equal((await replay({ since: '2026-11-29T00:00:00Z', eventIds: ['evt_01a229e4a2fa94968ba32e9ef7d474db'] })).details[0]!.message, either)
})
