// The response gate: every response a test receives through TestApp.call is checked against the
// served OpenAPI document: the status is documented for the operation, the body matches its
// schema, and the headers marked required are present. So the code and the document cannot
// drift apart without a test failing.
import assert from 'node:assert/strict'
import { Ajv, type ValidateFunction } from 'ajv'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { addFormats } from './ajv.ts'

type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, Response> }>>
  components: { schemas: Record<string, unknown>; headers: Record<string, HeaderObject> }
}
type Response = {
  headers?: Record<string, HeaderObject | { $ref: string }>
  content?: Record<string, { schema: unknown }>
}
type HeaderObject = { required?: boolean }

interface Checker {
  doc: Doc
  operations: { pattern: RegExp; path: string }[]
  validators: Map<string, ValidateFunction>
  ajv: Ajv
}

const checkers = new WeakMap<FastifyInstance, Checker>()

/** How many responses were checked, for the suite's own sanity test. */
export const gateStats = { checked: 0 }

function checkerFor (app: FastifyInstance): Checker {
  let checker = checkers.get(app)
  if (checker !== undefined) return checker
  const doc = structuredClone(app.swagger()) as unknown as Doc
  const ajv = new Ajv({ strict: false, allErrors: true })
  addFormats(ajv)
  ajv.addSchema({ components: doc.components }, 'doc')
  const operations = Object.keys(doc.paths).map((path) => ({
    path,
    pattern: new RegExp('^/v1' + path.replace(/\{[^}]+\}/g, '[^/]+') + '$')
  }))
  checker = { doc, operations, validators: new Map(), ajv }
  checkers.set(app, checker)
  return checker
}

function rewriteRefs (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs)
  if (node === null || typeof node !== 'object') return node
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(node)) out[k] = k === '$ref' && typeof v === 'string' ? 'doc' + v : rewriteRefs(v)
  return out
}

export function checkResponse (app: FastifyInstance, request: InjectOptions, response: LightMyRequestResponse): void {
  const url = String(request.url ?? request.path ?? '/')
  const path = url.split('?', 1)[0] ?? ''
  if (!path.startsWith('/v1')) return
  gateStats.checked++
  const method = String(request.method ?? 'GET').toLowerCase()
  const where = `${method.toUpperCase()} ${url} -> ${response.statusCode}`
  const checker = checkerFor(app)

  for (const header of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy', 'request-id']) {
    assert.ok(response.headers[header] !== undefined, `${where}: the ${header} header is missing`)
  }

  // A path that does not decode (a stray %), or whose segment is longer than the router takes,
  // never reaches routing, so it is no operation: it gets a 400 with the error object.
  const routable = reachesRouting(path)
  const operation = routable ? checker.operations.find((o) => o.pattern.test(path)) : undefined
  const documented = operation === undefined ? undefined : checker.doc.paths[operation.path]?.[method === 'head' ? 'get' : method]
  if (documented === undefined) {
    // Unknown paths, wrong methods and preflights: not operations, but still the error object.
    if (method !== 'options') {
      const allowed = routable ? [404, 405, 429] : [400, 429]
      assert.ok(allowed.includes(response.statusCode), `${where}: an undocumented operation answered ${response.statusCode}`)
      validateBody(checker, `${where}`, { $ref: '#/components/schemas/Error' }, response)
    }
    return
  }
  const status = String(response.statusCode)
  const declared = documented.responses[status]
  assert.ok(
    declared !== undefined,
    `${where}: status ${status} is not documented for ${method.toUpperCase()} ${operation!.path} `
    + `(documented: ${Object.keys(documented.responses).join(', ')})`
  )

  for (const [name, value] of Object.entries(declared.headers ?? {})) {
    const header = '$ref' in value ? checker.doc.components.headers[(value as { $ref: string }).$ref.split('/').pop()!] : value
    if (header?.required === true) assert.ok(response.headers[name.toLowerCase()] !== undefined, `${where}: the documented header ${name} is missing`)
  }
  if (method === 'head') return
  const schema = declared.content?.['application/json']?.schema
  if (schema === undefined) {
    assert.equal(response.body, '', `${where}: a body was sent where none is documented`)
    return
  }
  validateBody(checker, where, schema, response)
}

/** The router's maxParamLength (app.ts). */
const MAX_SEGMENT = 200

function reachesRouting (path: string): boolean {
  try {
    // The router measures a parameter once decoded.
    return path.split('/').every((segment) => decodeURIComponent(segment).length <= MAX_SEGMENT)
  } catch {
    return false
  }
}

function validateBody (checker: Checker, where: string, schema: unknown, response: LightMyRequestResponse): void {
  const key = JSON.stringify(schema)
  let validate = checker.validators.get(key)
  if (validate === undefined) {
    validate = checker.ajv.compile(rewriteRefs(schema) as object)
    checker.validators.set(key, validate)
  }
  let body: unknown
  try {
    body = JSON.parse(response.body)
  } catch {
    assert.fail(`${where}: the body is not JSON: ${response.body.slice(0, 200)}`)
  }
  assert.ok(validate(body), `${where}: the body does not match the document: ${JSON.stringify(validate.errors)} body=${response.body.slice(0, 300)}`)
}
