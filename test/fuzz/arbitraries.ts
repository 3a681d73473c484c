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
  /**
   * Set when the request breaks a documented rule on purpose (an integer not written in decimal
   * digits, a control character where the field's pattern refuses it, a lone surrogate in a body
   * string, a body field given twice): the answer must be `400 validation_failed` naming that
   * parameter or field (docs/product.md 5.10, 5.11).
   */
  expect?: { status: 400; path: string }
}

/**
 * Numbers as a client may spell them, none of which the decimal rule (docs/product.md 5.10)
 * accepts: what Number() or Ajv's coercion would take (±Infinity, NaN, exponents, hex, octal,
 * binary, signs, a decimal point, leading zeros), other scripts' digits, and separators.
 */
export const BAD_NUMBERS = ['Infinity', '-Infinity', '+Infinity', 'infinity', 'NaN', '1e400', '-1e400', '1e308', '-0', '+0', '0x10', '0X1F', '0x', '0o17', '0O7', '0b101', '0B1',
  '1e1', '1E3', '1e+2', '1e-0', '2e0', '+1', '-1', '+-1', '1.0', '1.', '.5', '1.5', '01', '00', '007', '0001',
  '\u0661', '\u0662\u0663', '\u06f3', '\uff11', '\uff12\uff10', '\u0967', '\u09e7', '\u0e51', '\ud835\udfcf', '\u2460', '\u00b9', '1_000', '1,000', '1 000', '1\u00a0000', '12abc', '0x1p3', '1n', '[1]', 'true', 'null']

/** Every kind of white space and invisible separator a client may pad a value with. */
export const WHITESPACE = [' ', '\t', '\n', '\r', '\r\n', '\v', '\f', '\u0085', '\u00a0', '\u1680', '\u180e', '\u2000', '\u2001', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006',
  '\u2007', '\u2008', '\u2009', '\u200a', '\u200b', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u0000']

/** Control characters: C0 (U+0000 to U+001F), DEL (U+007F) and C1 (U+0080 to U+009F). */
export const CONTROLS = [
  ...Array.from({ length: 0x20 }, (_, i) => i),
  0x7f,
  ...Array.from({ length: 0x20 }, (_, i) => 0x80 + i)
].map((c) => String.fromCharCode(c))

/** Lone surrogates: high or low, alone, reversed, or a high one cut from its pair. */
export const LONE_SURROGATES = ['\uD800', '\uDBFF', '\uDC00', '\uDFFF', '\uDC00\uD800', '\uD83D', 'x\uDE00']

/** A number the decimal rule refuses: one of BAD_NUMBERS, or good digits padded with white space. */
export const badNumber: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...BAD_NUMBERS) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom(...WHITESPACE), fc.constantFrom('1', '7', '20', '90', '100'), fc.nat(2))
      .map(([w, n, where]) => where === 0 ? w + n : where === 1 ? n + w : w + n + w)
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('+', '-', '0', '00'), fc.integer({ min: 1, max: 100 }))
      .map(([sign, n]) => `${sign}${n}`)
  })

