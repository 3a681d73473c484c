// Request generators for the fuzzer, read from the OpenAPI document: for every operation, values
// that fit its schemas (so requests reach the handlers and the stores) mixed with the values a
// careless or hostile client sends (wrong types, out-of-range numbers, long and astral-plane
// strings, missing and extra fields, odd content types, deep and huge JSON, bad path segments).
import fc from 'fast-check'

export type Schema = Record<string, unknown>
export interface Doc {
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, Schema> }
}
export interface Operation {
  operationId: string
  parameters?: { in: string; name: string; required?: boolean; schema: Schema }[]
  requestBody?: { content: Record<string, { schema: Schema }> }
}

export interface FuzzRequest {
  operationId: string
  method: string
  url: string
  headers: Record<string, string>
  payload?: string
  /** Which key sends it: the fuzzer's admin key, a customer key, or none. */
  caller: 'admin' | 'customer' | 'none'
}

const INT64_EDGES = ['0', '-1', '1', '2', '3', '9007199254740991', '9007199254740992', '9007199254740993',
  '9223372036854775807', '9223372036854775808', '-9223372036854775808', '1e3', ' 7', '07', '0x10', '1.5']
const NASTY_STRINGS = ['', ' ', '\u0000', '😀'.repeat(3), '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', 'a'.repeat(101), 'é'.repeat(100), '<script>', "'; DROP TABLE pets; --",
  '__proto__', 'constructor', '%00', '../../etc/passwd', '\uD800', 'null', 'true', '7']
const EXTRA_NAMES = ['x', '__proto__', 'constructor', 'api_key', 'id', 'limit', '😀', 'a'.repeat(300)]

function resolve (doc: Doc, schema: Schema): Schema {
  const ref = schema.$ref
  if (typeof ref !== 'string') return schema
  const target = doc.components.schemas[ref.split('/').pop()!]
  if (target === undefined) throw new Error(`unknown $ref ${ref}`)
  return resolve(doc, target)
}

/** A value that fits the schema, most of the time; depth-bounded. */
export function valueOf (doc: Doc, raw: Schema, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(doc, raw)
  const choices = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined
  if (choices !== undefined) return fc.oneof(...choices.map((s) => valueOf(doc, s, depth + 1)))
  const allOf = schema.allOf as Schema[] | undefined
  if (allOf !== undefined) {
    return fc.tuple(...allOf.map((s) => valueOf(doc, s, depth + 1))).map((parts) => Object.assign({}, ...parts.filter((p) => typeof p === 'object')))
  }
  const nullable = schema.nullable === true
  let base: fc.Arbitrary<unknown>
  if (Array.isArray(schema.enum)) base = fc.constantFrom(...(schema.enum as unknown[]))
  else if (schema.type === 'integer') base = integerOf(schema)
  else if (schema.type === 'number') base = fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 })
  else if (schema.type === 'boolean') base = fc.boolean()
  else if (schema.type === 'string') base = stringOf(schema)
  else if (schema.type === 'array') {
    base = depth > 3 ? fc.constant([]) : fc.array(valueOf(doc, (schema.items ?? {}) as Schema, depth + 1), { maxLength: Math.min(Number(schema.maxItems ?? 3), 3) })
  } else if (schema.type === 'object' || schema.properties !== undefined) base = depth > 3 ? fc.constant({}) : objectOf(doc, schema, depth)
  else base = fc.jsonValue({ maxDepth: 2 })
  return nullable ? fc.option(base, { nil: null, freq: 5 }) : base
}

function integerOf (schema: Schema): fc.Arbitrary<number> {
  const min = typeof schema.minimum === 'number' ? schema.minimum : -1000
  const max = typeof schema.maximum === 'number' ? Math.min(schema.maximum, Number.MAX_SAFE_INTEGER) : 1000
  // Small values hit real records (ids 1 to 6 exist); the bounds are where the bugs are.
  return fc.oneof({ weight: 3, arbitrary: fc.integer({ min: Math.max(min, 1), max: Math.max(Math.min(max, 6), Math.max(min, 1)) }) },
    { weight: 1, arbitrary: fc.constantFrom(min, max) },
    { weight: 1, arbitrary: fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31) }) })
}

