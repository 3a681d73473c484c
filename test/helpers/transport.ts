// One operation sent through either door of the API, for suites that must hold on both: REST
// (app.inject with X-API-Key, the response checked against the document, as `call` does) or MCP
// (the official SDK client over Streamable HTTP to the listening app, the key in Authorization:
// the tool call an agent makes). `send(op, args)` takes the operationId and the tool's arguments
// (path and query parameters, `body`) and answers the same shape on both: the status, the body
// (the operation's JSON, or the error object of a refusal) and, for a 429 or 503, what the
// rate-limit headers say, read from the headers over REST and from the tool result over MCP.
import type { OutgoingHttpHeaders } from 'node:http'
import type { TestContext } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { buildTestApp, listenTestApp, type TestApp, type TestAppOptions } from './app.ts'

export type TransportName = 'rest' | 'mcp'

export interface Window { remaining: number; reset: number }

export interface Answer {
  status: number
  /** The operation's JSON (null when empty); for a refusal, the error object. */
  body: unknown
  /** A 429 or 503: Retry-After in seconds, when sent. */
  retryAfter?: number
  /** A 429 or 503: each window of the RateLimit header (remaining, seconds to reset), and the first one spent. */
  windows?: Record<string, Window>
  exhaustedWindow?: string
  /**
   * REST only: the response's own headers (light-my-request's type). A tool result has none; what
   * a test needs of them is above.
   */
  headers?: OutgoingHttpHeaders
}

export interface Caller {
  /**
   * Opens the caller's session: nothing over REST; over MCP the SDK's initialize, a charged
   * request (throws if refused).
   */
  open (): Promise<void>
  /**
   * One operation by operationId, with the tool's arguments. Over MCP a session not yet open is
   * opened first; a refused opening is the answer.
   */
  send (op: string, args?: Record<string, unknown>): Promise<Answer>
}

export interface TransportApp extends TestApp {
  transport: TransportName
  /** Charged requests an opened session costs before its first call: 1 over MCP (initialize), 0 over REST. */
  opening: number
  /** The caller holding `key`; the same one for the same key within a test. */
  caller (key: string): Caller
}

/** The quota part of a 429 or 503, from the RateLimit and Retry-After headers. */
function limitsOf (status: number, headers: OutgoingHttpHeaders): Pick<Answer, 'retryAfter' | 'windows' | 'exhaustedWindow'> {
  if (status !== 429 && status !== 503) return {}
  const out: Pick<Answer, 'retryAfter' | 'windows' | 'exhaustedWindow'> = {}
  if (headers['retry-after'] !== undefined) out.retryAfter = Number(headers['retry-after'])
  const windows: Record<string, Window> = {}
  for (const part of String(headers.ratelimit ?? '').split(',')) {
    const match = /^"(\w+)";r=(\d+);t=(\d+)$/.exec(part.trim())
    if (match !== null) windows[match[1]!] = { remaining: Number(match[2]), reset: Number(match[3]) }
  }
  if (Object.keys(windows).length > 0) {
    out.windows = windows
    const spent = Object.keys(windows).find((name) => windows[name]!.remaining === 0)
    if (spent !== undefined) out.exhaustedWindow = spent
  }
  return out
}

interface Operation { method: string; path: string }

/** operationId to method and path, read from the app's own document (servers: /v1). */
function operationsOf (api: TestApp): Map<string, Operation> {
  const document = api.app.swagger() as unknown as {
    servers: Array<{ url: string }>
    paths: Record<string, Record<string, { operationId?: string }>>
  }
  const base = document.servers[0]?.url ?? ''
  const operations = new Map<string, Operation>()
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (operation.operationId !== undefined) {
        operations.set(operation.operationId, { method: method.toUpperCase(), path: base + path })
      }
    }
  }
  return operations
}

function restCaller (api: TestApp, operations: Map<string, Operation>, key: string): Caller {
  return {
    async open () {},
    async send (op, args = {}) {
      const operation = operations.get(op)
      if (operation === undefined) throw new Error(`no operation ${op} in the document`)
      const { body, idempotencyKey, ifMatch, ...rest } = args
      const used = new Set<string>()
      const path = operation.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
        used.add(name)
        return encodeURIComponent(String(rest[name]))
      })
      const query = new URLSearchParams()
      for (const [name, value] of Object.entries(rest)) {
        if (used.has(name) || value === undefined) continue
        for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item))
      }
      const headers: Record<string, string> = {}
      if (typeof idempotencyKey === 'string') headers['idempotency-key'] = idempotencyKey
      if (typeof ifMatch === 'string') headers['if-match'] = ifMatch
      const url = query.size === 0 ? path : `${path}?${query.toString()}`
      const res = await api.call({
        method: operation.method as 'GET',
        url,
        key,
        headers,
        ...(body !== undefined && { payload: body as Record<string, unknown> })
      })
      return {
        status: res.statusCode,
        body: res.body === '' ? null : res.json(),
        ...limitsOf(res.statusCode, res.headers),
        headers: res.headers
      }
    }
  }
}

