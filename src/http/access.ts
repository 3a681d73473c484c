// The HTTP side of access (docs/product.md sections 3 and 4): the pipeline's access step reads the
// request's facts, asks the access service (access/access.service.ts) for a decision, and turns
// the outcome into headers (rate limits, Retry-After, WWW-Authenticate) and the refusal to
// answer, if any. Every decision is access/'s: the service's, and which requests it decides and
// what a wrong target is answered (access/targets.ts).
import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify'
import type { Principal } from '../access/principal.ts'
import { cookieValue, isPortalFreeRead, PORTAL_COOKIE, type PortalCredentials } from '../access/portal-gate.ts'
import type { ScopeNeed } from '../accounts/scopes.ts'
import type { AccessOutcome, AccessService } from '../access/access.service.ts'
import type { RefusedKey } from '../access/key-cache.ts'
import { asksForKey, isGuarded, isPreflight, malformedUrl, malformedUrlRefusal, refusalFor } from '../access/targets.ts'
import type { Decision } from '../ratelimit/limiter.ts'
import { isApiPath } from '../shared/api-path.ts'
import type { Clock } from '../shared/clock.ts'
import { withActor } from '../shared/actor-context.ts'
import { sendError, toAppError } from './errors.ts'
import { setRateLimitHeaders } from './rate-limit-headers.ts'
import { viaPortal } from './instance.ts'
import { keyParameterOf } from './redact.ts'

export type { AccessEvents } from '../access/access.service.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The limiter's answer for this request (GET /rate_limit reports it). */
    rateLimit: Decision | null
    /** Whether the request was charged to its windows, as the access service decided (AccessOutcome.charged). */
    charged: boolean
    /**
     * The key of ours the request presented (or its portal session's) when it was refused:
     * revoked, expired, rotated past its grace period (AccessOutcome.refusedKey). The key's own
     * request log keeps the refusal (http/request-steps.ts); null otherwise, and for an unknown key.
     */
    refusedKey: RefusedKey | null
  }
}

export interface AccessHookOptions {
  access: AccessService
  clock: Clock
}

/** The challenge of a 401 (RFC 9110 11.6.1): the API takes a key as a bearer token. */
const CHALLENGE = 'Bearer realm="petstore"'

/** What a route needs of the access step, read from its config once (http/pipeline.ts). */
export interface RouteAccess {
  /** The least role, or undefined: no key needed (role none) or no operation (a 404, /health). */
  readonly role: Principal['role'] | undefined
  readonly scope: ScopeNeed | undefined
  readonly free: boolean
  /** Free through the partner portal's door (access/portal-gate.ts), charged otherwise. */
  readonly portalFree: boolean
  readonly banExempt: boolean
}

/**
 * A route's needs from its config: role none (no key needed) is decided like a request that
 * matched no role, charged and never refused for its key.
 */
export function routeAccessOf (config: FastifyContextConfig): RouteAccess {
  // Fastify adds the route's url and method to the config object it makes per route.
  const { url, method } = config as { url?: string; method?: string | string[] }
  return {
    role: config.role === 'none' ? undefined : config.role,
    scope: config.scope,
    free: config.quota === 'free',
    portalFree: config.quota === 'free' || isPortalFreeRead(method, url),
    banExempt: config.banExempt === true
  }
}

/** Declares what the access step sets on each request. */
export function decorateAccess (app: FastifyInstance): void {
  app.decorateRequest('principal', null)
  app.decorateRequest('rateLimit', null)
  app.decorateRequest('charged', false)
  app.decorateRequest('refusedKey', null)
}

/**
 * The access step of the pipeline (http/pipeline.ts): asks the access service for a decision and
 * sets its headers; returns the refusal to answer, if any. Not async: when the key is cached and
 * the limiter answers at once, the request goes on without a promise.
 */
