// Every door answers (issue 52 item 3): for each operation of the served document, a table of
// malformed inputs (wrong JSON, wrong types, missing and unknown fields, huge values, control
// characters, in the path, the query, the headers and the body) gets an HTTP answer within a
// deadline, never a 5xx, and every 4xx is the error object. The rows are made from the document
// itself, so an operation added later is in the table without a line here.
//
// Guards: a request that never gets an answer and holds its connection (issue 48 finding 1), a
// value that reaches the database unrefused and fails there (PostgreSQL refuses U+0000 in text),
// a 4xx of another shape than the error object (a framework's default reply).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { loadSampleData } from '../../src/sample-data.ts'
import { buildTestApp } from '../helpers/app.ts'

/** How long a door may take to answer before it counts as a hang. */
const DEADLINE_MS = 5000

type Schema = {
  $ref?: string
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  examples?: unknown[]
  example?: unknown
}
type Examples = Record<string, { value: unknown }>
type Parameter = { name: string; in: 'path' | 'query' | 'header'; schema?: Schema; example?: unknown; examples?: Examples }
type Operation = {
  operationId: string
  parameters?: Array<Parameter | { $ref: string }>
  requestBody?: { content: Record<string, { schema: Schema; example?: unknown; examples?: Examples }> }
}
type Doc = {
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, Schema>; parameters?: Record<string, Parameter> }
}
const METHODS = ['get', 'post', 'put', 'patch', 'delete']

interface Row { name: string; request: InjectOptions }

/** A `#/components/...` reference resolved in the document. */
function resolve<T> (doc: Doc, value: T | { $ref: string }): T {
  if (typeof value !== 'object' || value === null || !('$ref' in value)) return value
  const path = value.$ref.replace(/^#\//, '').split('/')
  return path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], doc) as T
}

/** A valid-looking value of a parameter: its example, else 1 (every id of the API is an integer or takes one). */
function sample (parameter: Parameter): string {
  const example = parameter.example
    ?? Object.values(parameter.examples ?? {})[0]?.value
    ?? parameter.schema?.examples?.[0]
  return example === undefined ? '1' : String(example)
}

/** The body example of an operation, from its media type or its schema. */
function bodyExample (doc: Doc, operation: Operation): Record<string, unknown> {
  const media = operation.requestBody?.content['application/json']
  if (media === undefined) return {}
  const schema = resolve(doc, media.schema)
  const example = media.example
    ?? Object.values(media.examples ?? {})[0]?.value
    ?? schema.examples?.[0]
    ?? schema.example
  return typeof example === 'object' && example !== null && !Array.isArray(example) ? example as Record<string, unknown> : {}
}

const CONTROL = 'a\u0000b\u0007c\u001b[31md\u202ee'
const HUGE = 'x'.repeat(200_000)
const PATH_VALUES = ['abc', '1.5', '-1', '0', '99999999999999999999999', '1e400', 'Infinity', '%00', '%07', '%1b%5b31m',
  '%E2%80%AE', '%ZZ', 'x'.repeat(5000), '1%2F2', '..']
const QUERY_VALUES = ['', '%00', '%1b%5b31m', 'x'.repeat(5000), '1e400', 'Infinity', '-1', '1.5', '[]', '%ZZ', '0x10']

/**
 * The table: every operation of the document, each with its malformed inputs. `known` gives the
 * id to put in a path parameter (by name) when a row does not spoil it: one that exists.
 */