/** A refusal as MCP reports it (a tool result's structuredContent, or a JSON-RPC error's data). */
function refusalAnswer (content: Record<string, unknown>): Answer {
  return {
    status: Number(content.status),
    body: content.error,
    ...(typeof content.retryAfter === 'number' && { retryAfter: content.retryAfter }),
    ...(content.windows !== undefined && { windows: content.windows as Record<string, Window> }),
    ...(typeof content.exhaustedWindow === 'string' && { exhaustedWindow: content.exhaustedWindow })
  }
}

function mcpCaller (t: TestContext, endpoint: URL, key: string): Caller {
  let client: Client | null = null
  // An answer the endpoint refused at the HTTP level (a key it does not accept: 401 like REST),
  // seen by the transport's fetch: the SDK only throws with its text.
  let refused: Answer | undefined
  const observe: typeof fetch = async (input, init) => {
    const response = await fetch(input, init)
    // 405: the SDK's optional GET stream, which this server does not offer.
    if (!response.ok && response.status !== 405) {
      const text = await response.clone().text()
      refused = {
        status: response.status,
        body: text === '' ? null : JSON.parse(text),
        ...limitsOf(response.status, Object.fromEntries(response.headers))
      }
    }
    return response
  }

  /** Null when the session is open, else the refusal of the opening. */
  async function connect (): Promise<Answer | null> {
    const candidate = new Client({ name: 'petstore-rate-limit-suite', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(endpoint, {
      fetch: observe,
      requestInit: { headers: { authorization: `Bearer ${key}` } }
    })
    refused = undefined
    try {
      await candidate.connect(transport)
    } catch (error) {
      // Opening a session is charged like any request; its refusal comes as a JSON-RPC error
      // whose data is the refusal a tool result would carry. (The SDK has closed the client.)
      if (error instanceof McpError && typeof error.data === 'object' && error.data !== null) {
        return refusalAnswer(error.data as Record<string, unknown>)
      }
      if (refused !== undefined) return refused
      throw error
    }
    client = candidate
    t.after(() => candidate.close())
    return null
  }

  return {
    async open () {
      const refusal = await connect()
      if (refusal !== null) throw new Error(`opening the MCP session was refused: ${JSON.stringify(refusal)}`)
    },
    async send (op, args = {}) {
      if (client === null) {
        const refusal = await connect()
        if (refusal !== null) return refusal
      }
      refused = undefined
      let result: { isError?: boolean; structuredContent?: Record<string, unknown>; content?: unknown }
      try {
        result = await client!.callTool({ name: op, arguments: args }) as typeof result
      } catch (error) {
        if (refused !== undefined) return refused
        throw error
      }
      const content = result.structuredContent
        ?? JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as Record<string, unknown>
      if (result.isError === true) return refusalAnswer(content)
      return { status: Number(content.status), body: content.data }
    }
  }
}

/**
 * The test app (buildTestApp's options) and its callers through one transport. Over MCP the app
 * listens, and MCP_REPEAT_LIMIT is set to its maximum: the loop breaker refuses the same tool
 * call past 20 a minute, its own feature (test/mcp/mcp.http.test.ts), while a quota suite repeats
 * one call on purpose.
 */
export async function buildTransportApp (
  t: TestContext,
  transport: TransportName,
  options: TestAppOptions = {}
): Promise<TransportApp> {
  if (transport === 'rest') {
    const api = await buildTestApp(t, options)
    const operations = operationsOf(api)
    const callers = new Map<string, Caller>()
    return {
      ...api,
      transport,
      opening: 0,
      caller: (key) => callers.get(key) ?? callers.set(key, restCaller(api, operations, key)).get(key)!
    }
  }
  const api = await listenTestApp(t, { ...options, env: { MCP_REPEAT_LIMIT: '10000', ...options.env } })
  const endpoint = new URL(`${api.baseUrl.slice(0, -'/v1'.length)}/mcp`)
  const callers = new Map<string, Caller>()
  return {
    ...api,
    transport,
    opening: 1,
    caller: (key) => callers.get(key) ?? callers.set(key, mcpCaller(t, endpoint, key)).get(key)!
  }
}
