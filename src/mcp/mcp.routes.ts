// The MCP endpoint (docs/api.md, "Agents (MCP)"): Streamable HTTP at /mcp (MCP 2025-06-18), one
// JSON-RPC message per POST, answered at once through Fastify like any request (logs, metrics,
// error object, headers). Requests are served by the official SDK's Server over a transport of
// one exchange. Every tool call is the REST call it stands for, made through app.inject with the
// caller's own key and address: the same access step (role, scope, charge to the same windows,
// bans), validation, usage, logs and metrics, so nothing about an operation is decided twice.
//
// What each message costs (docs/product.md 11.2): a tool call that reaches its operation costs
// what the operation costs, charged by the operation's own request; any other message the
// endpoint takes or refuses (initialize, tools/list, a tool call it cannot make, a response, a
// malformed message) is charged as one request, by a request of its own to POST /mcp/request (a
// hidden charged route), so that a refusal costs what any refused request costs, a banned key
// included. A notification is free while the key may call (the door's peek: a free route), and
// charged like the rest when it may not.
//
// Every message is answered, and at once: a malformed one (not JSON, a batch, an id that is null,
// a fraction or an object, params that are not an object) with a JSON-RPC error and 400, a
// notification or a response with 202, a request with its answer. The SDK sees only messages
// its schemas take, so it answers every request it is given (issue 48 finding 1: some never got
// an answer and held their connection).
import { createHash, randomUUID } from 'node:crypto'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type * as McpTypes from '@modelcontextprotocol/sdk/types.js'
import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js'
import type { FastifyInstance, FastifyReply, FastifyRequest, LightMyRequestResponse } from 'fastify'
import { AppError, clipText } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import { telemetry, type McpMessageFacts, type McpMessageSpan } from '../telemetry/hooks.ts'
import { argumentProblems } from './arguments.ts'
import { toolDescription } from './describe.ts'
import { serverInstructions } from './instructions.ts'
import { listedInputSchema } from './listing.ts'
import { PROMPTS, promptMessages } from './prompts.ts'
import { createRepeatGuard } from './repeat.ts'
import { answerResult, refusalContent, refusalResult, type ToolResult } from './results.ts'
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

/** One exchange: the request message in, its answer out (the SDK's Server sends one per request). */
class ExchangeTransport implements Transport {
  onmessage?: Transport['onmessage']
  onclose?: () => void
  onerror?: (error: Error) => void
  readonly answer: Promise<JSONRPCMessage>
  #resolve!: (message: JSONRPCMessage) => void
  #reject!: (error: Error) => void
  constructor () {
    this.answer = new Promise((resolve, reject) => { this.#resolve = resolve; this.#reject = reject })
  }

  async start (): Promise<void> {}
  async send (message: JSONRPCMessage): Promise<void> { if ('id' in message) this.#resolve(message) }
  async close (): Promise<void> { this.onclose?.() }
  /** The server reported an error instead of answering: the exchange ends with it. */
  fail (error: Error): void { this.#reject(error) }
}

const KEY_HEADERS = ['x-api-key', 'authorization'] as const

/** The headers of an inner answer that tell the caller about its windows (http/rate-limit-headers.ts). */
const LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy'] as const

/** JSON-RPC's and MCP's error codes that this endpoint answers with. */
const PARSE_ERROR = -32700
const INVALID_REQUEST = -32600
const INVALID_PARAMS = -32602
const INTERNAL_ERROR = -32603
/** The JSON-RPC code of a request the access step refused (its refusal is in `data`). */
const REFUSED = -32000

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

/** The path with its parameters filled in (the argument check requires each), and the query string. */
function targetOf (tool: Tool, args: Record<string, unknown>): string {
  const path = tool.url.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => encodeURIComponent(String(args[name])))
  const query = new URLSearchParams()
  for (const name of tool.queryParams) {
    const value = args[name]
    if (value === undefined) continue
    for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item))
  }
  const text = query.toString()
  return text === '' ? path : `${path}?${text}`
}

/** The SDK's modules: loaded on the first /mcp request, not before (see mcpSdk). */
type Sdk = typeof McpTypes & { Server: typeof Server }
let sdk: Promise<Sdk> | undefined

/**
 * The SDK is loaded on the first /mcp request: it reaches for fetch (and so undici) as it loads,
 * which a server that never serves an agent should not pay for (test/bench/start-command).
 */
function mcpSdk (): Promise<Sdk> {
  sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/types.js'),
    import('@modelcontextprotocol/sdk/server/index.js')
  ]).then(([types, { Server }]) => ({ ...types, Server }))
  return sdk
}

