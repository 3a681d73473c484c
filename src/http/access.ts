// Who is calling, how much they may call, and whether they may call this: one onRequest hook for
// every request under /v1, unknown paths and errors included, so every response carries the
// rate-limit headers (docs/product.md section 4).
//
// Order matters: the key is resolved first (without failing), then the request is charged to the
// key, or to the client address when there is no valid key (so 401s are throttled and carry the
// headers), and only then are a missing key (401) and the role (403) enforced.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../errors.ts'
import { PLAN_QUOTAS, ROLE_RANK } from '../keys/keys.schema.ts'
import { hashKey, quotaOf, subjectOfKey } from '../keys/keys.service.ts'
import type { KeyStore } from '../keys/keys.store.ts'
import { rateLimitHeaders, type Decision, type RateLimiter } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import type { Principal } from './route-config.ts'

export interface AccessEvents {
  /** A request was allowed, limited or banned (metrics). */
  onDecision?: (outcome: 'allowed' | 'limited' | 'banned') => void
  /** A ban started: it is recorded in the database by the hook; this is for logs and metrics. */
  onBan?: (subject: string, keyId: number | null, until: number) => void
}

export interface AccessOptions extends AccessEvents {
  keys: KeyStore
  limiter: RateLimiter
  clock: Clock
  /** How long a resolved key may be reused before it is read again (revocations take effect within it). */
  keyCacheMs?: number
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The limiter's answer for this request (GET /rate_limit reports it). */
    rateLimit: Decision | null
  }
}

const ANONYMOUS_QUOTA = PLAN_QUOTAS.free

export function installAccess (app: FastifyInstance, options: AccessOptions): { resolveKey: (key: string) => Promise<Principal | null>; charge: (request: FastifyRequest, reply: FastifyReply) => Promise<void> } {
  const { keys, limiter, clock } = options
  const keyCacheMs = options.keyCacheMs ?? 2000
  // Resolved keys, briefly: the hot path then costs no database read. Unknown keys are not
  // cached, so a key made a moment ago (by the CLI, say) works at once.
  const cache = new Map<string, { principal: Principal | null; expires: number }>()

  async function resolveKey (key: string): Promise<Principal | null> {
    const hash = hashKey(key)
    const now = clock.now()
    const hit = cache.get(hash)
    if (hit !== undefined && hit.expires > now) return hit.principal
    const record = await keys.findKeyByHash(hash)
    if (record === null) return null
    const principal: Principal | null = record.revokedAt !== null
      ? null
      : { keyId: record.id, role: record.role, plan: record.plan, quota: quotaOf(record) }
    if (cache.size >= 10_000) cache.clear()
    cache.set(hash, { principal, expires: now + keyCacheMs })
    return principal
  }

  // Every operation under /v1 must say who may call it: a route without a role fails at start.
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1') || route.url.endsWith('*')) return
    const role = (route.config as { role?: string } | undefined)?.role
    if (role === undefined) throw new Error(`route ${String(route.method)} ${route.url} declares no role`)
  })

  app.decorateRequest('principal', null)
  app.decorateRequest('rateLimit', null)

  /**
   * Resolves the key and charges the request (to the key, or to the client address without a
   * valid key), setting the rate-limit headers; throws 429 when refused.
   */
  async function charge (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const presented = presentedKey(request)
    const principal = presented === null ? null : await resolveKey(presented)
    request.principal = principal
    if (principal !== null) {
      // Every later line of this request names the key by its id (never the key itself), the
      // error handler's and Fastify's "request completed" (written through reply.log) included.
      request.log = request.log.child({ keyId: principal.keyId })
      reply.log = request.log
    }

    const subject = principal === null ? `ip:${request.ip}` : subjectOfKey(principal.keyId)
    const quota = principal === null ? ANONYMOUS_QUOTA : principal.quota
    // Preflights and GET /rate_limit cost nothing: a browser app's preflights must not eat the
    // quota of its users' address, and a client must be able to ask how long to wait.
    const free = request.routeOptions?.config?.quota === 'free' || request.method === 'OPTIONS'
    const decision = free ? await limiter.peek(subject, quota) : await limiter.consume(subject, quota)
    request.rateLimit = decision
    reply.headers(rateLimitHeaders(decision, quota, clock.now()))
    if (free) return

    if (!decision.allowed) {
      if (decision.banStarted && decision.ban !== null) {
        await keys.recordBan({ keyId: principal?.keyId ?? null, subject, startedAt: decision.ban.startedAt, endsAt: decision.ban.until, reason: decision.ban.reason })
        request.log.warn({ subject, until: new Date(decision.ban.until).toISOString() }, 'ban started')
        options.onBan?.(subject, principal?.keyId ?? null, decision.ban.until)
      }
      options.onDecision?.(decision.code === 'api_key_banned' ? 'banned' : 'limited')
      const retry = { 'retry-after': String(decision.retryAfterSeconds) }
      throw decision.code === 'api_key_banned'
        ? new AppError('api_key_banned', `this caller is banned until ${new Date(decision.ban?.until ?? clock.now()).toISOString()} for calling while told to wait; back off exponentially after a 429`, { headers: retry })
        : new AppError('rate_limited', `rate limit exceeded; retry in ${decision.retryAfterSeconds} s`, { headers: retry })
    }
    options.onDecision?.('allowed')
  }

  /** 401 without a valid key, 403 below the route's role. */
  function authorize (request: FastifyRequest, reply: FastifyReply): void {
    const role = request.routeOptions.config.role
    if (role === undefined) return // unknown paths (404/405) and preflights
    const principal = request.principal
    if (principal === null) {
      reply.header('www-authenticate', 'Bearer realm="petstore"')
      throw new AppError('unauthenticated', presentedKey(request) === null
        ? 'an API key is required: send it as X-API-Key or Authorization: Bearer'
        : 'the API key is not valid (unknown or revoked)')
    }
    if (ROLE_RANK[principal.role] < ROLE_RANK[role]) {
      throw new AppError('forbidden', `this operation needs the ${role} role; the key has ${principal.role}`)
    }
  }

  // The guard decides on what the router matched, never on the text of the URL: the router
  // decodes the path (and takes the path of an absolute-form target), so `/v%31/admin/keys` and
  // `GET http://host/v1/admin/keys` match the /v1 route, and a route that declares a role is
  // always checked. isApiPath only decides whether a request that matched no role-bearing route
  // (a 404, a 405, a preflight) is charged and gets the rate-limit headers.
  //
  // One canonical form: percent-escapes and absolute-form targets are routed, and guarded, like
  // the plain path; a path with an empty segment (a trailing or doubled slash) under /v1 is not an
  // operation's path, so it is charged and answered 404 whatever route it would happen to fit.
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.role === undefined && !isApiPath(request.url)) return
    await charge(request, reply)
    if (hasEmptySegment(request.url)) throw new AppError('not_found', 'no operation at this path: paths have no empty segment (no trailing or doubled slash); see /openapi.json')
    authorize(request, reply)
  })

  return { resolveKey, charge }
}

