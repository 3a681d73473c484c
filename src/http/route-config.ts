// What a route declares about itself, next to its schema, and what the cross-cutting plugins
// (auth, rate limits, lifecycle headers, the OpenAPI document) read from it.
import type { ErrorCode } from '../errors.ts'
import type { Principal } from '../keys/access.service.ts'
import type { Role } from '../keys/keys.schema.ts'
import type { Lifecycle } from './lifecycle.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The least role that may call it. Every /v1 operation must name one. */
    role?: Role
    /** Error codes particular to the operation; the cross-cutting ones are added for it. */
    errors?: ErrorCode[]
    /** Stability, deprecation and sunset (http/lifecycle.ts). */
    lifecycle?: Lifecycle
    /** 'free' operations cost no quota (GET /rate_limit). */
    quota?: 'free'
  }
  interface FastifyRequest {
    /** The caller's API key, once authenticated; null when the request has no valid key. */
    principal: Principal | null
  }
}

export type { Principal }