function doorRows (doc: Doc, known: Record<string, string>, prefix = '/v1'): Row[] {
  const rows: Row[] = []
  for (const [template, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (!METHODS.includes(method)) continue
      const parameters = (operation.parameters ?? []).map((p) => resolve<Parameter>(doc, p))
      const pathParams = parameters.filter((p) => p.in === 'path')
      const fill = (override: Record<string, string> = {}): string =>
        prefix + template.replace(/\{(\w+)\}/g, (_, name: string) =>
          override[name] ?? known[name] ?? encodeURIComponent(sample(pathParams.find((p) => p.name === name)!)))
      const url = fill()
      const METHOD = method.toUpperCase() as 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
      const name = (what: string): string => `${String(METHOD)} ${template} (${operation.operationId}): ${what}`
      const example = bodyExample(doc, operation)
      // The operation's own body beside a row that spoils something else, so only that is wrong.
      const body = operation.requestBody !== undefined ? { payload: example } : {}
      const json = (payload: string, what: string): Row => ({
        name: name(what),
        request: { method: METHOD, url, payload, headers: { 'content-type': 'application/json' } }
      })

      for (const parameter of pathParams) {
        for (const value of PATH_VALUES) {
          const request = { method: METHOD, url: fill({ [parameter.name]: value }), ...body }
          rows.push({ name: name(`path ${parameter.name}=${value.slice(0, 20)}`), request })
        }
      }
      for (const parameter of parameters.filter((p) => p.in === 'query')) {
        for (const value of QUERY_VALUES) {
          const request = { method: METHOD, url: `${url}?${parameter.name}=${value}` }
          rows.push({ name: name(`query ${parameter.name}=${value.slice(0, 20)}`), request })
        }
        rows.push({ name: name(`query ${parameter.name} twice`), request: { method: METHOD, url: `${url}?${parameter.name}=1&${parameter.name}=2` } })
      }
      rows.push({ name: name('unknown query parameter'), request: { method: METHOD, url: `${url}?unknownField=1` } })
      for (const parameter of parameters.filter((p) => p.in === 'header')) {
        for (const value of ['\u0007\u001b', 'x'.repeat(9000), '*, "a"', 'W/"', '"']) {
          const request = { method: METHOD, url, headers: { [parameter.name]: value }, ...body }
          rows.push({ name: name(`header ${parameter.name}=${JSON.stringify(value.slice(0, 10))}`), request })
        }
      }

      if (operation.requestBody === undefined) {
        rows.push(json('{"a":1}', 'a body it does not take'))
        continue
      }
      const schema = resolve(doc, operation.requestBody.content['application/json']?.schema ?? {})
      rows.push(json('{"a":', 'truncated JSON'))
      rows.push(json('{"a":1,}', 'trailing comma'))
      rows.push(json('\u0000', 'NUL as the body'))
      for (const body of ['[]', 'null', '"text"', '123', 'true', '{}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}']) {
        rows.push(json(body, `body ${body}`))
      }
      rows.push(json(JSON.stringify({ ...example, unknownField: 1 }), 'unknown field'))
      rows.push(json(`{"a":"${HUGE}"}`, 'a huge body'))
      rows.push({ name: name('text/plain body'), request: { method: METHOD, url, payload: JSON.stringify(example), headers: { 'content-type': 'text/plain' } } })
      rows.push({ name: name('no content type'), request: { method: METHOD, url, payload: JSON.stringify(example), headers: { 'content-type': '' } } })
      for (const field of Object.keys(schema.properties ?? {})) {
        for (const [what, value] of Object.entries({
          'an object': { a: 1 },
          'an array': [1],
          null: null,
          'a string': 'abc',
          'a number': 1.5,
          'a negative number': -1,
          'a boolean': true,
          'control characters': CONTROL,
          'a huge string': 'x'.repeat(20_000),
          'an empty string': ''
        })) {
          rows.push(json(JSON.stringify({ ...example, [field]: value }), `${field} as ${what}`))
        }
        rows.push(json(JSON.stringify({ ...example, [field]: 0 }).replace(/:0([,}])/, ':1e400$1'), `${field} as 1e400`))
        rows.push(json(JSON.stringify({ ...example, [field]: 0 }).replace(/:0([,}])/, ':99999999999999999999999$1'), `${field} beyond 2^53`))
        const { [field]: _left, ...without } = example
        rows.push(json(JSON.stringify(without), `without ${field}`))
      }
    }
  }
  return rows
}

/** What is wrong with an answer, or null: a 5xx, or a 4xx that is not the error object. */
function answerFault (response: { statusCode: number; body: string }): string | null {
  if (response.statusCode >= 500) return `${response.statusCode} ${response.body.slice(0, 200)}`
  if (response.statusCode < 400) return null
  let body: Record<string, unknown>
  try {
    body = JSON.parse(response.body) as Record<string, unknown>
  } catch {
    return `${response.statusCode} not JSON: ${response.body.slice(0, 200)}`
  }
  const ok = typeof body.code === 'string' && typeof body.message === 'string'
    && body.status === response.statusCode && typeof body.requestId === 'string'
  return ok ? null : `${response.statusCode} not the error object: ${response.body.slice(0, 200)}`
}

/** The answer, or a timeout after DEADLINE_MS. */
async function within<T> (promise: Promise<T>): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), DEADLINE_MS) })
  try { return await Promise.race([promise, deadline]) } finally { clearTimeout(timer) }
}

