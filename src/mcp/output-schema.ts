// What a tool's result holds, read from the operation's own response schemas: the outputSchema of
// the tool (MCP 2025-06-18), and whether the operation is a list an agent pages through. A result's
// structured content is the operation's answer (`data`, with its `etag`, the next page's cursor and
// a deprecated operation's notice) or its refusal (`error`, with `retryAfter` and the windows of a
// 429): the official SDK's client checks whichever it gets against this schema, so it takes both.

type JsonSchema = Record<string, unknown>

/** A list: 'pages' when a next page may follow, 'feed' when every page names the next (a feed to poll). */
export type Paging = 'pages' | 'feed' | null

/** The description of a list tool's `cursor` argument (the REST one points to the Link header). */
export const CURSOR_DESCRIPTION = 'The previous result\'s `nextCursor`; absent for the first page.'

/**
 * The keywords a result's shape keeps: what a value is and which fields it has. tools/list carries
 * every tool's output schema and an agent pays for each of its bytes: bounds, patterns, titles,
 * int64's format, examples, the fields' prose and which fields are required are the document's
 * (/openapi.json), and an agent reading a result (where each field is, or is not) needs none of
 * them. Dropping a keyword only widens what the schema takes, so the SDK's client still accepts
 * every answer (it checks each result against this schema).
 */
const SHAPE_KEYWORDS = new Set(['type', 'properties', 'items', 'enum', 'const', 'anyOf', 'oneOf', 'allOf', 'format', 'nullable', 'additionalProperties'])

/** Formats that say what a text is (a date, a URL); int64 and int32 only repeat `integer`. */
const TEXT_FORMATS = new Set(['date-time', 'date', 'uri', 'email', 'uuid'])

/**
 * A response schema as a shape (SHAPE_KEYWORDS). Its description goes too: the tool's says what
 * the operation answers.
 */
function shape (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map((item) => shape(item))
  if (schema === null || typeof schema !== 'object') return schema
  const out: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(schema)) {
    if (!SHAPE_KEYWORDS.has(name)) continue
    if (name === 'format' && !TEXT_FORMATS.has(String(value))) continue
    // additionalProperties: false only forbids; a schema (a map's values) says what the values are.
    if (name === 'additionalProperties' && typeof value === 'boolean') continue
    // `properties` maps names to schemas: a property may be called `type` or `format`.
    out[name] = name === 'properties'
      ? Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, shape(v)]))
      : shape(value)
  }
  return nullable(collapsed(out))
}

/**
 * `anyOf: [X, { type: 'null' }]` (TypeBox's Nullable) as X with `null` among its types: the same
 * values, in half the text. Not for an enumeration or a const, whose values would then leave null out.
 */
function nullable (schema: Record<string, unknown>): Record<string, unknown> {
  const union = schema.anyOf
  if (!Array.isArray(union) || union.length !== 2) return schema
  const [value, none] = union as Array<Record<string, unknown>>
  if (none?.type !== 'null' || Object.keys(none).length !== 1 || typeof value?.type !== 'string') return schema
  if (['enum', 'const', 'anyOf', 'oneOf'].some((keyword) => value[keyword] !== undefined)) return schema
  const { anyOf: _union, ...rest } = schema
  return { ...rest, ...value, type: [value.type, 'null'] }
}

/** The values of a property that is a single-valued enumeration or a const in a branch. */
function tagOf (schema: unknown): unknown[] | null {
  const s = schema as { enum?: unknown[]; const?: unknown } | undefined
  if (s?.const !== undefined) return [s.const]
  return Array.isArray(s?.enum) && s.enum.length === 1 ? s.enum : null
}

/**
 * A union of objects told apart by a tag (the event union: one branch per `type`, each with its
 * own `data`) as one object: the tag's values listed, a field the branches agree on kept, one
 * they do not given its types only and said to depend on the tag. The event union was 16 KB in
 * each of listEvents and getEvent; GET /v1/event_types (listEventTypes) gives each type's data.
 * Every branch's value still fits, so the SDK's check of a result still passes.
 */
