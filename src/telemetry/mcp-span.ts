// The spans of the MCP endpoint (mcp/mcp.routes.ts), by OpenTelemetry's semantic conventions for
// MCP (gen-ai/mcp.md): one SERVER span per request or notification, named `{mcp.method.name}
// {target}` (`tools/call listPets`), with its method, tool or prompt, JSON-RPC id, session and
// protocol version, and `error.type` when it failed (`tool_error` for a tool result with
// `isError`). The operation a tool call runs is a request of its own (app.inject), traced as a
// child span named like a server span (`GET /v1/pets`): the request's hooks (request-span.ts)
// give it its route, status and access decision, so a 429 is refused there, with its event, and
// the /mcp request's span keeps its own name and route. Set into telemetry/hooks.ts by
// telemetry/sdk.ts, so with tracing off none of this is loaded.
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Link } from '@opentelemetry/api'
import { RPCType, setRPCMetadata } from '@opentelemetry/core'
import type { McpMessageFacts, McpTracing } from './hooks.ts'

const tracer = trace.getTracer('petstore-api')

/** The span's name: the method, and the tool or prompt it names (low cardinality: no ids, no URIs). */
const spanName = (facts: McpMessageFacts): string => {
  const target = facts.tool ?? facts.prompt
  return target === undefined ? facts.method : `${facts.method} ${target}`
}

function attributesOf (facts: McpMessageFacts): Attributes {
  const attributes: Attributes = {
    'mcp.method.name': facts.method,
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
    'client.address': facts.clientAddress
  }
  if (facts.requestId !== undefined) attributes['jsonrpc.request.id'] = String(facts.requestId)
  if (facts.sessionId !== undefined) attributes['mcp.session.id'] = facts.sessionId
  if (facts.protocolVersion !== undefined) attributes['mcp.protocol.version'] = facts.protocolVersion
  if (facts.tool !== undefined) {
    attributes['gen_ai.tool.name'] = facts.tool
    attributes['gen_ai.operation.name'] = 'execute_tool'
  }
  if (facts.prompt !== undefined) attributes['gen_ai.prompt.name'] = facts.prompt
  return attributes
}

/** The W3C trace context an agent sent in `params._meta` (traceparent, tracestate), if any. */
function metaCarrier (meta: unknown): Record<string, string> | undefined {
  if (meta === null || typeof meta !== 'object') return undefined
  const carrier: Record<string, string> = {}
  for (const name of ['traceparent', 'tracestate']) {
    const value = (meta as Record<string, unknown>)[name]
    if (typeof value === 'string') carrier[name] = value
  }
  return carrier.traceparent === undefined ? undefined : carrier
}

export const mcpTracing: McpTracing = {
  async message (facts, fn) {
    // The conventions: the agent's context from params._meta is the parent, and the transport's
    // (this HTTP request's) a link; without it, the HTTP request's span is the parent.
    const ambient = context.active()
    let parent = ambient
    const links: Link[] = []
    const carrier = metaCarrier(facts.meta)
    if (carrier !== undefined) {
      const remote = propagation.extract(ROOT_CONTEXT, carrier)
      if (trace.getSpanContext(remote) !== undefined) {
        parent = remote
        const transport = trace.getSpan(ambient)
        if (transport !== undefined) links.push({ context: transport.spanContext() })
      }
    }
    const span = tracer.startSpan(
      spanName(facts),
      { kind: SpanKind.SERVER, attributes: attributesOf(facts), links },
      parent
    )
    const handle = {
      fail ({ type, code, message }: { type: string; code?: number; message?: string }) {
        span.setAttribute('error.type', type)
        if (code !== undefined) span.setAttribute('rpc.response.status_code', String(code))
        span.setStatus({ code: SpanStatusCode.ERROR, ...(message !== undefined && { message }) })
      }
    }
    try {
      return await context.with(trace.setSpan(parent, span), () => fn(handle))
    } catch (error) {
      span.recordException(error as Error)
      span.setAttributes({ 'error.type': error instanceof Error ? error.name : '_OTHER' })
      span.setStatus({ code: SpanStatusCode.ERROR })
      throw error
    } finally {
      span.end()
    }
  },

  async inner ({ method, route }, fn) {
    const span = tracer.startSpan(`${method} ${route}`, {
      kind: SpanKind.INTERNAL,
      attributes: { 'http.request.method': method, 'http.route': route }
    })
    // The request's hooks find their span in the RPC metadata, as they find the server span of a
    // request that came over the network (request-span.ts); @fastify/otel sets its route there.
    const scope = setRPCMetadata(trace.setSpan(context.active(), span), { type: RPCType.HTTP, span })
    try {
      // Awaited inside the scope: app.inject returns a chain that starts the request only when
      // it is awaited, which outside would be in the caller's context, not this span's.
      const answer = await context.with(scope, async () => await fn())
      span.setAttribute('http.response.status_code', answer.statusCode)
      if (answer.statusCode >= 500) {
        span.setAttribute('error.type', String(answer.statusCode))
        span.setStatus({ code: SpanStatusCode.ERROR })
      }
      return answer
    } catch (error) {
      span.recordException(error as Error)
      span.setStatus({ code: SpanStatusCode.ERROR })
      throw error
    } finally {
      span.end()
    }
  }
}