test('every operation of the served document answers each malformed input within 5 s, never a 5xx, every 4xx the error object', { timeout: 300_000 }, async (t) => {
  const { app, keys, stores, call } = await buildTestApp(t)
  const doc = app.swagger() as unknown as Doc
  // Id 1 of every resource exists, so that a well-formed id leads past "not found" to the writes
  // and the database, where an unrefused value would fail.
  assert.equal(await loadSampleData(stores), true)
  const order = await call({ method: 'POST', url: '/v1/store/orders', role: 'customer', payload: { petId: 1, quantity: 1 } })
  assert.equal(order.statusCode, 201, order.body)
  const createWebhook = doc.paths['/webhooks']?.post
  assert.ok(createWebhook !== undefined)
  const webhook = await call({ method: 'POST', url: '/v1/webhooks', payload: bodyExample(doc, createWebhook) })
  assert.equal(webhook.statusCode, 201, webhook.body)
  const events = JSON.parse((await call({ method: 'GET', url: '/v1/events?limit=1' })).body) as Array<{ id: string }>
  const rows = doorRows(doc, {
    webhookId: (JSON.parse(webhook.body) as { id: string }).id,
    ...(events[0] !== undefined && { eventId: events[0].id })
  })
  const operations = new Set(rows.map((row) => row.name.replace(/:.*/, '')))
  const documented = Object.values(doc.paths)
    .flatMap((methods) => Object.keys(methods).filter((method) => METHODS.includes(method)))
  assert.equal(operations.size, documented.length, 'a row for every operation')

  const faults: string[] = []
  // The admin key reaches every operation's validation; its quotas are never the answer here.
  for (const row of rows) {
    const headers = { 'x-api-key': keys.admin, ...(row.request.headers as Record<string, string> | undefined) }
    const answer = await within(app.inject({ ...row.request, headers }) as Promise<LightMyRequestResponse>)
    if (answer === 'timeout') {
      faults.push(`${row.name}: no answer within ${DEADLINE_MS} ms`)
      continue
    }
    const fault = answerFault(answer)
    if (fault !== null) faults.push(`${row.name}: ${fault}`)
  }
  assert.deepEqual(faults, [], `${faults.length} of ${rows.length} inputs`)
})

// ---------------------------------------------------------------------------------------------
// /mcp: one JSON-RPC message per POST (Streamable HTTP, MCP 2025-06-18).

/** The malformed messages of the table, each a body as sent. */
function mcpRows (): Array<{ name: string; body: string; contentType?: string }> {
  const message = (fields: Record<string, unknown>): string => JSON.stringify({ jsonrpc: '2.0', ...fields })
  const call = (name: unknown, args?: unknown): string =>
    message({ id: 7, method: 'tools/call', params: { name, ...(args !== undefined && { arguments: args }) } })
  return [
    { name: 'truncated JSON', body: '{"jsonrpc":"2.0","id":1,' },
    { name: 'an empty body', body: '' },
    { name: 'NUL as the body', body: '\u0000' },
    { name: 'null', body: 'null' },
    { name: 'a number', body: '1' },
    { name: 'a string', body: '"tools/list"' },
    { name: 'a batch', body: `[${message({ id: 1, method: 'ping' })}]` },
    { name: 'an empty batch', body: '[]' },
    { name: 'an empty object', body: '{}' },
    { name: 'jsonrpc 1.0', body: JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'ping' }) },
    { name: 'no jsonrpc member', body: JSON.stringify({ id: 1, method: 'ping' }) },
    { name: 'a method that is a number', body: message({ id: 1, method: 5 }) },
    { name: 'an unknown method', body: message({ id: 1, method: 'pets/feed' }) },
    { name: 'an id of null', body: message({ id: null, method: 'tools/list' }) },
    { name: 'an id of 1.5', body: message({ id: 1.5, method: 'tools/list' }) },
    { name: 'an id that is an object', body: message({ id: { a: 1 }, method: 'tools/list' }) },
    { name: 'an id that is an array', body: message({ id: [1], method: 'tools/list' }) },
    { name: 'an id that is true', body: message({ id: true, method: 'tools/list' }) },
    { name: 'a huge id', body: message({ id: 'x'.repeat(100_000), method: 'ping' }) },
    { name: 'params that are a number', body: message({ id: 1, method: 'tools/list', params: 5 }) },
    { name: 'params that are an array', body: message({ id: 1, method: 'tools/list', params: [1] }) },
    { name: 'params that are null', body: message({ id: 1, method: 'tools/list', params: null }) },
    { name: 'a reply-shaped message', body: message({ id: 1, result: {} }) },
    { name: 'an error reply', body: message({ id: 1, error: { code: -32601, message: 'no' } }) },
    { name: 'a reply without an id', body: message({ result: {} }) },
    { name: 'both method and result', body: message({ id: 1, method: 'ping', result: {} }) },
    { name: 'an unknown notification', body: message({ method: 'notifications/whatever', params: {} }) },
    { name: 'control characters in the method', body: message({ id: 1, method: CONTROL }) },
    { name: 'text/plain', body: message({ id: 1, method: 'ping' }), contentType: 'text/plain' },
    { name: 'a tool call without a name', body: message({ id: 7, method: 'tools/call', params: {} }) },
    { name: 'a tool name that is a number', body: call(5, {}) },
    { name: 'an unknown tool', body: call('feedPets', {}) },
    { name: 'a tool name with control characters', body: call(CONTROL, {}) },
    { name: 'getOrder without arguments', body: call('getOrder') },
    { name: 'getOrder with {}', body: call('getOrder', {}) },
    { name: 'arguments that are a number', body: call('getOrder', 5) },
    { name: 'arguments that are an array', body: call('getOrder', [1]) },
    { name: 'arguments that are null', body: call('getOrder', null) },
    { name: 'an unknown argument', body: call('listPets', { colour: 'red' }) },
    { name: 'an argument of the wrong type', body: call('getOrder', { orderId: 'abc' }) },
    { name: 'an id beyond 2^53', body: call('getOrder', { orderId: 0 }).replace('"orderId":0', '"orderId":99999999999999999999999') },
    { name: 'a fraction as an id', body: call('getOrder', { orderId: 1.5 }) },
    { name: 'an enum value not in the list', body: call('listPets', { status: 'hungry' }) },
    { name: 'a huge limit', body: call('listPets', { limit: 1e300 }) },
    { name: 'a cursor of control characters', body: call('listPets', { cursor: CONTROL }) },
    { name: 'a body that is a string', body: call('placeOrder', { body: 'x' }) },
    { name: 'a body without its fields', body: call('placeOrder', { body: {} }) },
    { name: 'a body with an unknown field', body: call('placeOrder', { body: { petId: 1, quantity: 1, colour: 'red' } }) },
    { name: 'a body with control characters', body: call('createPet', { body: { name: CONTROL, categoryId: 1 } }) },
    { name: 'a huge body value', body: call('createPet', { body: { name: 'x'.repeat(200_000), categoryId: 1 } }) },
    { name: 'an idempotencyKey of control characters', body: call('placeOrder', { body: { petId: 1, quantity: 1 }, idempotencyKey: CONTROL }) },
    { name: 'an ifMatch that is an object', body: call('updatePet', { petId: 1, body: { name: 'Rex' }, ifMatch: { a: 1 } }) }
  ]
}