function collapsed (schema: Record<string, unknown>): Record<string, unknown> {
  const key = Array.isArray(schema.oneOf) ? 'oneOf' : Array.isArray(schema.anyOf) ? 'anyOf' : null
  if (key === null) return schema
  const branches = schema[key] as Array<{ type?: unknown; properties?: Record<string, unknown> }>
  if (branches.length < 2 || !branches.every((b) => b.type === 'object' && b.properties !== undefined)) return schema
  const names = [...new Set(branches.flatMap((b) => Object.keys(b.properties!)))]
  const tag = names.find((name) => branches.every((b) => tagOf(b.properties![name]) !== null))
  if (tag === undefined) return schema
  const properties: Record<string, unknown> = {}
  for (const name of names) {
    const values = branches.map((b) => b.properties![name]).filter((v) => v !== undefined)
    const texts = new Set(values.map((v) => JSON.stringify(v)))
    if (name === tag) {
      const { type } = values[0] as { type?: unknown }
      properties[name] = { ...(type !== undefined && { type }), enum: [...new Set(values.flatMap((v) => tagOf(v)!))] }
    } else if (texts.size === 1) {
      // The same in every branch that has it (some may not: it is then absent).
      properties[name] = values[0]
    } else {
      const types = values.map((v) => (v as { type?: unknown }).type)
      const distinct = [...new Set(types.flat())]
      properties[name] = {
        ...(types.every((t) => t !== undefined) && { type: distinct.length === 1 ? distinct[0] : distinct }),
        description: `Depends on \`${tag}\`.`
      }
    }
  }
  const { [key]: _union, ...rest } = schema
  return { ...rest, type: 'object', properties }
}

/** The response schema of each 2xx status the route declares, and the headers it documents with it. */
function successes (
  responses: Record<string, unknown> | undefined
): Array<{ schema: JsonSchema; headers: JsonSchema }> {
  return Object.entries(responses ?? {})
    .filter(([status]) => /^2/.test(status))
    .map(([, declared]) => {
      // Reply() (shared/schemas.ts) keeps the response's own description and its headers beside the
      // schema: neither is part of the shape.
      const { headers, ...schema } = JSON.parse(JSON.stringify(declared)) as JsonSchema
      return { schema: shape(schema) as JsonSchema, headers: (headers ?? {}) as JsonSchema }
    })
}

/**
 * Whether the operation pages: its answer documents a `Link` to the next page. A feed's link is on
 * every page, the last and empty ones included (its description says so: events/events.schema.ts),
 * so that a consumer polls it for what comes later.
 */
export function pagingOf (responses: Record<string, unknown> | undefined): Paging {
  const link = successes(responses).map((s) => s.headers.link as JsonSchema | undefined).find((l) => l !== undefined)
  if (link === undefined) return null
  return /\bevery page\b/i.test(String(link.description ?? '')) ? 'feed' : 'pages'
}

const DEPRECATION: JsonSchema = {
  type: 'object',
  properties: {
    since: { type: 'string', format: 'date-time' },
    sunset: { type: 'string', format: 'date-time' },
    successor: { type: 'string' },
    notice: { type: 'string' }
  }
}

/**
 * The tool's outputSchema: its result's structured content, an answer or a refusal. Written out
 * whole, with no `$defs`: clients that cannot follow a `$ref` (Copilot CLI, Kiro, opencode, the
 * Inspector's form) list no tool at all from a schema that has one.
 */
export function outputSchemaOf (
  responses: Record<string, unknown> | undefined,
  { paging, deprecated }: { paging: Paging; deprecated: boolean }
): JsonSchema {
  const answers = successes(responses)
  const data: JsonSchema = answers.length === 1
    ? answers[0]!.schema
    : { anyOf: answers.map((a) => a.schema) }
  const properties: Record<string, JsonSchema> = { status: { type: 'integer' }, data }
  if (answers.some((a) => a.headers.etag !== undefined)) {
    // What it is for is said once, in the server's instructions.
    properties.etag = { type: 'string' }
  }
  if (paging !== null) properties.nextCursor = { type: 'string' }
  if (deprecated) properties.deprecation = DEPRECATION
  // A refusal (isError) has `error` instead of `data`, and for a 429 `retryAfter`, `windows` and
  // `exhaustedWindow`: the same in every tool, so said once, in the server's instructions
  // (instructions.ts); the schema leaves room for them (no additionalProperties: false, nothing
  // required), and the SDK's client, which checks a refusal against it too, takes them.
  return { type: 'object', properties }
}
