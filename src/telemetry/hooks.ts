// The seams tracing plugs into, and nothing of OpenTelemetry: the pipeline and the SQLite writer
// import this module whether tracing is on or not, so it imports nothing. Each slot stays null
// until telemetry/sdk.ts fills it (only when tracing is on), and every call site checks for null
// first: with tracing off a request or a write pays one property read and no allocation.
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

export interface Telemetry {
  /** Adds the per-request span attributes and events (telemetry/request-span.ts) to the app. */
  installApp: ((app: FastifyInstance) => void) | null
  /** The trace id of a request, for its log line. */
  traceIdOf: ((request: FastifyRequest) => string | undefined) | null
  writer: WriterTracing | null
}

export const telemetry: Telemetry = { installApp: null, traceIdOf: null, writer: null }