function stringOf (schema: Schema): fc.Arbitrary<string> {
  const minLength = Number(schema.minLength ?? 0)
  const maxLength = Math.min(Number(schema.maxLength ?? 40), 120)
  if (schema.format === 'date-time') {
    return fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2035-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString())
  }
  if (schema.format === 'date') return fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2035-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10))
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ minLength: Math.max(minLength, 1), maxLength: Math.max(maxLength, 1) }).filter((s) => /\S/.test(s)) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: Math.max(minLength, 1), maxLength: Math.max(maxLength, 1) }) },
    { weight: 1, arbitrary: fc.constantFrom(...NASTY_STRINGS) })
}

function objectOf (doc: Doc, schema: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>
  const required = new Set((schema.required ?? []) as string[])
  const record: Record<string, fc.Arbitrary<unknown>> = {}
  for (const [name, property] of Object.entries(properties)) record[name] = valueOf(doc, property, depth + 1)
  return fc.record(record, { requiredKeys: Object.keys(properties).filter((k) => required.has(k)) }) as fc.Arbitrary<Record<string, unknown>>
}

/** A body as text: usually a fitting value, else a mutation of one, or something else entirely. */
export function bodyOf (doc: Doc, schema: Schema): fc.Arbitrary<string> {
  const fitting = valueOf(doc, schema)
  const mutated = fc.tuple(fitting, fc.nat(4), fc.constantFrom(...EXTRA_NAMES), fc.jsonValue({ maxDepth: 1 })).map(([value, how, name, other]) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return other
    const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) }
    const keys = Object.keys(copy)
    const victim = keys[how % Math.max(keys.length, 1)]
    if (how === 0 && victim !== undefined) delete copy[victim] // a missing field
    else if (how === 1) Object.defineProperty(copy, name, { value: other, enumerable: true }) // an extra field
    else if (how === 2 && victim !== undefined) copy[victim] = typeof copy[victim] === 'number' ? String(copy[victim]) : 7 // a wrong type
    else if (how === 3 && victim !== undefined) copy[victim] = 2 ** 53 + 2 // an unsafe integer
    else return [copy] // an array where an object belongs
    return copy
  })
  const deep = fc.nat({ max: 5000 }).map((n) => '['.repeat(n + 100) + ']'.repeat(n + 100))
  const huge = fc.constantFrom('{"name":"' + 'x'.repeat(70_000) + '"}', JSON.stringify({ name: 'Rex', tags: Array.from({ length: 3000 }, (_, i) => i) }))
  const broken = fc.constantFrom('', '{', '{"name":', 'null', '[]', '"text"', '{"name":"Rex",}', '\uFEFF{"name":"Rex"}', '{"name":"Rex"}{"name":"Rex"}')
  return fc.oneof(
    { weight: 6, arbitrary: fitting.map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 4, arbitrary: mutated.map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 1, arbitrary: deep },
    { weight: 1, arbitrary: huge },
    { weight: 2, arbitrary: broken })
}

/** encodeURIComponent, except that a lone surrogate goes out as its WTF-8 bytes instead of throwing. */
function encode (value: unknown): string {
  const text = String(value)
  try {
    return encodeURIComponent(text)
  } catch {
    return text.replace(/[^A-Za-z0-9]/g, (c) => [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')).replace(/%ef%bf%bd/g, '%ED%A0%80')
  }
}

/** A path segment: a fitting id usually, an edge of int64 or garbage otherwise. */
function pathValueOf (doc: Doc, schema: Schema): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 5, arbitrary: valueOf(doc, schema).map(encode) },
    { weight: 2, arbitrary: fc.constantFrom(...INT64_EDGES).map(encode) },
    { weight: 1, arbitrary: fc.constantFrom(...NASTY_STRINGS.filter((s) => s !== '')).map(encode) },
    { weight: 1, arbitrary: fc.constantFrom('%', '%zz', 'a'.repeat(300), '%2F', '1;x', '1%00') })
}

