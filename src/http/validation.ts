// Request validation: one Ajv for bodies, one for the path, query and headers.
//
// Fastify's default Ajv coerces types and strips unknown properties everywhere. docs/product.md 5.5
// says JSON bodies are never coerced ("7" is not an integer) and unknown fields are rejected, so
// bodies get a strict Ajv; path and query values are strings on the wire and must be coerced.
import { Ajv, type Options as AjvOptions } from 'ajv'
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats'
import type { FastifyInstance, FastifyRequest, FastifySchema, FastifySchemaCompiler } from 'fastify'
import { AppError, clipText } from '../errors.ts'

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

  installInt64Guard(app)
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
    const guard = async (request: FastifyRequest) => {
      const length = request.headers['content-length']
      if (request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) {
        throw new AppError('validation_failed', `${request.method} ${request.routeOptions.url ?? ''} takes no body; send none`, { details: [{ path: '/', message: 'must be absent' }] })
      }
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
  if (keyword === 'pattern' && params.pattern === '\\S') return 'must not be blank'
  if (keyword === 'discriminator') return 'must be one of the documented values'
  return message ?? 'is invalid'
}

/**
 * Identifiers are int64. Path and query values are coerced to numbers after this check, which
 * loses precision past 2^53, so the exact range check runs on the raw string first: any int64
 * passes (a missing record is then 404), anything else is 400. Ajv's coercion alone would also
 * take "1e3" or " 7". Values past 2^53 are never ids we assigned, and the services treat them
 * as absent.
 */
const INT64_TEXT = /^-?(0|[1-9][0-9]{0,18})$/
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

export function isInt64Text (text: string): boolean {
  if (!INT64_TEXT.test(text)) return false
  if (text.length < 18) return true
  const n = BigInt(text)
  return n >= INT64_MIN && n <= INT64_MAX
}

function int64Fields (schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, { format?: string; items?: { format?: string } }> } | undefined)?.properties
  if (properties === undefined) return []
  return Object.keys(properties).filter((k) => properties[k]?.format === 'int64' || properties[k]?.items?.format === 'int64')
}

function installInt64Guard (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as FastifySchema | undefined
    const pathFields = int64Fields(schema?.params)
    const queryFields = int64Fields(schema?.querystring)
    if (pathFields.length === 0 && queryFields.length === 0) return
    const guard = async (request: { params: unknown; query: unknown }) => {
      checkInt64(request.params as Record<string, unknown>, pathFields)
      checkInt64(request.query as Record<string, unknown>, queryFields)
    }
    const existing = route.preValidation
    route.preValidation = existing === undefined ? [guard] : [...(Array.isArray(existing) ? existing : [existing]), guard]
  })
}

function checkInt64 (values: Record<string, unknown>, fields: string[]): void {
  for (const field of fields) {
    const value = values[field]
    // A repeated query parameter (?id=1&id=2) arrives as an array: every element must pass.
    if ((Array.isArray(value) ? value : [value]).some((v) => typeof v === 'string' && !isInt64Text(v))) {
      throw new AppError('validation_failed', `invalid ${field}: must be a 64-bit integer`, { details: [{ path: field, message: 'must be a 64-bit integer' }] })
    }
  }
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
