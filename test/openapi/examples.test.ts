// Examples (docs/product.md section 9): every parameter, request body and response body of the
// document has one, each is valid against its schema, and together they work against the
// sample data of `serve --sample-data`: walking every operation in document order with its
// examples (what a test generator such as Portman does) succeeds, operation after operation.
//
// Examples live next to the schemas: `examples: [...]` on the TypeBox schema of the parameter,
// body or response (src/<resource>/<resource>.schema.ts), or `example` for a single one.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Ajv } from 'ajv'
import { manualClock } from '../../src/shared/clock.ts'
import { loadSampleData, loadSampleKeysAndOrders } from '../../src/sample-data.ts'
import { addFormats } from '../helpers/ajv.ts'
import { buildTestApp, T0 } from '../helpers/app.ts'
import { openTestStores } from '../helpers/stores.ts'
import { exampleOf, exampleRequest, loadDoc, operations, type Doc, type Schema } from './requests.ts'

function validatorFor (doc: Doc): (schema: Schema, value: unknown) => string | null {
  const ajv = new Ajv({ strict: false, allErrors: true })
  addFormats(ajv)
  ajv.addSchema({ components: doc.components }, 'doc')
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite)
    if (node === null || typeof node !== 'object') return node
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? 'doc' + v : rewrite(v)]))
  }
  const compiled = new Map<string, ReturnType<Ajv['compile']>>()
  return (schema, value) => {
    const key = JSON.stringify(schema)
    let validate = compiled.get(key)
    if (validate === undefined) {
      validate = ajv.compile(rewrite(schema) as object)
      compiled.set(key, validate)
    }
    return validate(value) ? null : ajv.errorsText(validate.errors)
  }
}

test('every parameter, request body and response body of the document has an example, valid against its schema', async () => {
  const doc = await loadDoc()
  const valid = validatorFor(doc)
  const problems: string[] = []
  for (const { path, method, op } of operations(doc)) {
    const where = `${method.toUpperCase()} ${path} (${op.operationId})`
    for (const parameter of op.parameters ?? []) {
      const { found, value } = exampleOf(doc, parameter)
      if (!found) {
        problems.push(`${where}: ${parameter.in} parameter "${parameter.name}" has no example: add \`examples: [...]\` to its TypeBox schema (the route's ${parameter.in === 'path' ? 'params' : parameter.in === 'query' ? 'querystring' : 'headers'} schema)`)
        continue
      }
      const error = valid(parameter.schema, value)
      if (error !== null) problems.push(`${where}: the example of ${parameter.in} parameter "${parameter.name}" (${JSON.stringify(value)}) does not match its schema: ${error}`)
    }
    for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
      const { found, value } = exampleOf(doc, media)
      if (!found) {
        problems.push(`${where}: the request body (${type}) has no example: add \`examples: [...]\` to the body's TypeBox schema`)
        continue
      }
      const error = valid(media.schema!, value)
      if (error !== null) problems.push(`${where}: the request body example ${JSON.stringify(value)} does not match its schema: ${error}`)
    }
    for (const [status, response] of Object.entries(op.responses)) {
      for (const [type, media] of Object.entries(response.content ?? {})) {
        const { found, value } = exampleOf(doc, media)
        if (!found) {
          problems.push(`${where}: the ${status} response body (${type}) has no example: add \`examples: [...]\` to the TypeBox schema of response ${status}`)
          continue
        }
        const error = valid(media.schema!, value)
        if (error !== null) problems.push(`${where}: the ${status} response example ${JSON.stringify(value)} does not match its schema: ${error}`)
      }
    }
  }
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    if (schema.example === undefined) continue
    const error = valid({ $ref: `#/components/schemas/${name}` }, schema.example)
    if (error !== null) problems.push(`components.schemas.${name}: its example does not match it: ${error}`)
  }
  assert.deepEqual(problems, [], `examples missing or invalid:\n${problems.join('\n')}`)
})

test('the examples work against the sample data: every operation, in document order, with its example values answers 2xx', async (t) => {
  const doc = await loadDoc()
  const clock = manualClock(T0)
  const stores = await openTestStores(t)
  assert.equal(await loadSampleData(stores), true)
  const sampleKeys = await loadSampleKeysAndOrders(stores, clock)
  const admin = sampleKeys.find((k) => k.role === 'admin')!
  const h = await buildTestApp(t, { stores })
  // Event ids are random: getEvent's example stands for the sample data's oldest event.
  const oldestEvent = (await h.call({ method: 'GET', url: '/v1/events?limit=1', key: admin.key })).json()[0].id as string
  const failures: string[] = []
  for (const { path, method, op } of operations(doc)) {
    const example = exampleRequest(doc, path, method, op)
    const request = { ...example, url: example.url.replace(/evt_[0-9a-f]{32}/, oldestEvent) }
    const res = await h.call({ ...request, key: admin.key })
    const target = request.url
    // The sample endpoint makes no attempt (src/sample-data.ts), so getWebhookAttempt's example names
    // none here; test/webhooks/attempt-details.http.test.ts reads real attempts.
    if (op.operationId === 'getWebhookAttempt' && res.statusCode === 404) continue
    if (res.statusCode < 200 || res.statusCode > 299) {
      failures.push(`${method.toUpperCase()} ${target} (${op.operationId}) -> ${res.statusCode} ${res.body.slice(0, 200)}`)
    }
  }
  assert.deepEqual(failures, [], 'operations whose examples fail on the sample data (fix the example or src/sample-data.ts)')
})
