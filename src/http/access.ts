// The HTTP side of access (docs/product.md sections 3 and 4): one onRequest hook that reads the
// request's facts, asks the access service (access/access.service.ts) for a decision, and turns
// the outcome into headers (rate limits, Retry-After, WWW-Authenticate) and the refusal to
// answer, if any. Every decision is access/'s: the service's, and which requests it decides and
// what a wrong target is answered (access/targets.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AccessOutcome, AccessService } from '../access/access.service.ts'
import { asksForKey, isGuarded, isApiPath, isPreflight, malformedUrl, malformedUrlRefusal, refusalFor } from '../access/targets.ts'
import type { Decision } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import { withActor } from '../shared/actor-context.ts'
import { sendError, toAppError } from './errors.ts'
import { setRateLimitHeaders } from './rate-limit-headers.ts'
import { keyParameterOf } from './redact.ts'
import { routeConfigOf } from '../routing/route-config.ts'

export type { AccessEvents } from '../access/access.service.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The limiter's answer for this request (GET /rate_limit reports it). */
    rateLimit: Decision | null
    /** Whether the request was charged to its windows, as the access service decided (AccessOutcome.charged). */
    charged: boolean
  }
}

export interface AccessHookOptions {
  access: AccessService
  clock: Clock
}

/** The challenge of a 401 (RFC 9110 11.6.1): the API takes a key as a bearer token. */
const CHALLENGE = 'Bearer realm="petstore"'

export function installAccess (app: FastifyInstance, { access, clock }: AccessHookOptions): void {
  app.decorateRequest('principal', null)
  app.decorateRequest('rateLimit', null)
  app.decorateRequest('charged', false)

  // Not async: when the key is cached and the limiter answers at once, the request goes on
  // without a promise.
  app.addHook('onRequest', (request, reply, done) => {
    const config = routeConfigOf(request)
    // Role none (no key needed): decided like a request that matched no role, charged and never refused for its key.
    const role = config.role === 'none' ? undefined : config.role
    if (!isGuarded(role, request.url)) { done(); return }
    const outcome = access.decide({
      key: presentedKey(request),
      address: request.ip,
      role,
      scope: config.scope,
      free: config.quota === 'free',
      banExempt: config.banExempt === true,
      preflight: isPreflight(request.method, role),
      keyInQuery: keyParameterOf(request.url)
    })
    if (outcome instanceof Promise) {
      outcome.then((o) => { done(apply(request, reply, o)) }, (error: unknown) => { done(error as Error) })
    } else {
      const refusal = apply(request, reply, outcome)
      if (refusal === undefined) done()
      // A refusal waits one microtask: when the bytes after a well-formed head are malformed HTTP
      // (a bad chunk), Node's parser reports it in this same tick and its 400, which closes the
      // connection, goes first, as it did when this step was always asynchronous.
      else queueMicrotask(() => { done(refusal) })
    }
  })

  // The actor of the audit log (shared/actor-context.ts): what the handler changes is this
  // request's doing. Set after parsing (a body's stream events would lose it); reads skip it.
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.method === 'GET' || request.method === 'HEAD') { done(); return }
    const p = request.principal
    withActor({ actor: p === null ? { type: 'address' } : { type: 'key', keyId: p.keyId, role: p.role }, requestId: request.id, address: request.ip }, done)
  })

  /** Sets what the outcome says on the request and the reply; returns the refusal to answer. */
  function apply (request: FastifyRequest, reply: FastifyReply, outcome: AccessOutcome): Error | undefined {
    const { principal, decision } = outcome
    request.principal = principal
    request.rateLimit = decision
    request.charged = outcome.charged
    // The request's logger reads the key id from request.principal (http/request-log.ts): no
    // child logger is built here.
    setRateLimitHeaders(reply, decision, outcome.quota, clock.now())
    if (decision.banStarted && decision.ban !== null) request.log.warn({ subject: outcome.subject, until: new Date(decision.ban.until).toISOString() }, 'ban started')
    if (outcome.banNotRecorded !== undefined) request.log.error({ subject: outcome.subject, err: outcome.banNotRecorded }, 'ban in force but not recorded in the database: retried later')
    const answer = refusalFor(outcome, request.url)
    if (answer === null) return undefined
    if (asksForKey(answer)) reply.header('www-authenticate', CHALLENGE)
    return answer
  }
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
      const outcome = access.decide({ key: presentedKey(request), address: request.ip, role: undefined, free: false, preflight: false, keyInQuery: null })
      if (outcome instanceof Promise) outcome.then(answer, (error: unknown) => sendError(request, reply, toAppError(error)))
      else answer(outcome)
    } catch (error) {
      sendError(request, reply, toAppError(error))
    }
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
