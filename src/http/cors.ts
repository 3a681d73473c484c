// CORS (docs/product.md: CORS_ORIGINS), as @fastify/cors answered it with our options, at the cost
// of a few header writes per request: every value is made once, when the app is built.
//
// @fastify/cors with a per-request options delegator (needed to leave /metrics out) copied and
// normalized its options, read `request.routeOptions` (a new object per access) twice and joined
// the exposed headers again on every request (docs/performance.md). What it answered is kept:
// - every answer: `Vary: Origin`, /metrics included (the options were dynamic);
// - outside /metrics, on a request with an Origin: `Access-Control-Allow-Origin` (`*`, or the
//   request's Origin when it is one of the configured origins, else none) and
//   `Access-Control-Expose-Headers`. A request without Origin is not a CORS request and gets
//   neither (since issue 20: 230 bytes and two headers of every API answer, docs/performance.md);
// - a preflight (OPTIONS) outside /metrics: also `Access-Control-Allow-Methods`, `-Allow-Headers`
//   and `-Max-Age`, answered 204 with `Content-Length: 0` (no Origin or request method needed);
// - OPTIONS /metrics reaches the `OPTIONS *` route unanswered and gets the 404.
// It runs where @fastify/cors ran: in the pipeline's one onRequest step (http/pipeline.ts), after
// the access decision, so a refusal of the access step (401, 429) goes out without CORS headers.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

export interface CorsOptions {
  /** `*`, or the allowed origins (a list with `*` in it allows all). */
  origin: '*' | string[]
  methods: string[]
  allowedHeaders: string[]
  exposedHeaders: string[]
  /** Seconds a preflight may be cached. */
  maxAge: number
  /** Paths (without the query) that get no CORS at all: their preflight is not answered. */
  excluded: readonly string[]
}

declare module 'fastify' {
  interface FastifyRequest {
    /** This OPTIONS request is a preflight answered by the CORS step. */
    corsPreflightEnabled: boolean
  }
}

/**
 * The CORS step of the pipeline (http/pipeline.ts): sets the headers of the answer and answers a
 * preflight (true when it did). `excluded` is the route's, or null when it depends on the path
 * (a request that matched no route, or the OPTIONS route every preflight reaches).
 */
export function corsStep (
  options: CorsOptions
): (request: FastifyRequest, reply: FastifyReply, excluded: boolean | null) => boolean {
  const anyOrigin = options.origin === '*' || options.origin.includes('*')
  const allowed = new Set(anyOrigin ? [] : options.origin)
  const exposed = options.exposedHeaders.join(', ')
  const methods = options.methods.join(', ')
  const allowedHeaders = options.allowedHeaders.join(', ')
  const maxAge = String(options.maxAge)
  const excludedPaths = new Set(options.excluded)

  return (request, reply, excluded) => {
    addOriginToVary(reply)
    if (excluded ?? (excludedPaths.size > 0 && excludedPaths.has(pathOf(request.url)))) return false
    const origin = request.headers.origin
    const preflight = request.raw.method === 'OPTIONS'
    // Not a CORS request: a browser sends Origin with every cross-origin request, and Vary: Origin
    // keeps a cache from answering one with this answer.
    if (origin === undefined && !preflight) return false
    if (anyOrigin) reply.header('access-control-allow-origin', '*')
    else if (origin !== undefined && allowed.has(origin)) reply.header('access-control-allow-origin', origin)
    reply.header('access-control-expose-headers', exposed)
    if (!preflight) return false
    request.corsPreflightEnabled = true
    reply.header('access-control-allow-methods', methods)
    reply.header('access-control-allow-headers', allowedHeaders)
    reply.header('access-control-max-age', maxAge)
    reply.code(204).header('content-length', '0').send()
    return true
  }
}

/** Whether a route's path is left out of CORS: null when it depends on the request's path (no route, or a wildcard). */
export function corsExcluded (options: CorsOptions, url: string | undefined): boolean | null {
  return url === undefined || url.endsWith('*') ? null : options.excluded.includes(url)
}

/** The OPTIONS route every preflight reaches: only one the CORS step answered is one. */
export function installPreflightRoute (app: FastifyInstance): void {
  app.decorateRequest('corsPreflightEnabled', false)
  app.options('*', { schema: { hide: true } }, (request, reply) => {
    if (!request.corsPreflightEnabled) {
      reply.callNotFound()
      return
    }
    reply.send()
  })
}

const pathOf = (url: string): string => {
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

/** Adds Origin to Vary, as @fastify/cors does: set it when absent, else append it once (never to `*`). */
function addOriginToVary (reply: FastifyReply): void {
  const header = reply.getHeader('vary')
  if (header === undefined || header === '') { reply.header('vary', 'Origin'); return }
  const text = Array.isArray(header) ? header.join(', ') : String(header)
  const values = text.split(',').map((v) => v.trim().toLowerCase())
  if (values.includes('*')) return
  if (!values.includes('origin')) reply.header('vary', `${text}, Origin`)
}
