// Request validation: one Ajv for bodies, one for the path, query and headers.
//
// Fastify's default Ajv coerces types and strips unknown properties everywhere. docs/product.md 5.5
// says JSON bodies are never coerced ("7" is not an integer) and unknown fields are rejected, so
// bodies get a strict Ajv; path and query values are strings on the wire and must be coerced.
import { Ajv, type Options as AjvOptions } from 'ajv'
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats'
import type { FastifyInstance, FastifySchema, FastifySchemaCompiler, preParsingHookHandler, preValidationHookHandler } from 'fastify'
import { AppError, clipText } from '../errors.ts'
import { HEADER_TEXT, MULTILINE_TEXT, NAME_PATTERN, NO_CONTROLS } from '../shared/schemas.ts'

// ajv-formats is CommonJS with a default export; under Node's ESM loader it arrives wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin

function makeAjv (options: AjvOptions): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, messages: true, ...options })
  addFormats(ajv)
  // OpenAPI vendor extensions and annotations that ride along in our schemas.
  ajv.addKeyword({ keyword: 'example' })
  return ajv
}

export function installValidation (app: FastifyInstance): void {
  // `discriminator`: a oneOf keyed by a property (the key's plan) is checked against the branch
  // the property names, so the errors speak of that branch only.
  const bodyAjv = makeAjv({ coerceTypes: false, useDefaults: false, removeAdditional: false, discriminator: true })
  // 'array' also wraps a single query value into an array where the schema wants one (?id=1).
  const partsAjv = makeAjv({ coerceTypes: 'array', useDefaults: true, removeAdditional: false })
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : partsAjv).compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>
  app.setValidatorCompiler(compiler)
  app.setSchemaErrorFormatter((errors, dataVar) => {
    const details = errors.map((e) => ({
      path: clipText(dataVar === 'body' ? bodyPath(e.instancePath, e.keyword, e.params) : describeParam(e.instancePath, e.params)),
      message: clipText(describeError(e.keyword, e.message, e.params))
    }))
    const first = details[0]
    const where = dataVar === 'querystring' ? 'query' : dataVar
    return new AppError('validation_failed', `invalid ${where}: ${first ? `${first.path} ${first.message}` : 'malformed'}`, { details })
  })

  installIntegerGuard(app)
  installBodylessGuard(app)
}

/**
 * An operation without a body schema takes no body: a body is 400 before it is read, so such an
 * operation never answers 413 or 415 about a body it would ignore (its documented statuses stay
 * exact). An empty body (`Content-Length: 0`) is no body.
 */
function installBodylessGuard (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if ((route.schema as FastifySchema | undefined)?.body !== undefined) return
    // Not async: a promise per request for every GET costs more than the check (docs/performance.md).
    const guard: preParsingHookHandler = (request, _reply, payload, done) => {
      const length = request.headers['content-length']
      if (request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) {
        done(new AppError('validation_failed', `${request.method} ${request.routeOptions.url ?? ''} takes no body; send none`, { details: [{ path: '/', message: 'must be absent' }] }))
        return
      }
      done(null, payload)
    }
    const existing = route.preParsing
    route.preParsing = existing === undefined ? [guard] : [...(Array.isArray(existing) ? existing : [existing]), guard]
  })
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
    if (params.pattern === NAME_PATTERN) return 'must not be blank, and must not contain control characters (U+0000 to U+001F)'
    if (params.pattern === NO_CONTROLS) return 'must not contain control characters (U+0000 to U+001F)'
    if (params.pattern === MULTILINE_TEXT) return 'must not contain control characters (U+0000 to U+001F) other than tab, line feed and carriage return'
    if (params.pattern === HEADER_TEXT) return 'must not contain control characters (U+0000 to U+001F) other than tab'
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
    if (item?.type === 'integer') fields.push({ name, int64: item.format === 'int64', maximum: typeof item.maximum === 'number' ? item.maximum : undefined })
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
    // Not async, as the bodyless guard above.
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
    route.preValidation = existing === undefined ? [guard] : [...(Array.isArray(existing) ? existing : [existing]), guard]
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
      else if (!int64 && !Number.isSafeInteger(Number(v))) details.push({ path: clipText(path), message: maximum === undefined ? DECIMAL_MESSAGE : `must be <= ${maximum}` })
    })
  }
  const first = details[0]
  if (first === undefined) return
  throw new AppError('validation_failed', clipText(`invalid ${where}: ${first.path} ${first.message}`), { details })
}

/**
 * The JSON body parser. JSON.parse is used as is, except that integer literals beyond 2^53 are
 * checked exactly against the int64 range (with the reviver's source text, Node 22+): JSON.parse
 * would silently round 9223372036854775808 to a value that passes a `maximum` check. The
 * reviver only runs when the text has a run of 16+ digits, so ordinary bodies pay nothing.
 */
export function parseJsonBody (text: string): unknown {
  if (text.length === 0 || /^\s*$/.test(text)) throw new AppError('validation_failed', 'the body is empty; send a JSON document')
  try {
    if (!/\d{16}/.test(text)) return JSON.parse(text)
    return JSON.parse(text, int64Reviver as (this: unknown, key: string, value: unknown) => unknown)
  } catch (error) {
    if (error instanceof AppError) throw error
    throw new AppError('validation_failed', 'the body is not valid JSON')
  }
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
