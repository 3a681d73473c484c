// Where generated code trusts the document (issue 21 part 3): a typed client or a validating
// proxy built from docs/openapi.json must not be stricter or looser than the server. Each test
// compares what the document says with what the running server does.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { manualClock } from '../../src/shared/clock.ts'
import { loadSampleData, loadSampleKeysAndOrders } from '../../src/sample-data.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'
import { openTestStores } from '../helpers/stores.ts'
import { exampleRequest, loadDoc, operations, type Doc, type Operation } from './requests.ts'
import { parseAnswer, rawExchange } from '../server/raw.ts'
import { startTestServer } from '../helpers/server.ts'

type Body = { required?: boolean; content: Record<string, unknown> }
type HeaderObject = { required?: boolean; $ref?: string }
const bodyOf = (op: Operation) => (op as Operation & { requestBody?: Body }).requestBody

/** An app on the sample data, with the sample admin key: the examples' ids exist there. */
async function sampleApp (t: Parameters<typeof buildTestApp>[0]): Promise<{ app: TestApp; admin: string }> {
  const stores = await openTestStores(t)
  await loadSampleData(stores)
  const keys = await loadSampleKeysAndOrders(stores, manualClock(T0))
  return { app: await buildTestApp(t, { stores }), admin: keys.find((k) => k.role === 'admin')!.key }
}

test('requestBody.required is what the server does: without a body a required one is 400 validation_failed, an optional one (the two rotations only) succeeds', async (t) => {
  // Catches: rotateApiKey's body documented as required (typed clients were forced to send one)
  // while the server takes none; and any body documented optional that the server requires.
  const doc = await loadDoc()
  const h = await buildTestApp(t)
  const optional: string[] = []
  for (const { path, method, op } of operations(doc)) {
    const body = bodyOf(op)
    if (body === undefined) continue
    const { payload: _payload, headers: { 'content-type': _type, ...headers }, ...request } = exampleRequest(doc, path, method, op)
    if (body.required === false) {
      optional.push(op.operationId)
      continue
    }
    const res = await h.call({ ...request, headers })
    assert.equal(res.statusCode, 400, `${op.operationId} without a body: ${res.body}`)
    assert.equal(res.json<{ code: string }>().code, 'validation_failed')
  }
  assert.deepEqual(optional, ['rotateApiKey', 'rotateMyApiKey', 'testWebhook'])

  const rotate = operations(doc).find((o) => o.op.operationId === 'rotateApiKey')!
  for (const payload of [undefined, '{}']) {
    // Each on fresh sample data: a key is rotated once.
    const { app, admin } = await sampleApp(t)
    const { payload: _example, headers: { 'content-type': _type, ...headers }, ...request } =
      exampleRequest(doc, rotate.path, rotate.method, rotate.op)
    const res = await app.call({
      ...request,
      key: admin,
      headers: payload === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      ...(payload !== undefined && { payload })
    })
    assert.equal(res.statusCode, 201, `rotateApiKey with body ${String(payload)}: ${res.body}`)
    const successor = res.json<{ id: number; replaces: number }>()
    const old = (await app.call({ method: 'GET', url: `/v1/admin/keys/${successor.replaces}`, key: admin }))
      .json<{ replacedBy: number; expiresAt: string }>()
    assert.deepEqual(old, { ...old, replacedBy: successor.id, expiresAt: new Date(T0 + 86_400_000).toISOString() }, 'rotated with the default grace period of a day')
  }
})

test('Error.requestId is required in the document, as every error the server sends carries it', async () => {
  // Catches: requestId was sent on every error but optional in the schema, so generated types
  // made it `string | undefined`. (The response gate of test/helpers/contract.ts checks every
  // error body of the suite against the schema, so a body without it now fails a test.)
  const doc = await loadDoc() as Doc & { components: { schemas: { Error: { required: string[] } } } }
  assert.deepEqual(doc.components.schemas.Error.required, ['code', 'message', 'status', 'requestId'])
})

test('perMinute ≤ perDay is in the key schemas, and createApiKey\'s 400 example is the server\'s refusal of perMinute > perDay', async (t) => {
  // Catches: a rule the server enforces that the document did not state.
  const doc = await loadDoc()
  const schemas = doc.components.schemas as Record<string, {
    description?: string
    properties?: Record<string, { description?: string }>
  }>
  assert.match(schemas.NewEnterpriseApiKey!.properties!.perMinute!.description!, /at most perDay/)
  assert.match(schemas.NewEnterpriseApiKey!.properties!.perDay!.description!, /at least perMinute/)
  assert.match(schemas.NewEnterpriseApiKey!.description!, /perMinute may not exceed perDay/)
  assert.match(schemas.ApiKeyPatch!.description!, /perMinute may not exceed perDay/)
  const refusal = doc.paths['/admin/keys']!.post!.responses['400']!.content!['application/json']!.example as { requestId: string }

  const h = await buildTestApp(t)
  const before = (await h.call({ method: 'GET', url: '/v1/admin/keys?limit=100' })).json<unknown[]>().length
  const res = await h.call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'customer', plan: 'enterprise', perMinute: 2_000, perDay: 1_000 } })

  assert.equal(res.statusCode, 400)
  assert.deepEqual(res.json(), { ...refusal, requestId: res.headers['request-id'] })
  assert.equal((await h.call({ method: 'GET', url: '/v1/admin/keys?limit=100' })).json<unknown[]>().length, before, 'no key was made')
})

test('every operation\'s 400 requires only the headers a 400 for malformed HTTP carries (like 408 and 431); a parsed request\'s 400 still has the rate-limit headers', { timeout: 10_000 }, async (t) => {
  // Catches: every 400 declared the rate-limit headers required, but Node answers malformed HTTP
  // before a request exists, with Request-Id and X-Content-Type-Options only.
  const doc = await loadDoc() as Doc & { components: { headers: Record<string, HeaderObject> } }
  const { port } = await startTestServer(t, {})
  const { text } = await rawExchange(port, 'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nNo colon here\r\n\r\n')
  const malformed = parseAnswer(text)
  assert.equal(malformed.status, 400)
  assert.equal(malformed.headers['x-ratelimit-limit'], undefined, 'no rate-limit headers: nothing was charged')

  const missing: string[] = []
  for (const { path, method, op } of operations(doc)) {
    const headers = (op.responses['400'] as { headers?: Record<string, HeaderObject> } | undefined)?.headers
    if (headers === undefined) continue
    for (const [name, header] of Object.entries(headers)) {
      const resolved = header.$ref === undefined ? header : doc.components.headers[header.$ref.split('/').pop()!]
      if (resolved?.required === true && malformed.headers[name.toLowerCase()] === undefined) {
        missing.push(`${method.toUpperCase()} ${path} 400: ${name}`)
      }
    }
  }
  assert.deepEqual(missing, [], 'headers documented as required on a 400 that a malformed-HTTP 400 does not send')

  const h = await buildTestApp(t)
  const parsed = await h.call({ method: 'GET', url: '/v1/pets?limit=0' })
  assert.equal(parsed.statusCode, 400)
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']) assert.ok(parsed.headers[name] !== undefined, name)
})
