// Request validation: one Ajv for bodies, one for the path, query and headers.
//
// Fastify's default Ajv coerces types and strips unknown properties everywhere. docs/product.md 5.5
// says JSON bodies are never coerced ("7" is not an integer) and unknown fields are rejected, so
// bodies get a strict Ajv; path and query values are strings on the wire and must be coerced.
import { Ajv, type ErrorObject, type Options as AjvOptions } from 'ajv'
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats'
import type { TSchema } from 'typebox'
import type { FastifyInstance, FastifyRequest, FastifySchema, FastifySchemaCompiler, preValidationHookHandler } from 'fastify'
import { AppError, clipText } from '../errors.ts'
import { CONTROL_RANGES, HEADER_TEXT, MULTILINE_TEXT, NAME_PATTERN, NO_CONTROLS } from '../shared/schemas.ts'
import { redactText } from './redact.ts'

// ajv-formats is CommonJS with a default export; under Node's ESM loader it arrives wrapped.
const addFormats =
  ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin

function makeAjv (options: AjvOptions): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, messages: true, ...options })
  addFormats(ajv)
  // OpenAPI vendor extensions and annotations that ride along in our schemas.
  ajv.addKeyword({ keyword: 'example' })
  return ajv
}

export function installValidation (app: FastifyInstance): void {
  const bodyAjv = makeBodyAjv()
  // 'array' also wraps a single query value into an array where the schema wants one (?id=1).
  const partsAjv = makeAjv({ coerceTypes: 'array', useDefaults: true, removeAdditional: false })
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : partsAjv).compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>
  app.setValidatorCompiler(compiler)
  app.setSchemaErrorFormatter((errors, dataVar) =>
    validationError(dataVar === 'querystring' ? 'query' : dataVar, problemsOf(errors, dataVar === 'body')))

  installIntegerGuard(app)
}

// `discriminator`: a oneOf keyed by a property (the key's plan) is checked against the branch
// the property names, so the errors speak of that branch only. `verbose`: an error carries its
// schema and value, which `narrowAnyOf` reads to speak of the alternative the client meant.
const makeBodyAjv = (): Ajv =>
  makeAjv({ coerceTypes: false, useDefaults: false, removeAdditional: false, discriminator: true, verbose: true })

