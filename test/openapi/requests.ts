// Requests built from the OpenAPI document's examples: every operation, in document order,
// with the example of each parameter and body (what a generated contract test sends). Shared by
// the examples test and the route x status coverage test.
import { openApiDocument } from '../../src/cli/openapi.ts'

export type Schema = Record<string, unknown>
export type Media = { schema?: Schema; example?: unknown; examples?: Record<string, { value: unknown }> }
export type Parameter = {
  name: string
  in: 'path' | 'query' | 'header'
  schema: Schema
  example?: unknown
  examples?: Record<string, { value: unknown }>
}
export type Operation = {
  operationId: string
  parameters?: Parameter[]
  requestBody?: { content: Record<string, Media> }
  responses: Record<string, { content?: Record<string, Media> }>
  security?: unknown[]
}
export type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } }

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

export async function loadDoc (): Promise<Doc> {
  return JSON.parse(await openApiDocument()) as Doc
}

export function operations (doc: Doc): { path: string; method: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).filter(([method]) => METHODS.includes(method)).map(([method, op]) => ({ path, method, op })))
}

/** The first example of a parameter or media type, or of the schema it refers to. */
export function exampleOf (
  doc: Doc,
  holder: { schema?: Schema; example?: unknown; examples?: Record<string, { value: unknown }> }
): { found: boolean; value: unknown } {
  if (holder.example !== undefined) return { found: true, value: holder.example }
  const first = holder.examples === undefined ? undefined : Object.values(holder.examples)[0]
  if (first !== undefined) return { found: true, value: first.value }
  let schema = holder.schema
  const ref = schema?.$ref
  if (typeof ref === 'string') schema = doc.components.schemas[ref.split('/').pop()!]
  if (schema?.example !== undefined) return { found: true, value: schema.example }
  return { found: false, value: undefined }
}

export interface ExampleRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  headers: Record<string, string>
  payload?: string
}

/** The operation's request with every example filled in (JSON body and its content type). */
export function exampleRequest (doc: Doc, path: string, method: string, op: Operation): ExampleRequest {
  let url = '/v1' + path
  const query = new URLSearchParams()
  const headers: Record<string, string> = {}
  for (const parameter of op.parameters ?? []) {
    const { value } = exampleOf(doc, parameter)
    if (parameter.in === 'path') url = url.replace(`{${parameter.name}}`, encodeURIComponent(String(value)))
    else if (parameter.in === 'query') {
      for (const v of Array.isArray(value) ? value : [value]) query.append(parameter.name, String(v))
    } else headers[parameter.name] = String(value)
  }
  const media = op.requestBody?.content['application/json']
  const body = media === undefined ? undefined : exampleOf(doc, media).value
  return {
    method: method.toUpperCase() as ExampleRequest['method'],
    url: query.size > 0 ? `${url}?${query.toString()}` : url,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    ...(body !== undefined && { payload: JSON.stringify(body) })
  }
}