/** `c` in some printable text: at the start, inside or at the end. */
const somewhereIn = (c: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.tuple(
    c,
    fc.string({ maxLength: 8 }).map((t) => [...t].filter((ch) => ch > '\u009f' || (ch >= ' ' && ch < '\u007f')).join('') || 'x'),
    fc.nat(2)
  ).map(([c, text, where]) => where === 0 ? c + text : where === 1 ? text.slice(0, 1) + c + text.slice(1) : text + c)

/** Text with a control character somewhere. */
export const controlText: fc.Arbitrary<string> = somewhereIn(fc.constantFrom(...CONTROLS))

/** Text with a lone surrogate somewhere (JSON.stringify writes it as a `\uD800` escape). */
export const loneSurrogateText: fc.Arbitrary<string> = somewhereIn(fc.constantFrom(...LONE_SURROGATES))

const INT64_EDGES = ['0', '-1', '1', '2', '3', '9007199254740991', '9007199254740992', '9007199254740993',
  '9223372036854775807', '9223372036854775808', '-9223372036854775808', '1e3', ' 7', '07', '0x10', '1.5', ...BAD_NUMBERS]
const NASTY_STRINGS = ['', ' ', '\u0000', 'a\u0000b', 'Rex\u0000', '\u0001', '\u0008', '\u001b[31m', '\u001f', '\t', 'a\tb', 'a\nb', 'a\r\nb', '\u007f', '\u0085', '\u009b[31m', '😀'.repeat(3), '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', 'a'.repeat(101), 'é'.repeat(100), '<script>', "'; DROP TABLE pets; --",
  '__proto__', 'constructor', '%00', '../../etc/passwd', '\uD800', 'a\uDC00b', 'null', 'true', '7']
const EXTRA_NAMES = ['x', '__proto__', 'constructor', 'api_key', 'id', 'limit', '😀', 'a'.repeat(300)]

function resolve (doc: Doc, schema: Schema): Schema {
  const ref = schema.$ref
  if (typeof ref !== 'string') return schema
  const target = doc.components.schemas[ref.split('/').pop()!]
  if (target === undefined) throw new Error(`unknown $ref ${ref}`)
  return resolve(doc, target)
}

/**
 * A value that fits the schema, most of the time; depth-bounded. `strict`: always a fitting
 * value (no nasty strings), for requests that must fail on one chosen field only.
 */
export function valueOf (doc: Doc, raw: Schema, depth = 0, strict = false): fc.Arbitrary<unknown> {
  const schema = resolve(doc, raw)
  const choices = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined
  if (choices !== undefined) return fc.oneof(...choices.map((s) => valueOf(doc, s, depth + 1, strict)))
  const allOf = schema.allOf as Schema[] | undefined
  if (allOf !== undefined) {
    return fc.tuple(...allOf.map((s) => valueOf(doc, s, depth + 1, strict)))
      .map((parts) => Object.assign({}, ...parts.filter((p) => typeof p === 'object')))
  }
  const nullable = schema.nullable === true
  let base: fc.Arbitrary<unknown>
  if (Array.isArray(schema.enum)) base = fc.constantFrom(...(schema.enum as unknown[]))
  else if (schema.type === 'integer') base = integerOf(schema)
  else if (schema.type === 'number') base = fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 })
  else if (schema.type === 'boolean') base = fc.boolean()
  else if (schema.type === 'string') base = stringOf(schema, strict)
  else if (schema.type === 'array') {
    base = depth > 3
      ? fc.constant([])
      : fc.array(
          valueOf(doc, (schema.items ?? {}) as Schema, depth + 1, strict),
          { maxLength: Math.min(Number(schema.maxItems ?? 3), 3) }
        )
  } else if (schema.type === 'object' || schema.properties !== undefined) {
    base = depth > 3 ? fc.constant({}) : objectOf(doc, schema, depth, strict)
  } else base = fc.jsonValue({ maxDepth: 2 })
  return nullable && !strict ? fc.option(base, { nil: null, freq: 5 }) : base
}

function integerOf (schema: Schema): fc.Arbitrary<number> {
  const min = typeof schema.minimum === 'number' ? schema.minimum : -1000
  const max = typeof schema.maximum === 'number' ? Math.min(schema.maximum, Number.MAX_SAFE_INTEGER) : 1000
  // Small values hit real records (ids 1 to 6 exist); the bounds are where the bugs are.
  return fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: Math.max(min, 1), max: Math.max(Math.min(max, 6), Math.max(min, 1)) }) },
    { weight: 1, arbitrary: fc.constantFrom(min, max) },
    { weight: 1, arbitrary: fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31) }) })
}