interface ObjectBranch { properties?: Record<string, unknown>; required?: string[] }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * An anyOf of object shapes (the replay's `{since, until?}` or `{eventIds}`) fails with every
 * branch's errors and a bare "must match a schema in anyOf": a client who sent `eventIds` with a
 * bad id would read first that `since` is missing. So the branch the client meant is the one
 * whose fields it sent, and only its errors are told; when the fields sent name no branch (or
 * several), one problem says which fields each alternative takes, beside the unknown fields.
 */
function narrowAnyOf (errors: readonly ErrorObject[]): readonly ErrorObject[] {
  const anyOf = errors.find((e) => e.keyword === 'anyOf' && isObject(e.data) && Array.isArray(e.schema)
    && (e.schema as unknown[]).every((b) => isObject(b) && isObject(b.properties)))
  if (anyOf === undefined) return errors
  const branches = anyOf.schema as ObjectBranch[]
  const sent = Object.keys(anyOf.data as Record<string, unknown>)
  const inBranch = (e: ErrorObject, i: number): boolean => e.schemaPath.startsWith(`${anyOf.schemaPath}/${i}/`)
  const ours = (e: ErrorObject): boolean => e === anyOf || branches.some((_, i) => inBranch(e, i))
  const others = errors.filter((e) => !ours(e))
  const overlap = branches.map((b) => sent.filter((name) => Object.hasOwn(b.properties!, name)).length)
  const best = Math.max(...overlap)
  if (best > 0 && overlap.indexOf(best) === overlap.lastIndexOf(best)) {
    return [...others, ...errors.filter((e) => inBranch(e, overlap.indexOf(best)))]
  }
  const alternatives = branches.map((b) => {
    const required = b.required ?? []
    const optional = Object.keys(b.properties!).filter((name) => !required.includes(name))
    return required.map((n) => `"${n}"`).join(' and ')
      + (optional.length === 0 ? '' : ` (optionally ${optional.map((n) => `"${n}"`).join(', ')})`)
  })
  const unknown = sent.filter((name) => !branches.some((b) => Object.hasOwn(b.properties!, name)))
  const choice: ErrorObject = { ...anyOf, message: `must have either ${alternatives.join(' or ')}` }
  const unknownErrors = unknown.map((name): ErrorObject => ({
    ...anyOf, keyword: 'additionalProperties', params: { additionalProperty: name }, message: 'must NOT have additional properties'
  }))
  return [...others, choice, ...unknownErrors]
}

/** One problem of a value against its schema: the error's detail, and the field it is about. */
export interface Problem {
  path: string
  message: string
  /** The top-level field concerned (the one named by an unknown or missing property, too); null: the whole value. */
  field: string | null
  /** Ajv's keyword: `additionalProperties` (a field not allowed here), `required` (a missing one), `pattern` … */
  keyword: string
  /** An enumeration's values, when the value is not one of them. */
  allowed?: readonly unknown[]
}

function problemsOf (errors: readonly ErrorObject[], body: boolean): Problem[] {
  return (body ? narrowAnyOf(errors) : errors).map((e) => {
    const params = e.params as Record<string, unknown>
    const named = typeof params.additionalProperty === 'string'
      ? params.additionalProperty
      : typeof params.missingProperty === 'string' ? params.missingProperty : null
    const field = e.instancePath.split('/')[1] ?? named ?? (e.keyword === 'discriminator' && typeof params.tag === 'string' ? params.tag : null)
    return {
      // A name the client sent (an unknown field or query parameter) is echoed with any key in it redacted.
      path: clipText(redactText(body
        ? bodyPath(e.instancePath, e.keyword, params)
        : describeParam(e.instancePath, params))),
      message: clipText(redactText(describeError(e.keyword, e.message, params))),
      field: field === '' ? null : field,
      keyword: e.keyword,
      ...(Array.isArray(params.allowedValues) && { allowed: params.allowedValues as unknown[] })
    }
  })
}

function validationError (where: string, problems: Problem[]): AppError {
  const details = problems.map(({ path, message }) => ({ path, message }))
  const first = details[0]
  return new AppError('validation_failed', `invalid ${where}: ${first ? `${first.path} ${first.message}` : 'malformed'}`, { details })
}

/**
 * The API's own check of a request body, for the callers that reach a service without HTTP (the
 * CLI, docs/operating.md): the same Ajv settings and the same problems as a request's 400, so
 * the rules are written once, in the schema.
 */
export function bodyCheck (schema: TSchema): (value: unknown) => Problem[] {
  const validate = makeBodyAjv().compile(schema)
  return (value) => validate(value) ? [] : problemsOf(validate.errors ?? [], true)
}

/**
 * An operation without a body schema takes no body: a body is 400 before it is read, so such an
 * operation never answers 413 or 415 about a body it would ignore (its documented statuses stay
 * exact). An empty body (`Content-Length: 0`) is no body. Checked by the pipeline step
 * (http/pipeline.ts) for the routes `takesNoBody` says, after the access decision.
 */
export function takesNoBody (schema: unknown): boolean {
  return (schema as FastifySchema | undefined)?.body === undefined
}

/** The refusal of a body sent to an operation that takes none, or undefined when none was sent. */
export function bodySent (request: FastifyRequest, url: string): AppError | undefined {
  const length = request.headers['content-length']
  if (request.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return undefined
  return new AppError('validation_failed', `${request.method} ${url} takes no body; send none`, { details: [{ path: '/', message: 'must be absent' }] })
}

/** The JSON Pointer of a body error; a discriminator's error is about its tag property. */
function bodyPath (instancePath: string, keyword: string, params: Record<string, unknown>): string {
  if (keyword === 'discriminator' && typeof params.tag === 'string') return `${instancePath}/${params.tag}`
  return instancePath || '/'
}

function describeParam (instancePath: string, params: Record<string, unknown>): string {
  const name = instancePath.replace(/^\//, '')
  if (name !== '') return name
  if (typeof params.additionalProperty === 'string') return params.additionalProperty
  if (typeof params.missingProperty === 'string') return params.missingProperty
  return '(all)'
}

function describeError (keyword: string, message: string | undefined, params: Record<string, unknown>): string {
  if (keyword === 'additionalProperties') return `has an unknown field "${String(params.additionalProperty)}"`
  if (keyword === 'pattern') {
    if (params.pattern === NAME_PATTERN) return `must not be blank, and must not contain control characters (${CONTROL_RANGES})`
    if (params.pattern === NO_CONTROLS) return `must not contain control characters (${CONTROL_RANGES})`
    if (params.pattern === MULTILINE_TEXT) return `must not contain control characters (${CONTROL_RANGES}) other than tab, line feed and carriage return`
    if (params.pattern === HEADER_TEXT) return `must not contain control characters (${CONTROL_RANGES}) other than tab`
  }
  if (keyword === 'discriminator') return 'must be one of the documented values'
  return message ?? 'is invalid'
}

/**
 * Integers in the path, the query and the headers (docs/product.md 5.10). They are text on the
 * wire, and Ajv's coercion takes `Number(text)`: "Infinity", "1e400", "0x10", "0b1", "1e1",
 * "+1", "1.0", "01" and padded digits would all become numbers, ±Infinity included, and pass
 * `type: integer` and the bounds. So one rule runs first, on the value the framework routed
 * (the percent-decoded path segment or query value, not the raw URL): decimal digits only, no
 * sign, no leading zero, nothing around them. Then the schema's bounds apply to the number.
 * Identifiers (int64) are also checked exactly against the 64-bit range on the text, before
 * coercion loses precision past 2^53: any int64 passes the guard (a value past 2^53 is then
 * refused by `maximum`), anything longer is 400 here.
 */
const DECIMAL_TEXT = /^(?:0|[1-9][0-9]*)$/
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
export const DECIMAL_MESSAGE = 'must be a decimal integer: digits only, no sign, no leading zero, no spaces'
const INT64_MESSAGE = 'must be a 64-bit integer'

/** Whether `text` is a decimal int64 (0 to 2^63 - 1; the schemas' bounds then narrow it). */
export function isInt64Text (text: string): boolean {
  if (!DECIMAL_TEXT.test(text) || text.length > 19) return false
  return text.length < 19 || BigInt(text) <= INT64_MAX
}

interface IntegerField { name: string; int64: boolean; maximum: number | undefined }

/** The integer fields of a path, query or header schema (an array of integers counts, as `?id=1&id=2`). */
export function integerFields (schema: unknown): IntegerField[] {
  type Item = { type?: unknown; format?: string; maximum?: unknown }
  type Property = Item & { items?: Item }
  const properties = (schema as { properties?: Record<string, Property> } | undefined)?.properties
  if (properties === undefined) return []
  const fields: IntegerField[] = []
  for (const [name, property] of Object.entries(properties)) {
    const item = property.type === 'array' ? property.items : property
    if (item?.type === 'integer') {
      fields.push({ name, int64: item.format === 'int64', maximum: typeof item.maximum === 'number' ? item.maximum : undefined })
    }
  }
  return fields
}

function installIntegerGuard (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as FastifySchema | undefined
    const parts = [
      { where: 'params', key: 'params', fields: integerFields(schema?.params) },
      { where: 'query', key: 'query', fields: integerFields(schema?.querystring) },
      { where: 'headers', key: 'headers', fields: integerFields(schema?.headers) }
    ] as const
    if (parts.every((p) => p.fields.length === 0)) return
    // Not async: a promise per request costs more than the check (docs/performance.md).
    const guard: preValidationHookHandler = (request, _reply, done) => {
      try {
        for (const { where, key, fields } of parts) {
          if (fields.length > 0) checkIntegers(where, request[key] as Record<string, unknown>, fields)
        }
      } catch (error) {
        done(error as Error)
        return
      }
      done()
    }
    const existing = route.preValidation
    route.preValidation = existing === undefined
      ? [guard]
      : [...(Array.isArray(existing) ? existing : [existing]), guard]
  })
}

function checkIntegers (where: string, values: Record<string, unknown>, fields: IntegerField[]): void {
  const details: { path: string; message: string }[] = []
  for (const { name, int64, maximum } of fields) {
    const value = values[name]
    // A repeated query parameter (?id=1&id=2) arrives as an array: every element must pass.
    const list = Array.isArray(value) ? value : [value]
    list.forEach((v, i) => {
      if (typeof v !== 'string') return
      const path = Array.isArray(value) ? `${name}/${i}` : name
      if (!DECIMAL_TEXT.test(v)) details.push({ path: clipText(path), message: DECIMAL_MESSAGE })
      else if (int64 && !isInt64Text(v)) details.push({ path: clipText(path), message: INT64_MESSAGE })
      // Past 2^53 the coerced number is rounded, and a run of 309 digits is Infinity: the bound
      // is checked here, on the text, with the schema's own message.
      else if (!int64 && !Number.isSafeInteger(Number(v))) {
        details.push({ path: clipText(path), message: maximum === undefined ? DECIMAL_MESSAGE : `must be <= ${maximum}` })
      }
    })
  }
  const first = details[0]
  if (first === undefined) return
  throw new AppError('validation_failed', clipText(`invalid ${where}: ${first.path} ${first.message}`), { details })
}

/**
 * The JSON body parser. JSON.parse is used as is, then three things it lets through are refused
 * (400 validation_failed, docs/product.md 5.5 and 5.11), each checked only when the text can
 * hold it, so an ordinary body pays a few scans of its text:
 * - integer literals beyond 2^53, checked exactly against the int64 range (with the reviver's
 *   source text, Node 22+): JSON.parse would silently round 9223372036854775808 to a value that
 *   passes a `maximum` check. The reviver only runs when the text has a run of 16+ digits;
 * - lone surrogates (`"\ud800"`): JSON.parse makes a string no UTF-8 can carry, which both engines
 *   stored as U+FFFD. The text itself is decoded UTF-8 and has none, so only a `\uD800`-`\uDFFF`
 *   escape can make one: the parsed value is walked only then;
 * - a field given twice in one object, at any depth (`{"quantity":1,"quantity":50}`): JSON.parse
 *   keeps the last, a proxy or a log reader may take the first, and the two would see different
 *   requests. Every field name in the text is a string followed by `:`, so when the text has no
 *   more such colons than the parsed value has fields, no field was lost and the text is not
 *   scanned: the scan runs only when a colon follows a quote inside a string, or a field repeats.
 */
export function parseJsonBody (text: string): unknown {
  if (text.length === 0 || /^\s*$/.test(text)) throw new AppError('validation_failed', 'the body is empty; send a JSON document')
  let value: unknown
  try {
    value = /\d{16}/.test(text)
      ? JSON.parse(text, int64Reviver as (this: unknown, key: string, value: unknown) => unknown)
      : JSON.parse(text)
  } catch (error) {
    if (error instanceof AppError) throw error
    throw new AppError('validation_failed', 'the body is not valid JSON')
  }
  const lone = SURROGATE_ESCAPE.test(text) ? loneSurrogateAt(value) : null
  if (lone !== null) throw bodyProblem(lone, 'must not contain a lone surrogate (U+D800 to U+DFFF outside a pair)')
  const colons = nameColons(text)
  const repeated = colons > 1 && colons > fieldCount(value) ? repeatedField(text) : null
  if (repeated !== null) throw bodyProblem(repeated, 'is given more than once in its object; send each field once')
  return value
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/

const bodyProblem = (path: string, message: string): AppError =>
  validationError('body', [{ path: clipText(path), message, field: null, keyword: 'body' }])

const pointerPart = (name: string): string => name.replace(/~/g, '~0').replace(/\//g, '~1')

/**
 * The JSON Pointer of the first string (value or field name) that is not well-formed UTF-16.
 * A walk with a stack of its own: a body may nest as deep as JSON.parse goes, deeper than a
 * recursion could.
 */
function loneSurrogateAt (root: unknown): string | null {
  const stack: [unknown, string][] = [[root, '']]
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [value, path] = top
    if (typeof value === 'string') {
      if (!value.isWellFormed()) return path || '/'
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}/${i}`])
    } else if (typeof value === 'object' && value !== null) {
      const entries = Object.entries(value)
      for (let i = entries.length - 1; i >= 0; i--) {
        const [name, item] = entries[i]!
        if (!name.isWellFormed()) return `${path}/${pointerPart(name.toWellFormed())}`
        stack.push([item, `${path}/${pointerPart(name)}`])
      }
    }
  }
  return null
}

/** How many `:` follow a `"` (white space between): at least one per field name in the text. */
function nameColons (text: string): number {
  let count = 0
  for (let i = text.indexOf(':'); i !== -1; i = text.indexOf(':', i + 1)) {
    let j = i - 1
    for (let c = text.charCodeAt(j); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = text.charCodeAt(--j));
    if (text.charCodeAt(j) === 0x22) count++
  }
  return count
}

/** How many fields the parsed value holds, at every depth (a stack of its own, as above). */
function fieldCount (root: unknown): number {
  let count = 0
  const stack: unknown[] = [root]
  for (let value = stack.pop(); value !== undefined; value = stack.pop()) {
    if (typeof value !== 'object' || value === null) continue
    if (Array.isArray(value)) {
      for (const item of value) if (typeof item === 'object' && item !== null) stack.push(item)
      continue
    }
    for (const key in value) {
      count++
      const item = (value as Record<string, unknown>)[key]
      if (typeof item === 'object' && item !== null) stack.push(item)
    }
  }
  return count
}

/** The tokens that matter for field names: a string, or a bracket or comma (strings skipped natively). */
const TOKEN = /"[^"\\]*(?:\\.[^"\\]*)*"|[{}[\],]/g

/**
 * The JSON Pointer of the first field given twice in one object, or null. `text` is valid JSON
 * (JSON.parse took it), so one pass over its tokens suffices: a frame per open object (its
 * field names so far) or array (its index). Names are compared decoded (`"q\u0075antity"` is
 * `quantity`).
 */
function repeatedField (text: string): string | null {
  const frames: { names: Set<string> | null; at: string | number }[] = []
  let expectName = false
  TOKEN.lastIndex = 0
  for (let match = TOKEN.exec(text); match !== null; match = TOKEN.exec(text)) {
    const token = match[0]
    const c = token.charCodeAt(0)
    if (c === 0x22) {
      if (!expectName) continue
      const frame = frames[frames.length - 1]!
      const name = token.includes('\\') ? JSON.parse(token) as string : token.slice(1, -1)
      if (frame.names!.has(name)) {
        return frames.map((f, k) => `/${pointerPart(String(k === frames.length - 1 ? name : f.at))}`).join('')
      }
      frame.names!.add(name)
      frame.at = name
      expectName = false
    } else if (c === 0x7b) {
      frames.push({ names: new Set(), at: '' })
      expectName = true
    } else if (c === 0x5b) {
      frames.push({ names: null, at: 0 })
    } else if (c === 0x7d || c === 0x5d) {
      frames.pop()
      expectName = false
    } else {
      const frame = frames[frames.length - 1]!
      if (frame.names === null) frame.at = (frame.at as number) + 1
      else expectName = true
    }
  }
  return null
}

function int64Reviver (_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value === 'number' && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source)) {
    const n = BigInt(context.source)
    if (n < INT64_MIN || n > INT64_MAX) {
      throw new AppError('validation_failed', `the body holds ${context.source}, which is outside the 64-bit integer range`)
    }
  }
  return value
}