/**
 * Whether a request target lies under /v1, read the way the router reads it: the path of an
 * absolute-form target, without the query, percent-escapes decoded (a malformed one is left as it
 * is rather than failing), repeated slashes collapsed, letters folded. It never lets a request
 * skip a check: a route that declares a role is checked whatever this answers (see the hook).
 */
export function isApiPath (url: string): boolean {
  let path = url
  const authority = ABSOLUTE_FORM.exec(path)
  if (authority !== null) path = path.slice(authority[0].length)
  const end = path.search(/[?#]/)
  if (end !== -1) path = path.slice(0, end)
  if (path.includes('%')) path = path.replace(/%([0-9A-Fa-f]{2})/g, (_match, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
  path = path.replace(/\/{2,}/g, '/').toLowerCase()
  return path === '/v1' || path.startsWith('/v1/')
}

const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/

/** A trailing or doubled slash in the path of a request target (the query is not looked at). */
export function hasEmptySegment (url: string): boolean {
  let start = 0
  const authority = ABSOLUTE_FORM.exec(url)
  if (authority !== null) start = authority[0].length
  let end = url.length
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i)
    if (c === 63 || c === 35) { end = i; break } // ? #
  }
  const path = url.slice(start, end)
  return path.includes('//') || (path.length > 1 && path.endsWith('/'))
}

function presentedKey (request: FastifyRequest): string | null {
  const header = request.headers['x-api-key']
  if (typeof header === 'string' && header !== '') return header
  const authorization = request.headers.authorization
  if (typeof authorization === 'string' && /^bearer /i.test(authorization)) {
    const token = authorization.slice(7).trim()
    if (token !== '') return token
  }
  return null
}
