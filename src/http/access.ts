// The HTTP side of access (docs/product.md sections 3 and 4): one onRequest hook that reads the
// request's facts, asks the access service (access/access.service.ts) for a decision, and turns
// the outcome into headers (rate limits, Retry-After, WWW-Authenticate) and the refusal to
// answer, if any. Every decision is the service's.
//
// The guard decides on what the router matched, never on the text of the URL: the router
// decodes the path (and takes the path of an absolute-form target), so `/v%31/admin/keys` and
// `GET http://host/v1/admin/keys` match the /v1 route, and a route that declares a role is
// always checked. isApiPath only decides whether a request that matched no role-bearing route
// (a 404, a 405, a preflight, a malformed URL) is charged and gets the rate-limit headers.
//
// One canonical form: percent-escapes and absolute-form targets are routed, and guarded, like
// the plain path; a path with an empty segment (a trailing or doubled slash) under /v1 is not an
// operation's path, so it is charged and answered 404 whatever route it would happen to fit.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AccessOutcome, AccessService } from '../access/access.service.ts'
import { AppError } from '../errors.ts'
import type { Decision } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
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

const statusOf = (error: Error): number | undefined => (error as Partial<AppError>).status

export function installAccess (app: FastifyInstance, { access, clock }: AccessHookOptions): void {
  app.decorateRequest('principal', null)
  app.decorateRequest('rateLimit', null)
  app.decorateRequest('charged', false)

  // Not async: when the key is cached and the limiter answers at once, the request goes on
  // without a promise.
  app.addHook('onRequest', (request, reply, done) => {
    const config = routeConfigOf(request)
    const role = config.role
    if (role === undefined && !isApiPath(request.url)) { done(); return }
    const outcome = access.decide({
      key: presentedKey(request),
      address: request.ip,
      role,
      free: config.quota === 'free',
      preflight: request.method === 'OPTIONS' && role === undefined,
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

  /** Sets what the outcome says on the request and the reply; returns the refusal to answer. */
  function apply (request: FastifyRequest, reply: FastifyReply, outcome: AccessOutcome): Error | undefined {
    const { principal, decision, refusal } = outcome
    request.principal = principal
    request.rateLimit = decision
    request.charged = outcome.charged
    // The request's logger reads the key id from request.principal (http/request-log.ts): no
    // child logger is built here.
    setRateLimitHeaders(reply, decision, outcome.quota, clock.now())
    if (decision.banStarted && decision.ban !== null) request.log.warn({ subject: outcome.subject, until: new Date(decision.ban.until).toISOString() }, 'ban started')
    if (outcome.banNotRecorded !== undefined) request.log.error({ subject: outcome.subject, err: outcome.banNotRecorded }, 'ban in force but not recorded in the database: retried later')
    if (refusal === null) return hasEmptySegment(request.url) ? emptySegment() : undefined
    const status = statusOf(refusal)
    if (status === 429) return refusal
    if (hasEmptySegment(request.url)) return emptySegment()
    if (status === 401) reply.header('www-authenticate', CHALLENGE)
    return refusal
  }
}

const emptySegment = (): AppError => new AppError('not_found', 'no operation at this path: paths have no empty segment (no trailing or doubled slash); see /openapi.json')

/**
 * Fastify's frameworkErrors handler: a URL that never reached routing (bad percent-encoding, an
 * over-long segment) is charged like any /v1 request, then answered 400 with the error object.
 */
export function answerMalformedUrl (access: AccessService, clock: Clock) {
  return (_error: Error, request: FastifyRequest, reply: FastifyReply): void => {
    reply.header('request-id', request.id)
    const malformed = new AppError('validation_failed', 'the request URL is malformed (bad percent-encoding or an over-long path segment)')
    if (!isApiPath(request.url)) {
      sendError(request, reply, malformed)
      return
    }
    const answer = (outcome: AccessOutcome): void => {
      setRateLimitHeaders(reply, outcome.decision, outcome.quota, clock.now())
      const refusal = outcome.refusal
      sendError(request, reply, refusal !== null && statusOf(refusal) === 429 ? refusal as AppError : malformed)
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
  if (url.charCodeAt(0) !== 47) { // not '/': maybe absolute-form
    const authority = ABSOLUTE_FORM.exec(url)
    if (authority !== null) start = authority[0].length
  }
  let end = url.length
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i)
    if (c === 63 || c === 35) { end = i; break } // ? #
  }
  const path = start === 0 && end === url.length ? url : url.slice(start, end)
  return path.includes('//') || (path.length > 1 && path.endsWith('/'))
}

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