export function accessStep ({ access }: AccessHookOptions): (
  request: FastifyRequest,
  reply: FastifyReply,
  route: RouteAccess
) => Error | undefined | Promise<Error | undefined> {
  return (request, reply, route) => {
    if (!isGuarded(route.role, request.url)) return undefined
    // Through the portal's door the session is the credential: a key header sent with it is not read.
    const portal = viaPortal(request) ? portalCredentials(request) : undefined
    const outcome = access.decide({
      key: portal === undefined ? presentedKey(request) : null,
      address: request.ip,
      role: route.role,
      scope: route.scope,
      free: portal === undefined ? route.free : route.portalFree,
      banExempt: route.banExempt,
      preflight: isPreflight(request.method, route.role),
      keyInQuery: keyParameterOf(request.url),
      portal
    })
    return outcome instanceof Promise ? outcome.then((o) => apply(request, reply, o)) : apply(request, reply, outcome)
  }

  /** Sets what the outcome says on the request and the reply; returns the refusal to answer. */
  function apply (request: FastifyRequest, reply: FastifyReply, outcome: AccessOutcome): Error | undefined {
    const { principal, decision } = outcome
    request.principal = principal
    request.rateLimit = decision
    request.charged = outcome.charged
    request.refusedKey = outcome.refusedKey
    // The request's logger reads the key id from request.principal (http/request-log.ts): no
    // child logger is built here.
    setRateLimitHeaders(reply, decision, outcome.quota, outcome.at)
    if (decision.banStarted && decision.ban !== null) {
      request.log.warn({ subject: outcome.subject, until: new Date(decision.ban.until).toISOString() }, 'ban started')
    }
    if (outcome.banNotRecorded !== undefined) {
      request.log.error({ subject: outcome.subject, err: outcome.banNotRecorded }, 'ban in force but not recorded in the database: retried later')
    }
    const answer = refusalFor(outcome, request.url)
    if (answer === null) return undefined
    if (asksForKey(answer)) reply.header('www-authenticate', CHALLENGE)
    return answer
  }
}

/**
 * The actor of the audit log (shared/actor-context.ts): what the handler changes is this
 * request's doing. A preHandler of the routes that write (http/pipeline.ts): set after parsing,
 * since a body's stream events would lose it.
 */
export const actorStep: preHandlerHookHandler = (request, _reply, done) => {
  const p = request.principal
  withActor({
    actor: p === null
      ? { type: 'address' }
      : { type: 'key', keyId: p.keyId, role: p.role, ...(viaPortal(request) && { via: 'portal' as const }) },
    requestId: request.id,
    address: request.ip
  }, done)
}

/**
 * Fastify's frameworkErrors handler: a URL that never reached routing (bad percent-encoding, an
 * over-long segment) is charged like any /v1 request, then answered 400 with the error object.
 */
export function answerMalformedUrl (access: AccessService, clock: Clock) {
  return (_error: Error, request: FastifyRequest, reply: FastifyReply): void => {
    reply.header('request-id', request.id)
    if (!isApiPath(request.url)) {
      sendError(request, reply, malformedUrl())
      return
    }
    const answer = (outcome: AccessOutcome): void => {
      setRateLimitHeaders(reply, outcome.decision, outcome.quota, clock.now())
      sendError(request, reply, toAppError(malformedUrlRefusal(outcome)))
    }
    try {
      const outcome = access.decide({
        key: presentedKey(request),
        address: request.ip,
        role: undefined,
        free: false,
        preflight: false,
        keyInQuery: null
      })
      if (outcome instanceof Promise) {
        outcome.then(answer, (error: unknown) => sendError(request, reply, toAppError(error)))
      } else {
        answer(outcome)
      }
    } catch (error) {
      sendError(request, reply, toAppError(error))
    }
  }
}

/** What a request through the portal's door presents: its session cookie and CSRF header. */
export function portalCredentials (request: FastifyRequest): PortalCredentials {
  const csrf = request.headers['x-csrf-token']
  return {
    session: cookieValue(request.headers.cookie, PORTAL_COOKIE),
    csrf: typeof csrf === 'string' ? csrf : null,
    safe: request.method === 'GET' || request.method === 'HEAD'
  }
}

/** The key presented in X-API-Key, else a non-empty Bearer token; null when none. */
export function presentedKey (request: FastifyRequest): string | null {
  const header = request.headers['x-api-key']
  if (typeof header === 'string' && header !== '') return header
  const authorization = request.headers.authorization
  if (typeof authorization === 'string' && /^bearer /i.test(authorization)) {
    const token = authorization.slice(7).trim()
    if (token !== '') return token
  }
  return null
}
