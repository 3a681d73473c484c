// Schemas shared by every resource. A schema with a `title` becomes a named component of the
// OpenAPI document (see openapi/openapi.ts), so the title is the public name of the shape.
import { Type, type TSchema, type TUnsafe } from 'typebox'
import { ERROR_CATALOGUE, MAX_DETAIL_TEXT, MAX_ERROR_DETAILS, type ErrorCode } from '../errors.ts'

/**
 * The largest id the API accepts: 2^53 - 1. Ids are int64 on the wire (docs/product.md section 5), but a
 * JavaScript number holds integers exactly only up to 2^53 - 1, and every id we assign stays
 * far below it. So a larger id is refused (400 validation_failed, from `maximum`) instead of
 * being rounded to a neighbour and addressing the wrong record (docs/product.md section 9).
 * Coerced path and query values past 2^53 round to 2^53 or more, and so do body literals, so
 * the `maximum` check can never let a rounded value through.
 */
export const MAX_ID = Number.MAX_SAFE_INTEGER

/**
 * Whether a number is an id the API accepts (Int64's range, 1 to MAX_ID). A request's ids are
 * checked by its schema; this is for the callers no schema checks (the CLI reaches the key
 * service directly): an id out of the range names no record.
 */
export const isStorableId = (id: number): boolean => Number.isInteger(id) && id >= 1 && id <= MAX_ID

/** Integer identifiers: int64, 1 to 2^53 - 1 (see MAX_ID). */
export const Int64 = (options: { description?: string; examples?: number[] } = {}) =>
  Type.Integer({ format: 'int64', minimum: 1, maximum: MAX_ID, ...options })

/**
 * How an integer is written in a path, a query or a header (docs/product.md 5.10): decimal
 * digits only, so `0x10`, `1e1`, `+1`, `01`, `1.0`, `Infinity` and padded digits are 400
 * validation_failed (http/validation.ts applies it before the bounds). Every integer parameter's
 * description ends with it, so the document says it too.
 */
export const DECIMAL_RULE = 'Decimal digits only: no sign, no leading zero, no spaces.'

/** An integer parameter's description, with the decimal rule. */
export const paramDescription = (description: string) => `${description} ${DECIMAL_RULE}`

/** An identifier in a path or a query (the decimal rule applies). */
export const IdParam = (description: string, examples?: number[]) =>
  Int64({ description: paramDescription(description), ...(examples !== undefined && { examples }) })

/** The query of an operation that takes no query parameter: any parameter is 400. */
export const NoQuery = Type.Object({}, { additionalProperties: false })

/**
 * A string enumeration as OpenAPI 3.0 writes it (`enum`), not TypeBox's union of `const`
 * literals, which 3.0.3 does not have. The generic keeps the literal type for Static<>.
 */
export function StringEnum<const T extends readonly string[]> (
  values: T,
  options: { title?: string; description?: string; examples?: T[number][] } = {}
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options })
}

/**
 * Control characters in text (docs/product.md 5.11). PostgreSQL refuses U+0000 in text (a 500
 * before this rule) and SQLite stores it, so the schemas refuse it, with the other C0 controls,
 * DEL (U+007F) and the C1 controls (U+0080 to U+009F: a terminal may take U+009B for an escape),
 * on both engines alike: 400 validation_failed. Each pattern scans the text once (no nested
 * repetition, so no backtracking blow-up on a 64 KiB body); http/validation.ts words its error.
 * Lone surrogates never reach a pattern: the body parser refuses them (http/validation.ts).
 * - NO_CONTROLS: names, key names, filters, cursors: no control character at all;
 * - MULTILINE_TEXT: descriptions: tab, line feed and carriage return allowed, no other control;
 * - HEADER_TEXT: request header values: tab allowed (HTTP's own white space), no other.
 */
export const NO_CONTROLS = '^[^\\u0000-\\u001F\\u007F-\\u009F]*$'
export const MULTILINE_TEXT = '^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*$'
export const HEADER_TEXT = '^[^\\u0000-\\u0008\\u000A-\\u001F\\u007F-\\u009F]*$'
/** A visible character somewhere, and no control character (the lookahead scans once). */
export const NAME_PATTERN = '^(?=[\\s\\S]*\\S)[^\\u0000-\\u001F\\u007F-\\u009F]*$'
/** The ranges the patterns refuse, as their messages name them. */
export const CONTROL_RANGES = 'U+0000 to U+001F, U+007F to U+009F'

