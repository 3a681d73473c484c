// The seams tracing plugs into, and nothing of OpenTelemetry: the pipeline, the SQLite writer, the
// webhook dispatcher and the MCP endpoint import this module whether tracing is on or not, so it
// imports nothing. (The Redis limiter's seam lives in ratelimit/redis.ts: the foundation imports
// nothing above it.) Each slot stays null until telemetry/sdk.ts fills it (only when tracing is
// on), and every call site checks for null first: with tracing off a request or a write pays one
// property read and no allocation.
import type { FastifyInstance, FastifyRequest } from 'fastify'

/** A queued write's trace context: opaque here, an OpenTelemetry context in telemetry/sdk.ts. */
export type WriteTrace = object

export interface WriterTracing {
  /** The caller's trace context, kept with a queued write. */
  capture (): WriteTrace | undefined
  /** Runs one write of a batch in a span under its caller's context. */
  write<T> (trace: WriteTrace, fn: () => T): T
  /** Starts the span of a batch (parented on its first write's caller, linked to the others'); `end` closes it. */
  startBatch (traces: readonly (WriteTrace | undefined)[]): { end (error: unknown): void }
}

/** What one webhook attempt's span says of it (webhooks/dispatcher.ts). */
export interface WebhookAttemptFacts {
  /** The endpoint's URL as subscribed; the span shows it without credentials or query values. */
  url: string
  webhookId: string
  deliveryId: number
  eventId: string
  eventType: string
  /** 1 for the first attempt of a delivery. */
  attempt: number
}

/** How one attempt ended (webhooks/attempt.ts's result). */
export interface WebhookAttemptEnd {
  outcome: 'succeeded' | 'failed'
  status?: number
  error?: string
  errorType?: string
}

export interface WebhookAttemptSpan {
  /** The W3C `traceparent` of the attempt's span, sent with the delivery so a receiver can join the trace. */
  readonly traceparent: string
  /**
   * Runs the attempt's request with the HTTP client instrumentation silenced: this span is the
   * attempt's client span.
   */
  run<T> (fn: () => T): T
  end (result: WebhookAttemptEnd): void
}

export interface WebhookTracing {
  /** Starts the span of one delivery attempt: a trace of its own (an attempt is nobody's request). */
  startAttempt (facts: WebhookAttemptFacts): WebhookAttemptSpan
  /** Runs fn outside any trace: a dispatch round woken by a request is not that request's work. */
  detached (fn: () => void): void
}

/** What the span of one MCP message says of it (mcp/mcp.routes.ts): MCP's semantic conventions. */
export interface McpMessageFacts {
  /** The JSON-RPC method: `tools/call`, `initialize`, `notifications/initialized`… */
  method: string
  /** The tool a `tools/call` names, the prompt a `prompts/get` names. */
  tool?: string
  prompt?: string
  /** A request's JSON-RPC id; none for a notification. */
  requestId?: string | number
  sessionId?: string
  protocolVersion?: string
  clientAddress: string
  /** The message's `params._meta`, where an agent may send its trace context (`traceparent`). */
  meta?: unknown
}

export interface McpMessageSpan {
  /**
   * The message failed: a JSON-RPC error (its code and message), or a tool result with `isError`
   * (type `tool_error`, and the refusal's error code as the message).
   */
  fail (failure: { type: string; code?: number; message?: string }): void
}

export interface McpTracing {
  /** Runs the handling of one MCP request or notification in its span (`tools/call listPets`). */
  message<T> (facts: McpMessageFacts, fn: (span: McpMessageSpan) => Promise<T>): Promise<T>
  /**
   * Runs a request the endpoint makes in the caller's name (app.inject: the operation a tool runs,
   * or the charge of a message) in a child span of its own, named like a server span
   * (`GET /v1/pets`): the request's hooks (telemetry/request-span.ts) describe it there, and the
   * /mcp request's own span is left as it is.
   */
  inner<T extends { statusCode: number }> (request: { method: string; route: string }, fn: () => Promise<T>): Promise<T>
}

export interface Telemetry {
  /** Adds the per-request span attributes and events (telemetry/request-span.ts) to the app. */
  installApp: ((app: FastifyInstance) => void) | null
  /** The trace id of a request, for its log line. */
  traceIdOf: ((request: FastifyRequest) => string | undefined) | null
  writer: WriterTracing | null
  webhooks: WebhookTracing | null
  mcp: McpTracing | null
}

export const telemetry: Telemetry = { installApp: null, traceIdOf: null, writer: null, webhooks: null, mcp: null }