function stringOf (schema: Schema, strict = false): fc.Arbitrary<string> {
  const minLength = Number(schema.minLength ?? 0)
  const maxLength = Math.min(Number(schema.maxLength ?? 40), 120)
  if (schema.format === 'date-time') {
    return fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2035-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString())
  }
  if (schema.format === 'date') {
    return fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2035-01-01T00:00:00Z'), noInvalidDate: true })
      .map((d) => d.toISOString().slice(0, 10))
  }
  const plain = fc.string({ minLength: Math.max(minLength, 1), maxLength: Math.max(maxLength, 1) })
    .filter((s) => /\S/.test(s))
  if (strict) {
    // A fitting value of a pattern is generated from it: filtering random text by a pattern such
    // as `^evt_[0-9a-f]{32}$` never ends.
    if (typeof schema.pattern !== 'string') return plain
    const pattern = new RegExp(schema.pattern, 'u')
    // fast-check cannot generate from a lookahead (the no-control-character patterns): most
    // random text fits those, so filtering ends quickly.
    let matching: fc.Arbitrary<string>
    try { matching = fc.stringMatching(pattern) } catch { return plain.filter((s) => pattern.test(s)) }
    return matching.filter(
      (s) => s.length >= minLength && s.length <= Number(schema.maxLength ?? Infinity) && pattern.test(s)
    )
  }
  return fc.oneof(
    { weight: 4, arbitrary: plain },
    {
      weight: 1,
      arbitrary: fc.string({ unit: 'grapheme', minLength: Math.max(minLength, 1), maxLength: Math.max(maxLength, 1) })
    },
    { weight: 1, arbitrary: fc.constantFrom(...NASTY_STRINGS) })
}

function objectOf (doc: Doc, schema: Schema, depth: number, strict = false): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>
  const required = new Set((schema.required ?? []) as string[])
  const record: Record<string, fc.Arbitrary<unknown>> = {}
  for (const [name, property] of Object.entries(properties)) record[name] = valueOf(doc, property, depth + 1, strict)
  const value = fc.record(record, {
    requiredKeys: Object.keys(properties).filter((k) => required.has(k))
  }) as fc.Arbitrary<Record<string, unknown>>
  const minProperties = Number(schema.minProperties ?? 0)
  return strict && minProperties > 0 ? value.filter((v) => Object.keys(v).length >= minProperties) : value
}

/** A body as text: usually a fitting value, else a mutation of one, or something else entirely. */
export function bodyOf (doc: Doc, schema: Schema): fc.Arbitrary<string> {
  const fitting = valueOf(doc, schema)
  const mutated = fc.tuple(
    fitting,
    fc.nat(4),
    fc.constantFrom(...EXTRA_NAMES),
    fc.jsonValue({ maxDepth: 1 })
  ).map(([value, how, name, other]) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return other
    const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) }
    const keys = Object.keys(copy)
    const victim = keys[how % Math.max(keys.length, 1)]
    if (how === 0 && victim !== undefined) delete copy[victim] // a missing field
    else if (how === 1) Object.defineProperty(copy, name, { value: other, enumerable: true }) // an extra field
    else if (how === 2 && victim !== undefined) {
      copy[victim] = typeof copy[victim] === 'number' ? String(copy[victim]) : 7 // a wrong type
    } else if (how === 3 && victim !== undefined) copy[victim] = 2 ** 53 + 2 // an unsafe integer
    else return [copy] // an array where an object belongs
    return copy
  })
  const deep = fc.nat({ max: 5000 }).map((n) => '['.repeat(n + 100) + ']'.repeat(n + 100))
  const huge = fc.constantFrom(
    '{"name":"' + 'x'.repeat(70_000) + '"}',
    JSON.stringify({ name: 'Rex', tags: Array.from({ length: 3000 }, (_, i) => i) })
  )
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
    { weight: 1, arbitrary: fc.oneof(badNumber, controlText).map(encode) },
    { weight: 1, arbitrary: fc.constantFrom(...NASTY_STRINGS.filter((s) => s !== '')).map(encode) },
    { weight: 1, arbitrary: fc.constantFrom('%', '%zz', 'a'.repeat(300), '%2F', '1;x', '1%00') })
}