/** What one POST carried, as the Streamable HTTP transport sorts it. */
type Incoming =
  | { kind: 'malformed'; status: number; code: number; message: string }
  | { kind: 'request'; message: JSONRPCRequest }
  | { kind: 'notification'; message: JSONRPCNotification }
  | { kind: 'response' }

/** The body (text: this endpoint parses its own) as one JSON-RPC message, or why it is none. */
function readMessage (request: FastifyRequest, types: Sdk): Incoming {
  // No Content-Type reads as 'undefined': refused like any other type.
  const type = String(request.headers['content-type']).split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json') {
    return { kind: 'malformed', status: 415, code: INVALID_REQUEST, message: 'Unsupported Media Type: send one JSON-RPC message as application/json' }
  }
  let raw: unknown
  try {
    // No body at all (undefined) throws here as an empty one does.
    raw = JSON.parse(request.body as string)
  } catch {
    return { kind: 'malformed', status: 400, code: PARSE_ERROR, message: 'Parse error: the body is not JSON' }
  }
  if (Array.isArray(raw)) {
    return { kind: 'malformed', status: 400, code: INVALID_REQUEST, message: 'Invalid Request: batches are not part of MCP since 2025-06-18; send one message per POST' }
  }
  const parsed = types.JSONRPCMessageSchema.safeParse(raw)
  if (!parsed.success) {
    return { kind: 'malformed', status: 400, code: INVALID_REQUEST, message: 'Invalid Request: not a JSON-RPC 2.0 request, notification or response as MCP sends them (an id is a string or an integer, params an object)' }
  }
  const message = parsed.data
  if (types.isJSONRPCRequest(message)) return { kind: 'request', message }
  if (types.isJSONRPCNotification(message)) return { kind: 'notification', message }
  return { kind: 'response' }
}

/** A JSON-RPC error object; id null when the message had none that could be read. */
function jsonRpcError (
  id: string | number | null, code: number, message: string, data?: unknown
): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined && { data }) } }
}

/** A refusal's message, for a JSON-RPC error's: its `error` is always the API's error object. */
const refusalMessage = (refusal: Record<string, unknown>): string =>
  (refusal.error as { message: string }).message

