// What a route declares about itself, next to its schema, and what the cross-cutting plugins
// (auth, rate limits, lifecycle headers, the OpenAPI document) read from it.
import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify'
import type { Principal } from '../access/principal.ts'
import type { ErrorCode } from '../errors.ts'
import type { Lifecycle } from './lifecycle.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The least role that may call it. Every /v1 operation must name one (requireRoles). */
    role?: Principal['role']
    /** Error codes particular to the operation; the cross-cutting ones are added for it. */
    errors?: ErrorCode[]
    /** Stability, deprecation and sunset (routing/lifecycle.ts). */
    lifecycle?: Lifecycle
    /** 'free' operations cost no quota (GET /rate_limit). */
    quota?: 'free'
    /** The body may be omitted (the route reads none as `{}`): the document says it is not required. */
    optionalBody?: true
    /** The document's example of an error status, in place of the catalogue's generic one: a real refusal of the operation. */
    errorExamples?: { code: ErrorCode; message: string; details?: { path: string; message: string }[] }[]
  }
  interface FastifyRequest {
    /** The caller's API key, once authenticated; null when the request has no valid key. */
    principal: Principal | null
  }
}

export type { Principal }

/**
 * Every operation under /v1 must say who may call it: a route registered without a role fails at
 * start, not at its first request. Install before the /v1 routes are registered.
 */
export function requireRoles (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1') || route.url.endsWith('*')) return
    const role = (route.config as { role?: string } | undefined)?.role
    if (role === undefined) throw new Error(`route ${String(route.method)} ${route.url} declares no role`)
  })
}

/** What the hot path reads about the matched route: its config (with url and method) and schema. */
type RouteConfig = FastifyContextConfig & { url?: string | undefined }
interface RouteContext { config?: RouteConfig | undefined; schema?: unknown }

let contextSymbol: symbol | null | undefined

/**
 * The matched route's context, read without `request.routeOptions`: that getter builds a new
 * twelve-field object on every access, and the hooks of a request read it five or six times
 * (docs/performance.md). Fastify keeps the context under a symbol of its own, found once by its
 * description; should a release rename it, this falls back to the getter.
 */
export function routeContextOf (request: FastifyRequest): RouteContext {
  if (contextSymbol === undefined) {
    contextSymbol = Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context') ?? null
  }
  const context = contextSymbol === null ? undefined : (request as unknown as Record<symbol, RouteContext | undefined>)[contextSymbol]
  return context ?? { config: request.routeOptions.config, schema: request.routeOptions.schema }
}

/** The matched route's config (role, quota, lifecycle…); Fastify gives every route one. */
export function routeConfigOf (request: FastifyRequest): RouteConfig {
  return routeContextOf(request).config ?? {}
}