function queryOf (doc: Doc, operation: Operation): fc.Arbitrary<string> {
  const params = (operation.parameters ?? []).filter((p) => p.in === 'query')
  const record: Record<string, fc.Arbitrary<string>> = {}
  for (const p of params) {
    record[p.name] = fc.oneof(
      { weight: 5, arbitrary: valueOf(doc, p.schema).map((v) => String(v)) },
      { weight: 1, arbitrary: fc.constantFrom(...INT64_EDGES, ...NASTY_STRINGS) },
      { weight: 1, arbitrary: fc.oneof(badNumber, controlText) })
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
    contentType: fc.oneof(
      { weight: 8, arbitrary: fc.constant('application/json') },
      { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) }
    ),
    ifMatch: rarely(fc.oneof(
      fc.constantFrom('"1"', '*', 'W/"x"', '"' + 'x'.repeat(200) + '"', ''),
      badNumber,
      badNumber.map((n) => `"${n}"`),
      controlText
    ), 4),
    idempotencyKey: rarely(fc.oneof(fc.uuid(), fc.constantFrom('k1', 'k2', '', 'x'.repeat(300), '😀'), badNumber, controlText), 3),
    caller: fc.constantFrom('admin', 'admin', 'admin', 'admin', 'customer', 'customer', 'customer', 'none')
  }).map(({ segments: values, query, body: payload, contentType, ifMatch, idempotencyKey, caller }) => {
    const url = '/v1' + path.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? '1') + query
    const headers: Record<string, string> = {}
    if (payload !== null) {
      if (contentType !== '') headers['content-type'] = contentType
    }
    if (ifMatch !== null) headers['if-match'] = ifMatch
    if (idempotencyKey !== null) headers['idempotency-key'] = idempotencyKey
    return {
      operationId: operation.operationId,
      method: method.toUpperCase(),
      url,
      headers,
      caller: caller as FuzzRequest['caller'],
      ...(payload !== null && { payload })
    }
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

/** A value to put in one place; `twice`: the body field is given twice instead (its value is ignored). */
type Target = { in: 'path' | 'query' | 'header' | 'body'; name: string; value: fc.Arbitrary<string>; twice?: true }

/** A string the pattern refuses because of a control character (the pattern decides, not us). */
function controlTextFor (pattern: string): fc.Arbitrary<string> {
  const regexp = new RegExp(pattern, 'u')
  return controlText.filter((text) => !regexp.test(text))
}

function patternOf (doc: Doc, schema: Schema | undefined): string | null {
  if (schema === undefined) return null
  const resolved = resolve(doc, schema)
  return resolved.type === 'string' && typeof resolved.pattern === 'string' && !new RegExp(resolved.pattern, 'u').test('\u0000')
    ? resolved.pattern
    : null
}

/** The properties of a body schema and of each of its oneOf branches. */
function bodyProperties (doc: Doc, schema: Schema): Map<string, Schema> {
  const resolved = resolve(doc, schema)
  const properties = new Map<string, Schema>()
  for (const branch of [resolved, ...((resolved.oneOf ?? []) as Schema[]).map((b) => resolve(doc, b))]) {
    for (const [name, property] of Object.entries((branch.properties ?? {}) as Record<string, Schema>)) {
      properties.set(name, resolve(doc, property))
    }
  }
  return properties
}

/**
 * What a body can break: a control character in a string field whose pattern refuses it, a lone
 * surrogate in any string field (the parser refuses it, whatever the schema), any field twice.
 */
function bodyTargets (doc: Doc, schema: Schema): Target[] {
  const targets: Target[] = []
  for (const [name, property] of bodyProperties(doc, schema)) {
    const pattern = patternOf(doc, property)
    if (pattern !== null) targets.push({ in: 'body', name, value: controlTextFor(pattern) })
    if (property.type === 'string') targets.push({ in: 'body', name, value: loneSurrogateText })
    targets.push({ in: 'body', name, value: fc.constant(''), twice: true })
  }
  return targets
}

/**
 * Requests that break one documented rule on purpose, by an admin with quota to spare and an
 * otherwise fitting request: an integer parameter (path, query, header) spelled as anything
 * but decimal digits (docs/product.md 5.10), or a control character in a string parameter or
 * body field whose pattern refuses it (5.11). Each must be 400 validation_failed naming it.
 * Null when the operation has no such parameter or field.
 */
export function ruleBreakerOf (
  doc: Doc,
  path: string,
  method: string,
  operation: Operation
): fc.Arbitrary<FuzzRequest> | null {
  const params = operation.parameters ?? []
  const targets: Target[] = []
  for (const p of params) {
    const schema = resolve(doc, p.schema)
    const item = schema.type === 'array' ? resolve(doc, (schema.items ?? {}) as Schema) : schema
    const where = p.in as Target['in']
    if (item.type === 'integer') targets.push({ in: where, name: p.name, value: badNumber })
    const pattern = patternOf(doc, item)
    if (pattern !== null) targets.push({ in: where, name: p.name, value: controlTextFor(pattern) })
  }
  const bodySchema = operation.requestBody?.content['application/json']?.schema
  if (bodySchema !== undefined) targets.push(...bodyTargets(doc, bodySchema))
  if (targets.length === 0) return null
  const pathParams = params.filter((p) => p.in === 'path')
  const segments: Record<string, fc.Arbitrary<string>> = {}
  for (const p of pathParams) segments[p.name] = valueOf(doc, p.schema, 0, true).map(encode)
  const required: Record<string, fc.Arbitrary<unknown>> = {}
  for (const p of params.filter((p) => p.in === 'query' && p.required === true)) {
    required[p.name] = valueOf(doc, p.schema, 0, true)
  }
  const body = bodySchema === undefined ? fc.constant(undefined) : valueOf(doc, bodySchema, 0, true)
  return fc.constantFrom(...targets).chain((target) => fc.record({
    target: fc.constant(target),
    bad: target.value,
    segments: fc.record(segments),
    query: fc.record(required),
    body
  })).map(({ target, bad, segments: values, query, body: value }) => {
    if (target.in === 'path') values[target.name] = encode(bad)
    const search = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)] as [string, string]))
    if (target.in === 'query') search.set(target.name, bad)
    const text = search.toString()
    const url = '/v1' + path.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? '1') + (text === '' ? '' : `?${text}`)
    const headers: Record<string, string> = {}
    if (target.in === 'header') headers[target.name] = bad
    let payload: string | undefined
    if (value !== undefined) {
      const object = (value !== null && typeof value === 'object' && !Array.isArray(value)
        ? { ...(value as Record<string, unknown>) }
        : {})
      if (target.in === 'body' && target.twice !== true) object[target.name] = bad
      if (target.twice === true) delete object[target.name]
      payload = JSON.stringify(object)
      // The field twice, after the others: `{…,"quantity":1,"quantity":1}`.
      if (target.twice === true) {
        const field = JSON.stringify(target.name)
        payload = `${payload.slice(0, -1)}${payload === '{}' ? '' : ','}${field}:1,${field}:1}`
      }
      headers['content-type'] = 'application/json'
    }
    const where = target.in === 'body' ? `/${target.name}` : target.name
    return {
      operationId: operation.operationId,
      method: method.toUpperCase(),
      url,
      headers,
      caller: 'admin' as const,
      expect: { status: 400 as const, path: where },
      ...(payload !== undefined && { payload })
    }
  })
}

/** Every operation that has a rule to break, with its generator (see ruleBreakerOf). */
export function ruleBreakersOf (doc: Doc): { operationId: string; arbitrary: fc.Arbitrary<FuzzRequest> }[] {
  const out: { operationId: string; arbitrary: fc.Arbitrary<FuzzRequest> }[] = []
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
      const arbitrary = ruleBreakerOf(doc, path, method, operation)
      if (arbitrary !== null) out.push({ operationId: operation.operationId, arbitrary })
    }
  }
  return out
}
