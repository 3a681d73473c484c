// The parts of an OpenAPI 3.0 document the passes read and change. Loose on purpose: the
// document is what @fastify/swagger made from the route schemas, and each pass names only the
// fields it touches.
export type JsonObject = Record<string, unknown>

export type Response = { headers?: Record<string, unknown>; [k: string]: unknown }

export type Operation = {
  operationId?: string
  responses: Record<string, Response>
  deprecated?: boolean
  [k: string]: unknown
}

export type OpenApiDocument = {
  paths: Record<string, Record<string, Operation>>
  components: { schemas?: Record<string, JsonObject>; headers?: Record<string, unknown>; [k: string]: unknown }
  [k: string]: unknown
}