export async function mcpRoutes (app: FastifyInstance, options: McpOptions): Promise<void> {
  const repeats = createRepeatGuard({ limit: options.repeatLimit, clock: options.clock })
  // Made at the first request, when the document (and so each operation's prose) is finished.
  const described = new Map<string, string>()
  const descriptionOf = (tool: Tool): string => {
    let text = described.get(tool.name)
    if (text === undefined) {
      text = toolDescription(tool, options.describe(tool.name))
      described.set(tool.name, text)
    }
    return text
  }
  // The input schemas as tools/list shows them (listing.ts), made once per tool.
  const listedInputs = new Map<string, { type: 'object' }>()
  const listedInputOf = (tool: Tool): { type: 'object' } => {
    let schema = listedInputs.get(tool.name)
    if (schema === undefined) {
      schema = listedInputSchema(tool.inputSchema) as { type: 'object' }
      listedInputs.set(tool.name, schema)
    }
    return schema
  }
  const toolsFor = (principal: Parameters<typeof mayCall>[1]): Tool[] =>
    options.tools.filter((tool) => mayCall(tool, principal))
  const instructions = serverInstructions({
    repeatLimit: options.repeatLimit,
    freeTools: options.tools.filter((t) => t.free).map((t) => t.name),
    feeds: options.tools.filter((t) => t.paging === 'feed').map((t) => t.name)
  })

  // This endpoint reads its body as text and parses it itself, whatever its type: a body that is
  // not one JSON-RPC message is answered with a JSON-RPC error, and charged, not refused by a
  // parser before the endpoint sees it (415 and 400 from a parser would cost nothing).
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => { done(null, body) })

  /** The caller's own key headers and address, and the channel mark, for a request made in its name. */
  function innerHeaders (request: FastifyRequest): Record<string, string> {
    // The /mcp request's id: the inner request's error objects, log lines and spans name the
    // request the agent made.
    const headers: Record<string, string> = { [options.channel.header]: options.channel.value, 'request-id': request.id }
    for (const name of KEY_HEADERS) {
      const value = request.headers[name]
      if (typeof value === 'string') headers[name] = value
    }
    return headers
  }

  /** Runs a request made in the caller's name in its own span (when tracing). */
  function inner (
    target: { method: string; route: string },
    make: () => Promise<LightMyRequestResponse>
  ): Promise<LightMyRequestResponse> {
    const tracing = telemetry.mcp
    return tracing === null ? make() : tracing.inner(target, make)
  }

  /** Hands the answer's window headers on to the /mcp answer, which the door only peeked for. */
  function passLimits (reply: FastifyReply, answer: LightMyRequestResponse): void {
    for (const name of LIMIT_HEADERS) {
      const value = answer.headers[name]
      if (value !== undefined) reply.header(name, value)
    }
  }

  /**
   * Charges the caller one request (a message that runs no operation): null when served, else the
   * refusal as a tool result would carry it. The answer's Retry-After is the refusal's.
   */
  async function charge (request: FastifyRequest, reply: FastifyReply): Promise<Record<string, unknown> | null> {
    const answer = await inner({ method: 'POST', route: '/mcp/request' }, () => app.inject({
      method: 'POST', url: '/mcp/request', headers: innerHeaders(request), remoteAddress: request.ip
    }))
    passLimits(reply, answer)
    if (answer.statusCode < 400) return null
    return refusalContent(answer.statusCode, answer.json(), answer.headers)
  }

  /** A refusal of this endpoint's own (not the operation's): charged first, whose refusal comes first. */
  async function refused (
    request: FastifyRequest, reply: FastifyReply, status: number, code: string, message: string, details?: unknown[]
  ): Promise<ToolResult> {
    const refusal = await charge(request, reply)
    if (refusal !== null) return refusalResult(refusal)
    const error = { code, message, status, requestId: request.id, ...(details !== undefined && { details }) }
    return refusalResult({ status, error })
  }

  async function callTool (
    request: FastifyRequest, reply: FastifyReply, session: string, name: string, args: Record<string, unknown>
  ): Promise<ToolResult> {
    // Found by role only: a restricted key calling a tool outside its scopes gets the operation's
    // own 403 insufficient_scope from the inner request, as over REST.
    const { principal } = request
    const tool = toolsFor(principal === null ? null : { ...principal, scopes: null }).find((t) => t.name === name)
    if (tool === undefined) {
      const message = `no tool ${clipText(name, 100)} for this key; tools/list names the tools it may call`
      return refused(request, reply, 404, 'not_found', message)
    }
    const problems = argumentProblems(tool, args)
    if (problems.length > 0) {
      const [first] = problems
      return refused(request, reply, 400, 'validation_failed', `invalid arguments: ${first!.path} ${first!.message}`, problems)
    }
    const repeated = repeats.check(principal?.keyId ?? 0, name, canonicalJson(args))
    if (repeated !== null) {
      const refusal = await charge(request, reply)
      if (refusal !== null) return refusalResult(refusal)
      const error = {
        code: 'tool_call_repeated',
        message: `${name} was called with the same arguments ${repeated.calls} times in the last minute (limit ${options.repeatLimit}); change the arguments or wait ${repeated.retryAfter} s`,
        status: 429,
        requestId: request.id
      }
      return refusalResult({ status: 429, error, retryAfter: repeated.retryAfter })
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
    const answer = await inner({ method: tool.method, route: tool.url }, () => app.inject({
      method: tool.method as 'GET',
      url: targetOf(tool, rest),
      headers,
      ...(payload !== undefined && { payload }),
      remoteAddress: request.ip
    }))
    passLimits(reply, answer)
    const parsed = bodyOf(answer)
    if (answer.statusCode >= 400) {
      return refusalResult(refusalContent(answer.statusCode, parsed, answer.headers), answer.headers)
    }
    return answerResult(tool.name, answer.statusCode, parsed, answer.headers)
  }

  /** A server for one exchange, in the caller's name. */
  function serverFor (request: FastifyRequest, reply: FastifyReply, session: string, types: Sdk): Server {
    const server = new types.Server(
      { name: 'petstore-api', version: options.version },
      { capabilities: { tools: {}, prompts: {} }, instructions }
    )
    server.setRequestHandler(types.ListToolsRequestSchema, async () => ({
      tools: toolsFor(request.principal).map((t) => ({
        name: t.name,
        title: t.title,
        description: descriptionOf(t),
        inputSchema: listedInputOf(t),
        outputSchema: t.outputSchema as { type: 'object' },
        annotations: listedAnnotations(t.annotations)
      }))
    }))
    server.setRequestHandler(types.CallToolRequestSchema, async (call) => callTool(
      request,
      reply,
      session,
      call.params.name,
      (call.params.arguments ?? {}) as Record<string, unknown>
    ))
    server.setRequestHandler(types.ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }))
    server.setRequestHandler(
      types.GetPromptRequestSchema,
      async (get) => promptMessages(get.params.name, get.params.arguments ?? {})
    )
    return server
  }

  /** Serves one request message: its answer, as the SDK's server makes it. */
  async function answerOf (
    request: FastifyRequest, reply: FastifyReply, session: string, types: Sdk, message: JSONRPCRequest
  ): Promise<JSONRPCMessage> {
    const transport = new ExchangeTransport()
    const server = serverFor(request, reply, session, types)
    server.onerror = (error) => { transport.fail(error) }
    await server.connect(transport)
    try {
      transport.onmessage?.(message)
      return await transport.answer
    } catch (error) {
      request.log.error({ err: error }, 'the MCP server failed to answer a request')
      return jsonRpcError(message.id, INTERNAL_ERROR, 'Internal error') as JSONRPCMessage
    } finally {
      await server.close()
    }
  }

  /** Answers a request message: charged first unless it is a tool call (charged as its operation). */
  async function serveRequest (
    request: FastifyRequest, reply: FastifyReply, types: Sdk, message: JSONRPCRequest, span: McpMessageSpan | null
  ): Promise<FastifyReply> {
    const session = sessionOf(request)
    if (message.method === 'initialize') reply.header('mcp-session-id', session)
    const toolCall = message.method === 'tools/call' && types.CallToolRequestSchema.safeParse(message).success
    if (!toolCall) {
      const refusal = await charge(request, reply)
      if (refusal !== null) {
        const text = refusalMessage(refusal)
        const failure = { type: String(REFUSED), code: REFUSED, message: text }
        span?.fail(failure)
        return reply.code(200).send(jsonRpcError(message.id, REFUSED, text, refusal))
      }
    }
    // The SDK would answer an internal error, with the schema's complaint, to a call it cannot read.
    const answer = message.method === 'tools/call' && !toolCall
      ? jsonRpcError(message.id, INVALID_PARAMS, 'Invalid params: tools/call takes { "name": string, "arguments"?: object }') as JSONRPCMessage
      : await answerOf(request, reply, session, types, message)
    if (span !== null) describeOutcome(span, answer, toolCall)
    return reply.code(200).header('content-type', 'application/json').send(answer)
  }

  app.post('/mcp/request', {
    schema: { hide: true },
    config: { role: 'customer' }
  }, async (_request, reply) => reply.code(204).send())

  app.post('/mcp', {
    // Any body: the endpoint reads it (readMessage), so that a wrong one gets a JSON-RPC answer.
    schema: { hide: true, body: {} },
    config: { role: 'customer', quota: 'free' }
  }, async (request: FastifyRequest, reply: FastifyReply) => {
    // The door only peeked (a free route): what this message costs is charged by the request it
    // makes, which the usage step counts. The door's decision is not counted as well (a tool call
    // counted twice: issue 49), nor told on the /mcp request's span.
    const door = request.rateLimit
    request.rateLimit = null
    const types = await mcpSdk()
    const incoming = readMessage(request, types)
    if (incoming.kind === 'malformed' || incoming.kind === 'response') {
      const refusal = await charge(request, reply)
      if (refusal !== null) return refuseAtHttp(reply, refusal)
      if (incoming.kind === 'response') return reply.code(202).send()
      return reply.code(incoming.status).send(jsonRpcError(null, incoming.code, incoming.message))
    }
    const { message } = incoming
    return traced(request, message, async (span) => {
      if (incoming.kind === 'request') return serveRequest(request, reply, types, incoming.message, span)
      // This server keeps no state a notification could change: it is accepted, and costs nothing
      // while the key may call; a limited or banned key's is refused like any request.
      if (door !== null && !door.allowed) {
        const refusal = await charge(request, reply)
        if (refusal !== null) {
          const failure = { type: String(refusal.status), message: refusalMessage(refusal) }
          span?.fail(failure)
          return refuseAtHttp(reply, refusal)
        }
      }
      return reply.code(202).send()
    })
  })
  // Streamable HTTP's GET (a stream of server messages) and DELETE (end a session): this server
  // keeps no session state and sends nothing unasked. Free, and not counted either: the SDK's
  // client asks for the stream in every session, which is the transport's doing, not the agent's.
  app.get('/mcp', { schema: { hide: true }, config: { role: 'customer', quota: 'free' } }, async (request, reply) => {
    request.rateLimit = null
    reply.header('allow', 'POST, DELETE')
    throw new AppError('method_not_allowed', 'GET /mcp: this server sends no messages unasked; POST one JSON-RPC message per request')
  })
  app.delete('/mcp', {
    schema: { hide: true },
    config: { role: 'customer', quota: 'free' }
  }, async (request, reply) => {
    request.rateLimit = null
    return reply.code(204).send()
  })
}