/** What is wrong with an answer of /mcp, or null: a 5xx, or a 4xx that is no error object of either kind. */
function mcpFault (response: { statusCode: number; body: string }): string | null {
  if (response.statusCode >= 500) return `${response.statusCode} ${response.body.slice(0, 200)}`
  if (response.statusCode < 400) return null
  let body: { jsonrpc?: unknown; error?: { code?: unknown; message?: unknown } }
  try {
    body = JSON.parse(response.body) as typeof body
  } catch {
    return `${response.statusCode} not JSON: ${response.body.slice(0, 200)}`
  }
  // A refusal before the message is read (no key: 401) is the API's error object; a malformed
  // message is a JSON-RPC error.
  const jsonRpc = body.jsonrpc === '2.0' && typeof body.error?.code === 'number' && typeof body.error.message === 'string'
  return jsonRpc || answerFault(response) === null ? null : `${response.statusCode} no error object: ${response.body.slice(0, 200)}`
}

test('every malformed message to /mcp is answered within 5 s, never a 5xx, every 4xx an error object', { timeout: 120_000 }, async (t) => {
  const { app, stores, keys } = await buildTestApp(t)
  assert.equal(await loadSampleData(stores), true)
  // The staff key may call every tool of the table (createPet, updatePet and the customer's).
  const headers = { 'x-api-key': keys.staff, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const opened = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers,
    payload: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'doors', version: '1' } }
    })
  })
  assert.equal(opened.statusCode, 200, opened.body)
  const session = opened.headers['mcp-session-id']
  const inSession = { ...headers, ...(typeof session === 'string' && { 'mcp-session-id': session }) }

  const rows = mcpRows()
  // All at once: a message that is never answered costs the deadline once, not once per row.
  const answers = await Promise.all(rows.map(async (row) => {
    const sent = { ...inSession, ...(row.contentType !== undefined && { 'content-type': row.contentType }) }
    const answer = app.inject({ method: 'POST', url: '/mcp', headers: sent, payload: row.body })
    return await within(answer as Promise<LightMyRequestResponse>)
  }))
  const faults = rows.flatMap((row, i) => {
    const answer = answers[i]!
    if (answer === 'timeout') return [`${row.name}: no answer within ${DEADLINE_MS} ms`]
    const fault = mcpFault(answer)
    return fault === null ? [] : [`${row.name}: ${fault}`]
  })
  assert.deepEqual(faults, [], `${faults.length} of ${rows.length} messages`)
})
