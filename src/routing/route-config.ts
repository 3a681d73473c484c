// What a route declares about itself, next to its schema, and what the cross-cutting plugins
// (auth, rate limits, lifecycle headers, the OpenAPI document) read from it.
import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify'
import type { Principal } from '../access/principal.ts'
import { scopesOfNeed, SCOPE_ROLE, type ScopeNeed } from '../accounts/scopes.ts'
import { ROLE_RANK } from '../accounts/plans.ts'
import type { ErrorCode } from '../errors.ts'
import { isApiPath } from '../shared/api-path.ts'
import type { Lifecycle } from './lifecycle.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The least role that may call it, or `none`: no key needed (POST /keys/leaked), the request
     * charged like any without a valid key. Every /v1 operation must name one (requireRoles).
     */
    role?: Principal['role'] | 'none'
    /**
     * What a restricted key needs to call it (accounts/scopes.ts): a scope, several (each one its
     * role can hold), or null for none. Every /v1 operation must say (requireRoles).
     */
    scope?: ScopeNeed
    /** Error codes particular to the operation; the cross-cutting ones are added for it. */
    errors?: ErrorCode[]
    /** Stability, deprecation and sunset (routing/lifecycle.ts). */
    lifecycle?: Lifecycle
    /** 'free' operations cost no quota (GET /rate_limit). */
    quota?: 'free'
    /**
     * A banned key may still call it, uncharged, so that it can learn why and until when (the
     * key holder's GET /keys/me and GET /keys/me/bans). Charged as any operation otherwise; an
     * expired or revoked key is still 401 (access/access.service.ts).
     */
    banExempt?: true
    /** The body may be omitted (the route reads none as `{}`): the document says it is not required. */
    optionalBody?: true
    /**
     * The document's example of an error status, in place of the catalogue's generic one: a real
     * refusal of the operation.
     */
    errorExamples?: { code: ErrorCode; message: string; details?: { path: string; message: string }[] }[]
  }
  interface FastifyRequest {
    /** The caller's API key, once authenticated; null when the request has no valid key. */
    principal: Principal | null
  }
}

export type { Principal }

/**
 * Every operation under /v1 must say who may call it and what a restricted key needs for it: a
 * route registered without a role or a scope (null for none) fails at start, not at its first
 * request; so does one whose role can hold none of its scopes (a restricted key could never be
 * refused it). Install before the /v1 routes are registered.
 */
export function requireRoles (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!isApiPath(route.url) || route.url.endsWith('*')) return
    const config = route.config as { role?: Principal['role'] | 'none'; scope?: ScopeNeed } | undefined
    const role = config?.role
    if (role === undefined) throw new Error(`route ${String(route.method)} ${route.url} declares no role`)
    if (config?.scope === undefined) throw new Error(`route ${String(route.method)} ${route.url} declares no scope (null for none)`)
    if (role === 'none') {
      if (config.scope !== null) throw new Error(`route ${String(route.method)} ${route.url}: role none needs no key, so it has no scope (null)`)
      return
    }
    const scopes = scopesOfNeed(config.scope)
    if (config.scope !== null && !scopes.some((s) => ROLE_RANK[SCOPE_ROLE[s]] <= ROLE_RANK[role])) {
      throw new Error(`route ${String(route.method)} ${route.url}: its role ${role} can hold none of its scopes ${scopes.join(', ')}`)
    }
  })
}

/** What the hot path reads about the matched route: its config (with url and method) and schema. */
type RouteConfig = FastifyContextConfig & { url?: string | undefined }
export interface RouteContext { config?: RouteConfig | undefined; schema?: unknown }

/** Fastify's own key of the matched route's context on a request; null: the fallback is in use. */
let contextSymbol: symbol | null | undefined
/** Why the public getter is read instead (the fallback), or null: set at the first request. */
let fallback: string | null | undefined

/**
 * The matched route's context, read without `request.routeOptions`: that getter builds a new
 * twelve-field object on every access, and the hooks of a request read it five or six times
 * (docs/performance.md). Fastify keeps the context under a private symbol, `fastify.context`,
 * found at the first request by its description and checked against the getter (contextSymbolOf);
 * should a release rename it or hold something else under it, every request reads the getter
 * (correct, slower), and test/routing/route-context.test.ts fails, naming what changed.
 */
export function routeContextOf (request: FastifyRequest): RouteContext {
  if (contextSymbol === undefined) contextSymbol = contextSymbolOf(request)
  const context = contextSymbol === null
    ? undefined
    : (request as unknown as Record<symbol, RouteContext | undefined>)[contextSymbol]
  return context ?? { config: request.routeOptions.config, schema: request.routeOptions.schema }
}

/** Fastify's context symbol on `request`, when it holds what `request.routeOptions` gives; else null (and why). */
function contextSymbolOf (request: FastifyRequest): symbol | null {
  const symbol = Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context')
  if (symbol === undefined) {
    fallback = 'a request has no own symbol described fastify.context'
    return null
  }
  const context = (request as unknown as Record<symbol, RouteContext | undefined>)[symbol]
  const { config, schema } = request.routeOptions
  if (context === undefined || context.config !== config || context.schema !== schema) {
    fallback = 'the value under fastify.context holds not the config and schema of request.routeOptions'
    return null
  }
  fallback = null
  return symbol
}

/**
 * Why the matched route is read through `request.routeOptions` (the fallback), or null;
 * undefined before the first request.
 */
export function routeContextFallback (): string | null | undefined {
  return fallback
}

/** For tests: `request.routeOptions` read from now on (true), or the symbol found again at the next request. */
export function forceRouteContextFallback (on: boolean): void {
  contextSymbol = on ? null : undefined
  fallback = on ? 'forced by a test' : undefined
}

/** The matched route's config (role, quota, lifecycle…); Fastify gives every route one. */
export function routeConfigOf (request: FastifyRequest): RouteConfig {
  return routeContextOf(request).config ?? {}
}
