// The MCP endpoint (docs/api.md, "Agents"): Streamable HTTP at /mcp, served by the official SDK's
// Server over a transport of one exchange per HTTP request, so the answer goes out through
// Fastify like any other (logs, metrics, error object, headers). Every tool call is the REST call
// it stands for, made through app.inject with the caller's own key and address: the same access
// step (role, charge to the same windows, bans), validation, usage, logs and metrics, so nothing
// about an operation is decided twice. Opening a session and listing tools are charged as one
// request each (POST /mcp/request, a hidden charged route); a tool call as the operation it runs.
import { createHash, randomUUID } from 'node:crypto'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import { PROMPTS, promptMessages } from './prompts.ts'
import { createRepeatGuard } from './repeat.ts'
import { mayCall, type Tool } from './tools.ts'

export interface McpOptions {
  tools: readonly Tool[]
  /** The document's description of an operation (prose files included), by operationId. */
  describe: (operationId: string) => string | undefined
  clock: Clock
  /** MCP_REPEAT_LIMIT: the same tool with the same arguments, per key and minute. */
  repeatLimit: number
  /** The header that marks an inner request as coming through MCP, and its per-app secret value. */
  channel: { header: string; value: string }
  version: string
}

/** One exchange: the request message in, the answer (if the message was a request) out. */
class ExchangeTransport implements Transport {
  onmessage?: Transport['onmessage']
  onclose?: () => void
  onerror?: (error: Error) => void
  readonly answer: Promise<JSONRPCMessage>
  #resolve!: (message: JSONRPCMessage) => void
  constructor () { this.answer = new Promise((resolve) => { this.#resolve = resolve }) }
  async start (): Promise<void> {}
  async send (message: JSONRPCMessage): Promise<void> { if ('id' in message) this.#resolve(message) }
  async close (): Promise<void> { this.onclose?.() }
}

const KEY_HEADERS = ['x-api-key', 'authorization'] as const

/** One JSON-RPC 2.0 message (a batch is not part of MCP's Streamable HTTP since 2025-06-18). */
const JSONRPC_MESSAGE = { type: 'object', properties: { jsonrpc: { const: '2.0' } }, required: ['jsonrpc'], additionalProperties: true }

/** Canonical JSON: keys sorted at every depth, so the same arguments give the same text. */
export function canonicalJson (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
    return `{${members.join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** The Idempotency-Key of a create called without one: the session, the tool and its arguments. */
export function derivedIdempotencyKey (session: string, tool: string, args: unknown): string {
  return `mcp-${createHash('sha256').update(`${session}\n${tool}\n${canonicalJson(args)}`).digest('base64url')}`
}

/** The path with its parameters filled in, and the query string. */
function targetOf (tool: Tool, args: Record<string, unknown>): string {
  const path = tool.url.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => encodeURIComponent(String(args[name] ?? '')))
  const query = new URLSearchParams()
  for (const name of tool.queryParams) {
    const value = args[name]
    if (value === undefined) continue
    for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item))
  }
  const text = query.toString()
  return text === '' ? path : `${path}?${text}`
}

/** What an agent can act on in a refusal: the error object, and for 429 when and which window. */
function refusalContent (status: number, body: unknown, headers: Record<string, unknown>): Record<string, unknown> {
  const error = (body as { error?: unknown } | null)?.error ?? body
  const out: Record<string, unknown> = { status, error }
  if (status === 429 || status === 503) {
    const retryAfter = Number(headers['retry-after'])
    if (Number.isFinite(retryAfter)) out.retryAfter = retryAfter
    const policy = String(headers.ratelimit ?? '')
    const windows: Record<string, { remaining: number; reset: number }> = {}
    for (const part of policy.split(',')) {
      const match = /"(\w+)";r=(\d+);t=(\d+)/.exec(part.trim())
      if (match !== null) windows[match[1]!] = { remaining: Number(match[2]), reset: Number(match[3]) }
    }
    if (Object.keys(windows).length > 0) {
      out.windows = windows
      const exhausted = Object.entries(windows).find(([, w]) => w.remaining === 0)
      if (exhausted !== undefined) out.exhaustedWindow = exhausted[0]
    }
  }
  return out
}

export async function mcpRoutes (app: FastifyInstance, options: McpOptions): Promise<void> {
  const repeats = createRepeatGuard({ limit: options.repeatLimit, clock: options.clock })
  const described = new Map<string, Tool & { description: string }>()
  const toolsFor = (principal: Parameters<typeof mayCall>[1]): Array<Tool & { description: string }> => {
    if (described.size === 0) {
      for (const tool of options.tools) {
        const prose = options.describe(tool.name)
        described.set(tool.name, {
          ...tool,
          description: prose !== undefined && !tool.description.includes(prose)
            ? `${tool.description}\n\n${prose}`
            : tool.description
        })
      }
    }
    return [...described.values()].filter((tool) => mayCall(tool, principal))
  }

  /** The caller's own key headers and address, and the channel mark, for a request made in its name. */
  function innerHeaders (request: FastifyRequest): Record<string, string> {
    const headers: Record<string, string> = { [options.channel.header]: options.channel.value }
    for (const name of KEY_HEADERS) {
      const value = request.headers[name]
      if (typeof value === 'string') headers[name] = value
    }
    if (typeof request.headers['request-id'] === 'string') headers['request-id'] = request.headers['request-id']
    return headers
  }

  /** Charges the caller one request (opening a session, listing); null when served, else the refusal. */
  async function charge (request: FastifyRequest): Promise<Record<string, unknown> | null> {
    const answer = await app.inject({ method: 'POST', url: '/mcp/request', headers: innerHeaders(request), remoteAddress: request.ip })
    if (answer.statusCode < 400) return null
    return refusalContent(answer.statusCode, answer.json(), answer.headers)
  }

  async function callTool (request: FastifyRequest, session: string, name: string, args: Record<string, unknown>) {
    // Found by role only: a restricted key calling a tool outside its scopes gets the operation's
    // own 403 insufficient_scope from the inner request, as over REST.
    const { principal } = request
    const tool = toolsFor(principal === null ? null : { ...principal, scopes: null }).find((t) => t.name === name)
    if (tool === undefined) {
      return {
        isError: true,
        content: [{
          type: 'text' as const,
          text: JSON.stringify({ status: 404, error: { code: 'not_found', message: `no tool ${name} for this key` } })
        }]
      }
    }
    const keyId = request.principal?.keyId ?? 0
    const repeated = repeats.check(keyId, name, canonicalJson(args))
    if (repeated !== null) {
      const error = { code: 'tool_call_repeated', message: `${name} was called with the same arguments ${repeated.calls} times in the last minute (limit ${options.repeatLimit}); change the arguments or wait ${repeated.retryAfter} s` }
      return {
        isError: true,
        content: [{ type: 'text' as const, text: JSON.stringify({ status: 429, error, retryAfter: repeated.retryAfter }) }],
        structuredContent: { status: 429, error, retryAfter: repeated.retryAfter }
      }
    }
    const headers = innerHeaders(request)
    const { body, idempotencyKey, ifMatch, ...rest } = args
    let payload: string | undefined
    if (tool.hasBody && body !== undefined) { headers['content-type'] = 'application/json'; payload = canonicalJson(body) }
    if (tool.idempotent) {
      headers['idempotency-key'] = typeof idempotencyKey === 'string'
        ? idempotencyKey
        : derivedIdempotencyKey(session, name, { body, ...rest })
    }
    if (tool.ifMatch && typeof ifMatch === 'string') headers['if-match'] = ifMatch
    const answer = await app.inject({
      method: tool.method as 'GET',
      url: targetOf(tool, rest),
      headers,
      ...(payload !== undefined && { payload }),
      remoteAddress: request.ip
    })
    const parsed: unknown = answer.body === '' ? null : JSON.parse(answer.body)
    if (answer.statusCode >= 400) {
      const content = refusalContent(answer.statusCode, parsed, answer.headers)
      return {
        isError: true,
        content: [{ type: 'text' as const, text: JSON.stringify(content) }],
        structuredContent: content
      }
    }
    const result = {
      status: answer.statusCode,
      ...(typeof answer.headers.etag === 'string' && { etag: answer.headers.etag }),
      data: parsed
    }
    return { content: [{ type: 'text' as const, text: JSON.stringify(result) }], structuredContent: result }
  }

  /** A server for one exchange, in the caller's name. */
  async function serverFor (request: FastifyRequest, session: string): Promise<Server> {
    // The SDK is loaded on the first /mcp request: it reaches for fetch (and so undici) as it
    // loads, which a server that never serves an agent should not pay for (test/bench/start-command).
    const { Server } = await import('@modelcontextprotocol/sdk/server/index.js')
    const {
      CallToolRequestSchema,
      GetPromptRequestSchema,
      ListPromptsRequestSchema,
      ListToolsRequestSchema
    } = await import('@modelcontextprotocol/sdk/types.js')
    const server = new Server({ name: 'petstore-api', version: options.version }, { capabilities: { tools: {}, prompts: {} } })
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: toolsFor(request.principal).map((t) => ({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: t.inputSchema as { type: 'object' },
        annotations: { title: t.title, ...t.annotations }
      }))
    }))
    server.setRequestHandler(CallToolRequestSchema, async (call) => callTool(
      request,
      session,
      call.params.name,
      (call.params.arguments ?? {}) as Record<string, unknown>
    ))
    server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }))
    server.setRequestHandler(
      GetPromptRequestSchema,
      async (get) => promptMessages(get.params.name, get.params.arguments ?? {})
    )
    return server
  }

  // The charge of opening a session or listing: a request of its own, so that it is charged,
  // counted and logged like any other. Hidden from the document.
  app.post('/mcp/request', { schema: { hide: true }, config: { role: 'customer' } }, async (_request, reply) => reply.code(204).send())

  app.post('/mcp', {
    schema: { hide: true, body: JSONRPC_MESSAGE },
    config: { role: 'customer', quota: 'free' }
  }, async (request: FastifyRequest, reply: FastifyReply) => {
    const message = request.body as JSONRPCMessage
    const method = (message as { method?: string }).method
    const session = typeof request.headers['mcp-session-id'] === 'string' ? request.headers['mcp-session-id'] : randomUUID()
    if (method === 'initialize') reply.header('mcp-session-id', session)
    // A tool call is charged as the operation it runs; everything else a caller asks is one request.
    if (method !== undefined && method !== 'tools/call' && !method.startsWith('notifications/')) {
      const refusal = await charge(request)
      if (refusal !== null && 'id' in message) {
        return reply.code(200).send({
          jsonrpc: '2.0',
          id: message.id,
          error: {
            code: -32000,
            message: (refusal.error as { message?: string } | undefined)?.message ?? 'refused',
            data: refusal
          }
        })
      }
    }
    if (!('id' in message)) return reply.code(202).send()
    const transport = new ExchangeTransport()
    const server = await serverFor(request, session)
    await server.connect(transport)
    transport.onmessage?.(message)
    const answer = await transport.answer
    await server.close()
    return reply.code(200).header('content-type', 'application/json').send(answer)
  })
  // Streamable HTTP's GET (a stream of server messages) and DELETE (end a session): this server
  // keeps no session state and sends nothing unasked.
  app.get('/mcp', { schema: { hide: true }, config: { role: 'customer', quota: 'free' } }, async (_request, reply) => {
    reply.header('allow', 'POST, DELETE')
    throw new AppError('method_not_allowed', 'GET /mcp: this server sends no messages unasked; POST one JSON-RPC message per request')
  })
  app.delete('/mcp', {
    schema: { hide: true },
    config: { role: 'customer', quota: 'free' }
  }, async (_request, reply) => reply.code(204).send())
}