/**
 * Names count characters (code points; JSON Schema's maxLength does), must not be blank and hold
 * no control character.
 */
export const Name = (description: string) =>
  Type.String({ minLength: 1, maxLength: 100, pattern: NAME_PATTERN, description })

export const ErrorSchema = Type.Object({
  code: StringEnum(Object.keys(ERROR_CATALOGUE) as ErrorCode[], { description: 'Machine-readable error code, from the catalogue in the API description.' }),
  message: Type.String({ description: 'Human-readable description of the error.' }),
  status: Type.Integer({ description: 'The HTTP status code.' }),
  requestId: Type.String({ description: 'The request id, also sent as the Request-Id header; quote it when reporting a problem.' }),
  details: Type.Optional(Type.Array(Type.Object({
    path: Type.String({ description: 'JSON Pointer to the offending field, or the parameter name.' }),
    message: Type.String()
  }, { additionalProperties: false }), { maxItems: MAX_ERROR_DETAILS, description: `Field-level problems (validation_failed), at most ${MAX_ERROR_DETAILS}; paths and messages are cut to ${MAX_DETAIL_TEXT} characters.` })),
  detailsTotal: Type.Optional(Type.Integer({ minimum: MAX_ERROR_DETAILS + 1, description: `How many problems were found, when there were more than the ${MAX_ERROR_DETAILS} listed in details.` }))
}, { title: 'Error', additionalProperties: false })

/** The query of every paginated list. */
export const PageQuery = {
  limit: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 20,
    description: paramDescription('Page size, 1 to 100.'),
    examples: [20]
  })),
  // The example is the cursor of "after id 0", i.e. the first page: a real cursor, so a request
  // built from the examples succeeds.
  cursor: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 200,
    pattern: NO_CONTROLS,
    description: 'Opaque cursor from the `Link: rel="next"` header of the previous page.',
    examples: ['djE6MA']
  }))
}

/** Response header declarations (@fastify/swagger turns them into OpenAPI response headers). */
export const ETagHeader = { etag: Type.String({ description: 'The version of the record; send it back in If-Match to update only that version.' }) }
export const LocationHeader = { location: Type.String({ description: 'The URL of the created record.' }) }
export const LinkHeader = { link: Type.String({ description: 'The next page, as `<URL>; rel="next"`; absent on the last page.' }) }

/**
 * A response: its schema, the response's own description (kept apart from the schema's, which
 * describes the shape) and its particular headers.
 */
export const Reply = <T extends TSchema>(description: string, schema: T, headers?: Record<string, TSchema>): T =>
  ({ ...schema, 'x-response-description': description, ...(headers !== undefined && { headers }) })

/** A response without a body. */
export const NoContent = (description: string) => ({ type: 'null', 'x-response-description': description }) as const

/** Request headers of an operation that honours If-Match (its 412 says when the version is stale). */
export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ minLength: 1, maxLength: 1000, pattern: HEADER_TEXT, description: 'Apply the change only to this version: the `ETag` of a read (`"3"`), several of them (`"3", "4"`), or `*` (any version). A version that is no longer current is `412 precondition_failed`.', examples: ['*'] }))
})

/** An Idempotency-Key: 1 to 255 visible ASCII characters (the schema, and routing/conditional.ts for the claim). */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7e]{1,255}$'

/**
 * Request headers of an operation that honours Idempotency-Key. The example differs per
 * operation: a key is bound to one operation and body, so one example shared by two creates
 * would be a reuse (409) when a generated test sends both.
 */
export const idempotencyKeyHeaders = (example: string) => Type.Object({
  'idempotency-key': Type.Optional(Type.String({ pattern: IDEMPOTENCY_KEY_PATTERN, description: 'Makes the create safe to retry: 1 to 255 visible ASCII characters, unique per intended create (a UUID is a good choice). Remembered for 24 hours.', examples: [example] }))
})
