// The MCP tools, generated from the route table: one tool per /v1 operation, named by its
// operationId, its input the operation's own path, query and body schemas, its description the
// operation's summary and description, marked deprecated where the operation is. Nothing is
// declared twice: the routes are read as they are declared (onRoute), the same objects Fastify
// validates with and the document is made from.
import type { FastifyInstance, RouteOptions } from 'fastify'
import type { Role } from '../accounts/plans.ts'
import { missingAccess, type Scope, type ScopeNeed } from '../accounts/scopes.ts'
import { isApiPath } from '../shared/api-path.ts'
import { CURSOR_DESCRIPTION, outputSchemaOf, pagingOf, type Paging } from './output-schema.ts'

type JsonSchema = Record<string, unknown>

/** One operation, as a tool. */
export interface Tool {
  name: string
  /** The operation's summary. */
  title: string
  /** The operation's own description (the route schema's), without the document's additions. */
  description: string
  inputSchema: JsonSchema
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: false }
  /** What the call does over HTTP. */
  method: string
  /** The route's path, with `:name` parameters. */
  url: string
  role: Role
  /** What a restricted key needs to call it (the route's `config.scope`). */
  scope: ScopeNeed
  pathParams: readonly string[]
  queryParams: readonly string[]
  hasBody: boolean
  /** The operation takes an Idempotency-Key (a create). */
  idempotent: boolean
  /** The operation takes If-Match. */
  ifMatch: boolean
  deprecated: boolean
  /** What the result's structured content holds: the operation's answer or its refusal (output-schema.ts). */
  outputSchema: JsonSchema
  /** A list whose result carries the next page's cursor: 'feed' when every page does (listEvents). */
  paging: Paging
  /** The operation costs no quota (route config `quota: 'free'`). */
  free: boolean
}

const propertiesOf = (schema: unknown): Record<string, JsonSchema> =>
  (schema as { properties?: Record<string, JsonSchema> } | undefined)?.properties ?? {}
const requiredOf = (schema: unknown): string[] => (schema as { required?: string[] } | undefined)?.required ?? []

/** Strips TypeBox's symbols and the document-only keys, so a tool's schema is plain JSON Schema. */
function plain (schema: unknown): JsonSchema {
  return JSON.parse(JSON.stringify(schema)) as JsonSchema
}

/** The tool of one route, or null for a route that is not an operation (no operationId, a HEAD twin). */
export function toolOf (route: Pick<RouteOptions, 'method' | 'url' | 'schema' | 'config'>): Tool | null {
  const schema = route.schema as ({
    operationId?: string
    summary?: string
    description?: string
    params?: unknown
    querystring?: unknown
    body?: unknown
    headers?: unknown
    response?: Record<string, unknown>
    hide?: boolean
    deprecated?: boolean
  } | undefined)
  const method = Array.isArray(route.method) ? route.method[0]! : route.method
  const config = route.config as {
    role?: Role
    scope?: ScopeNeed
    quota?: 'free'
    lifecycle?: { deprecatedAt?: unknown }
  } | undefined
  if (schema?.operationId === undefined || schema.hide === true || config?.role === undefined
    || method === 'HEAD') return null
  const params = propertiesOf(schema.params)
  const query = propertiesOf(schema.querystring)
  const headers = propertiesOf(schema.headers)
  const properties: Record<string, JsonSchema> = {}
  const required: string[] = []
  for (const [name, property] of Object.entries({ ...params, ...query })) properties[name] = plain(property)
  required.push(...requiredOf(schema.params), ...requiredOf(schema.querystring))
  // The REST cursor's description points to the Link header, which an agent never sees.
  const paging = pagingOf(schema.response)
  if (paging !== null && properties.cursor !== undefined) {
    properties.cursor = { ...properties.cursor, description: CURSOR_DESCRIPTION }
  }
  if (schema.body !== undefined) {
    properties.body = plain(schema.body)
    if ((route.config as { optionalBody?: true } | undefined)?.optionalBody !== true) required.push('body')
  }
  const idempotent = 'idempotency-key' in headers
  const ifMatch = 'if-match' in headers
  if (idempotent) {
    properties.idempotencyKey = { ...plain(headers['idempotency-key']), description: 'Makes a retry safe across sessions; when absent, one is derived from the session, the tool and its arguments.' }
  }
  if (ifMatch) properties.ifMatch = { ...plain(headers['if-match']), description: 'The ETag the change applies to (If-Match).' }
  const deprecated = schema.deprecated === true || config.lifecycle?.deprecatedAt !== undefined
  const summary = schema.summary ?? schema.operationId
  return {
    name: schema.operationId,
    title: summary,
    // The tool's full text is made with the document's prose (mcp/describe.ts).
    description: schema.description ?? '',
    inputSchema: { type: 'object', properties, ...(required.length > 0 && { required }), additionalProperties: false },
    annotations: {
      readOnlyHint: method === 'GET',
      destructiveHint: method === 'DELETE' || /revoke/i.test(schema.operationId),
      idempotentHint: method === 'PUT' || method === 'GET' || method === 'DELETE' || idempotent,
      openWorldHint: false
    },
    method,
    url: route.url,
    // Role none (POST /keys/leaked) needs no key; through MCP, any key may call it.
    role: (config.role as string) === 'none' ? 'customer' : config.role,
    scope: config.scope ?? null,
    pathParams: Object.keys(params),
    queryParams: Object.keys(query),
    hasBody: schema.body !== undefined,
    idempotent,
    ifMatch,
    deprecated,
    outputSchema: outputSchemaOf(schema.response, { paging, deprecated }),
    paging,
    free: config.quota === 'free'
  }
}

/**
 * Whether a key may call the tool: its role, and a restricted key's scopes, as the access step
 * would decide the operation (access/refusals.ts), so tools/list offers only what would be served.
 */
export function mayCall (
  tool: Pick<Tool, 'role' | 'scope'>,
  caller: { role: Role; scopes: ReadonlySet<Scope> | null } | null
): boolean {
  return caller !== null && missingAccess(caller, tool) === null
}

/** Collects the tools of the /v1 routes as they are declared; install before the routes. */
export function collectTools (app: FastifyInstance): Tool[] {
  const tools: Tool[] = []
  app.addHook('onRoute', (route) => {
    if (!isApiPath(route.url)) return
    const tool = toolOf(route)
    if (tool !== null && !tools.some((t) => t.name === tool.name)) tools.push(tool)
  })
  return tools
}