/**
 * A tool's annotations as listed: a read's (readOnlyHint) destructive and idempotent hints mean
 * nothing (MCP 2025-06-18), and a false one is what its absence says; the title is the tool's own
 * (`title`). openWorldHint is always said: its absence would mean true.
 */
export function listedAnnotations (hints: Tool['annotations']): Partial<Tool['annotations']> {
  if (hints.readOnlyHint) return { readOnlyHint: true, openWorldHint: false }
  return {
    destructiveHint: hints.destructiveHint,
    ...(hints.idempotentHint && { idempotentHint: true }),
    openWorldHint: false
  }
}

/** An answer's JSON (every answer of the API is JSON, errors included), or its text if it is not. */
function bodyOf (answer: LightMyRequestResponse): unknown {
  if (answer.body === '') return null
  try {
    return JSON.parse(answer.body) as unknown
  } catch {
    return answer.body
  }
}

/** The session a message belongs to: the Mcp-Session-Id sent, else a new one (given at initialize). */
function sessionOf (request: FastifyRequest): string {
  const header = request.headers['mcp-session-id']
  return typeof header === 'string' && header !== '' ? header : randomUUID()
}

/**
 * A message this endpoint cannot take from this key (a notification or a response of a limited or
 * banned key, a malformed message charged and refused): the refusal's status, with a JSON-RPC
 * error that carries it (MCP: an HTTP error status, and a JSON-RPC error without an id).
 */
