// What a tool's result holds, read from the operation's own response schemas: the outputSchema of
// the tool (MCP 2025-06-18), and whether the operation is a list an agent pages through. A result's
// structured content is the operation's answer (`data`, with its `etag`, the next page's cursor and
// a deprecated operation's notice) or its refusal (`error`, with `retryAfter` and the windows of a
// 429): the official SDK's client checks whichever it gets against this schema, so it names both.

type JsonSchema = Record<string, unknown>

/** A list: 'pages' when a next page may follow, 'feed' when every page names the next (a feed to poll). */
export type Paging = 'pages' | 'feed' | null

/** The description of a list tool's `cursor` argument (the REST one points to the Link header). */
export const CURSOR_DESCRIPTION = 'Where this page starts: the `nextCursor` of the previous result, with the other arguments unchanged. Absent for the first page.'

/**
 * A response schema as a shape: its types, formats, bounds and names, without what only describes
 * (examples, the fields' descriptions, the document's `x-…` keys). A tools/list carries every
 * tool's output schema, and the prose is the document's (/openapi.json): with it, the event union
 * alone was 50 KB, twice (listEvents and getEvent). The shape's own description stays.
 */
function shape (schema: unknown, top = true): unknown {
  if (Array.isArray(schema)) return schema.map((item) => shape(item, false))
  if (schema === null || typeof schema !== 'object') return schema
  const out: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(schema)) {
    if (name === 'examples' || name === 'example' || name.startsWith('x-') || (name === 'description' && !top)) continue
    // `properties` maps names to schemas: a property may be called `examples` or `description`.
    out[name] = name === 'properties'
      ? Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, shape(v, false)]))
      : shape(value, false)
  }
  return out
}

/**
 * The schema with each named shape (a `title`) that it holds more than once written once, in
 * `$defs`, and referred to: the event union repeats the API key record and the order in five
 * branches each. Only a title that names one shape everywhere is shared.
 */
function sharingShapes (schema: JsonSchema): JsonSchema {
  const seen = new Map<string, { text: string; count: number } | null>()
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) { node.forEach(visit); return }
    if (node === null || typeof node !== 'object') return
    const { title } = node as { title?: unknown }
    if (typeof title === 'string' && node !== schema) {
      const text = JSON.stringify(node)
      const entry = seen.get(title)
      if (entry === undefined) seen.set(title, { text, count: 1 })
      else if (entry !== null) seen.set(title, entry.text === text ? { text, count: entry.count + 1 } : null)
    }
    Object.values(node).forEach(visit)
  }
  visit(schema)
  const shared = new Set([...seen].filter(([, e]) => e !== null && e.count > 1).map(([title]) => title))
  if (shared.size === 0) return schema
  const defs: Record<string, unknown> = {}
  const rewrite = (node: unknown, top = false): unknown => {
    if (Array.isArray(node)) return node.map((n) => rewrite(n))
    if (node === null || typeof node !== 'object') return node
    const rebuilt = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, rewrite(v)]))
    const { title } = node as { title?: unknown }
    if (top || typeof title !== 'string' || !shared.has(title)) return rebuilt
    defs[title] = rebuilt
    return { $ref: `#/$defs/${title}` }
  }
  const out = rewrite(schema, true) as JsonSchema
  return { ...out, $defs: defs }
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

/** The refusal's part of a result, as mcp/results.ts builds it (short: every tool's schema has it). */
const REFUSAL_PROPERTIES: Record<string, JsonSchema> = {
  error: { type: 'object', description: 'A refusal (`isError`): the error object of REST (`code`, `message`, `details`).' },
  retryAfter: { type: 'integer', description: 'A 429 or 503: seconds to wait.' },
  windows: { type: 'object', description: 'A 429: each quota window, its calls left (`remaining`) and seconds to `reset`.' },
  exhaustedWindow: { type: 'string', description: 'A 429: the window used up.' }
}

const DEPRECATION: JsonSchema = {
  type: 'object',
  description: 'This operation is deprecated (REST sends it as the Deprecation, Sunset and Link headers): since when, when it stops working, and what replaces it.',
  properties: {
    since: { type: 'string', format: 'date-time' },
    sunset: { type: 'string', format: 'date-time', description: 'After it, the call answers `410 operation_sunset`.' },
    successor: { type: 'string', description: 'The operation to use instead (`GET /v1/pets?id=1`).' },
    notice: { type: 'string' }
  },
  required: ['since', 'notice']
}

/** The tool's outputSchema: its result's structured content, an answer or a refusal. */
export function outputSchemaOf (
  responses: Record<string, unknown> | undefined,
  { paging, deprecated }: { paging: Paging; deprecated: boolean }
): JsonSchema {
  const answers = successes(responses)
  const data: JsonSchema = answers.length === 1
    ? answers[0]!.schema
    : { anyOf: answers.map((a) => a.schema) }
  const properties: Record<string, JsonSchema> = {
    status: { type: 'integer', description: 'The operation\'s HTTP status.' },
    data: { description: 'The operation\'s answer, as REST sends it.', ...data }
  }
  if (answers.some((a) => a.headers.etag !== undefined)) {
    properties.etag = { type: 'string', description: 'The version of the record (REST\'s ETag): pass it as `ifMatch` to change only this version.' }
  }
  if (paging !== null) {
    properties.nextCursor = {
      type: 'string',
      description: paging === 'feed'
        ? 'Where the next page starts, on every page (the last and empty ones too): call again with it as `cursor` later for what came after.'
        : 'Where the next page starts: call again with it as `cursor`, the other arguments unchanged. Absent on the last page.'
    }
  }
  if (deprecated) properties.deprecation = DEPRECATION
  return sharingShapes({
    type: 'object',
    properties: { ...properties, ...REFUSAL_PROPERTIES },
    required: ['status'],
    // An answer has data (null for a 204), a refusal has error.
    anyOf: [{ required: ['data'] }, { required: ['error'] }]
  })
}