function queryOf (doc: Doc, operation: Operation): fc.Arbitrary<string> {
  const params = (operation.parameters ?? []).filter((p) => p.in === 'query')
  const record: Record<string, fc.Arbitrary<string>> = {}
  for (const p of params) {
    record[p.name] = fc.oneof(
      { weight: 5, arbitrary: valueOf(doc, p.schema).map((v) => String(v)) },
      { weight: 1, arbitrary: fc.constantFrom(...INT64_EDGES, ...NASTY_STRINGS) })
  }
  const known = fc.record(record, { requiredKeys: params.filter((p) => p.required === true).map((p) => p.name) })
  const extra = rarely(fc.tuple(fc.constantFrom(...EXTRA_NAMES), fc.constantFrom('1', '', 'psk_x')), 6)
  return fc.tuple(known, extra).map(([values, more]) => {
    const search = new URLSearchParams(values as Record<string, string>)
    if (more !== null) search.append(more[0], more[1])
    const text = search.toString()
    return text === '' ? '' : `?${text}`
  })
}

/** `value` once in `every` draws, else null (fast-check's option gives null once in `freq`). */
function rarely<T> (value: fc.Arbitrary<T>, every: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: every - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: value })
}

const CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'text/plain', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/merge-patch+json', '']

export function requestOf (doc: Doc, path: string, method: string, operation: Operation): fc.Arbitrary<FuzzRequest> {
  const pathParams = (operation.parameters ?? []).filter((p) => p.in === 'path')
  const segments: Record<string, fc.Arbitrary<string>> = {}
  for (const p of pathParams) segments[p.name] = pathValueOf(doc, p.schema)
  const bodySchema = operation.requestBody?.content['application/json']?.schema
  const body = bodySchema === undefined
    ? rarely(fc.constantFrom('{}', '{"x":1}'), 8)
    : fc.oneof({ weight: 11, arbitrary: bodyOf(doc, bodySchema) }, { weight: 1, arbitrary: fc.constant(null) })
  return fc.record({
    segments: fc.record(segments),
    query: queryOf(doc, operation),
    body,
    contentType: fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
    ifMatch: rarely(fc.constantFrom('"1"', '*', 'W/"x"', '"' + 'x'.repeat(200) + '"', ''), 4),
    idempotencyKey: rarely(fc.oneof(fc.uuid(), fc.constantFrom('k1', 'k2', '', 'x'.repeat(300), '😀')), 3),
    caller: fc.constantFrom('admin', 'admin', 'admin', 'admin', 'customer', 'customer', 'customer', 'none')
  }).map(({ segments: values, query, body: payload, contentType, ifMatch, idempotencyKey, caller }) => {
    const url = '/v1' + path.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? '1') + query
    const headers: Record<string, string> = {}
    if (payload !== null) {
      if (contentType !== '') headers['content-type'] = contentType
    }
    if (ifMatch !== null) headers['if-match'] = ifMatch
    if (idempotencyKey !== null) headers['idempotency-key'] = idempotencyKey
    return { operationId: operation.operationId, method: method.toUpperCase(), url, headers, caller: caller as FuzzRequest['caller'], ...(payload !== null && { payload }) }
  })
}

/** Every operation of the document, each with its generator. */
export function operationsOf (doc: Doc): { operationId: string; arbitrary: fc.Arbitrary<FuzzRequest> }[] {
  const out: { operationId: string; arbitrary: fc.Arbitrary<FuzzRequest> }[] = []
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
      out.push({ operationId: operation.operationId, arbitrary: requestOf(doc, path, method, operation) })
    }
  }
  return out
}