function refuseAtHttp (reply: FastifyReply, refusal: Record<string, unknown>): FastifyReply {
  if (typeof refusal.retryAfter === 'number') reply.header('retry-after', String(refusal.retryAfter))
  return reply.code(Number(refusal.status)).send(jsonRpcError(null, REFUSED, refusalMessage(refusal), refusal))
}

/** Runs the handling of a message in its span (MCP's semantic conventions), when tracing. */
function traced (
  request: FastifyRequest,
  message: JSONRPCRequest | JSONRPCNotification,
  serve: (span: McpMessageSpan | null) => Promise<FastifyReply>
): Promise<FastifyReply> {
  const tracing = telemetry.mcp
  if (tracing === null) return serve(null)
  const params = (message.params ?? {}) as Record<string, unknown>
  const name = typeof params.name === 'string' ? params.name : undefined
  const version = message.method === 'initialize' ? params.protocolVersion : request.headers['mcp-protocol-version']
  const session = request.headers['mcp-session-id']
  const facts: McpMessageFacts = {
    method: message.method,
    clientAddress: request.ip,
    ...(message.method === 'tools/call' && name !== undefined && { tool: name }),
    ...(message.method === 'prompts/get' && name !== undefined && { prompt: name }),
    ...('id' in message && { requestId: message.id }),
    ...(typeof session === 'string' && { sessionId: session }),
    ...(typeof version === 'string' && { protocolVersion: version }),
    ...(params._meta !== undefined && { meta: params._meta })
  }
  return tracing.message(facts, serve)
}

/** The span's outcome: a JSON-RPC error, or a tool result with isError (MCP's `tool_error`). */
function describeOutcome (span: McpMessageSpan, answer: JSONRPCMessage, toolCall: boolean): void {
  const failure = (answer as { error?: { code: number; message: string } }).error
  if (failure !== undefined) {
    span.fail({ type: String(failure.code), code: failure.code, message: failure.message })
    return
  }
  type Result = { isError?: boolean; structuredContent?: { error?: { code?: string } } }
  const result = (answer as { result?: Result }).result
  if (toolCall && result?.isError === true) {
    const code = result.structuredContent?.error?.code
    span.fail({ type: 'tool_error', ...(code !== undefined && { message: code }) })
  }
}
