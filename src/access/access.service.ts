// Who is calling, how much they may call, and whether they may call this (docs/product.md
// sections 3 and 4). The HTTP hook (http/access.ts) hands each request's facts to decide() and
// turns the outcome into headers and an answer; every decision is taken here, from the key cache
// (key-cache.ts), the limiter and the refusals (refusals.ts).
//
// Order matters: the key is resolved first (without failing), then the request is charged to the
// caller's identity, or to the client address when there is no valid key (so 401s are
// throttled and carry the headers), and only then are a missing key (401) and the role (403)
// enforced. A key this instance has not resolved is read from the database while the client
// address may still call (a peek of the address first); a banned or exhausted address gets its
// 429 without a database read, whatever key it sends, but for one lookup a second
// (address-lookups.ts), so that a valid key behind a shared address is served all the same. A
// preflight never reads its key. A refusal of an address names the address (refusals.ts).
//
// decide() answers synchronously when it can (the key is cached, refused recently or malformed,
// and the limiter answers synchronously), so the common request costs no promise; otherwise it
// returns a promise.
import type { Decision, Quota, RateLimiter } from '../ratelimit/limiter.ts'
import type { KeyStore } from '../accounts/keys.store.ts'
import type { Role } from '../accounts/plans.ts'
import type { ScopeNeed } from '../accounts/scopes.ts'
import type { Clock } from '../shared/clock.ts'
import { createAddressLookups } from './address-lookups.ts'
import { createBanRecorder, type BanFailureListener, type BanListener } from './ban-record.ts'
import { subjectOfAddress } from './client-subject.ts'
import { createDaySeeder } from './day-seed.ts'
import { createFreeReads } from './free-reads.ts'
import { createKeyCache, isRefused, refusedKeyOf, type KeyCacheOptions, type Refused, type RefusedKey } from './key-cache.ts'
import type { PortalCredentials, PortalGate } from './portal-gate.ts'
import { ANONYMOUS_QUOTA, principalOf, type Principal } from './principal.ts'
import { AppError } from '../errors.ts'
import { freeReadsSpent, limited, refusalOf, toRefusal } from './refusals.ts'

export { BAN_RETRY_MS } from './ban-record.ts'

/** The facts of one request the HTTP layer passes in. */
export interface AccessRequest {
  /** The key as presented in X-API-Key or Authorization: Bearer; null when none. */
  key: string | null
  /** The client address (see TRUST_PROXY in config.ts). */
  address: string
  /** The least role of the matched operation; undefined for a request that matched none (404, 405). */
  role: Role | undefined
  /** The scopes the matched operation asks of a restricted key (route config `scope`); none when absent. */
  scope?: ScopeNeed | undefined
  /**
   * The operation costs a valid key no quota (GET /rate_limit); while the key is banned, within
   * the free reads' allowance (free-reads.ts).
   */
  free: boolean
  /**
   * The operation is served to a valid key while it is banned, uncharged (route config
   * `banExempt`: the key holder's own view and ban history), within the free reads' allowance
   * (free-reads.ts). Bans only: an exhausted window, an expired or revoked key and a banned
   * address are refused as anywhere.
   */
  banExempt?: boolean
  /** A CORS preflight: costs nothing, checks nothing, still gets the headers. */
  preflight: boolean
  /** The name of a query parameter that carries a key, if any: refused after the charge. */
  keyInQuery: string | null
  /**
   * A request through the partner portal's door (/portal/api/v1, access/portal-gate.ts): its
   * session stands for the key (`key` is then ignored), decided as the session's key would be.
   */
  portal?: PortalCredentials | undefined
}

export interface AccessOutcome {
  principal: Principal | null
  decision: Decision
  /** The quota the decision was taken against (for the headers), and the subject charged. */
  quota: Quota
  subject: string
  /**
   * Whether the request was charged (consumed from its windows). Preflights, and free operations
   * called with a valid key, are answered from a peek: they left the windows as they were.
   */
  charged: boolean
  /**
   * What to answer instead of serving: 429, 400 (key in the URL), 401 or 403 (forbidden,
   * insufficient_scope), or the failure to read the key (503 during a database outage); null to
   * serve.
   */
  refusal: Error | null
  /**
   * Set when this request started a ban whose record in the database failed (it is retried): the
   * failure, for the log.
   */
  banNotRecorded?: unknown
  /** The clock's time of the decision (ms): the refusal's wait and the rate-limit headers count from it. */
  at: number
  /**
   * The key presented (or the portal session's key) when it is a key of ours that was refused:
   * revoked, expired, or rotated past its grace period. Its request log keeps the refusal
   * (key-requests/); null for a valid key, an unknown one, or none.
   */
  refusedKey: RefusedKey | null
}

export interface AccessEvents {
  /** A request was allowed, limited or banned (metrics). */
  onDecision?: (outcome: 'allowed' | 'limited' | 'banned') => void
  /** A ban started; it is recorded in the database already. For logs and metrics. */
  onBan?: BanListener
}

export interface AccessServiceOptions extends AccessEvents, Omit<KeyCacheOptions, 'keys'> {
  /** A ban started (and is in force in the limiter), but recording it in the database failed; it is retried. */
  onBanNotRecorded?: BanFailureListener
  /** An observer (onBan, onBanNotRecorded) threw: its error, for the log; the request is answered all the same. */
  onObserverError?: (error: unknown) => void
  /** How often a refused address may still have a key looked up (ADDRESS_LOOKUP_INTERVAL_MS). */
  addressLookupMs?: number
  keys: KeyStore
  limiter: RateLimiter
  clock: Clock
}

export interface AccessService {
  decide (request: AccessRequest): AccessOutcome | Promise<AccessOutcome>
  /**
   * Forgets what is cached about a key, and about every key whose caller's identity it is (pass
   * the identity to forget a whole rotation chain): a revocation, role, plan or ban changed.
   */
  forgetKey (keyId: number): void
  /** Records the bans whose record in the database failed; resolves to how many are still pending. */
  retryPendingBans (): Promise<number>
  /** The partner portal's sessions (portal/portal.service.ts): until given, every portal request is refused. */
  usePortal (gate: PortalGate): void
}

/** What a request is charged as: its principal, or none (then why: the failure to read the key, or its expiry). */
interface Charge {
  request: AccessRequest
  principal: Principal | null
  /** The failure to read the key (the database is out), or null. */
  failure: unknown
  /** The instant the presented key expired, when that is why there is no principal. */
  expiredAt: number | null
  /** The presented key, when it is a key of ours refused (revoked, expired): for its request log. */
  refusedKey?: RefusedKey | null
  /** A portal request's own refusal (portal_session_ended, csrf_token_invalid), answered unless it is limited. */
  portalRefusal?: AppError
}

/**
 * Whether this is a banned key's own read, served within its free reads' allowance (free-reads.ts):
 * the operation is free or says so (banExempt), the key is valid (the ban is on its quota
 * identity, not on the client address) and the ban was already in force. The request that starts
 * a ban counted a strike and is answered with the ban, like anywhere.
 */
function ownReadWhileBanned (c: Charge, decision: Decision): c is Charge & { principal: Principal } {
  return (c.request.banExempt === true || c.request.free) && c.principal !== null
    && decision.code === 'api_key_banned' && decision.ban !== null && !decision.banStarted
}

function isPromise<T> (value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function'
}

export function createAccessService (options: AccessServiceOptions): AccessService {
  const { limiter, clock } = options
  const cache = createKeyCache(options)
  const bans = createBanRecorder(options)
  const lookups = createAddressLookups(options.addressLookupMs)
  const days = createDaySeeder(options.keys, limiter)
  const freeReads = createFreeReads()
  let portal: PortalGate | null = null

  const anonymous = (request: AccessRequest): Charge => ({ request, principal: null, failure: null, expiredAt: null })
  const failed = (request: AccessRequest, failure: unknown): Charge =>
    ({ request, principal: null, failure, expiredAt: null })
  const found = (request: AccessRequest, f: Principal | Refused): Charge => isRefused(f)
    // A refused key (an expired one too) is charged to the client address, like no key: the
    // forgotten deployment of a rotated key must not eat its successor's quota.
    ? { request, principal: null, failure: null, expiredAt: f.expiredAt, refusedKey: f.key }
    : { request, principal: f, failure: null, expiredAt: null }

  function decide (request: AccessRequest): AccessOutcome | Promise<AccessOutcome> {
    // A preflight never reads its key: its headers describe the client address, so it cannot
    // tell whether a guessed key is valid, nor cost a database read.
    if (request.portal !== undefined && !request.preflight) return portalThenCharge(request, request.portal)
    if (request.key === null || request.preflight) return charge(anonymous(request))
    const key = request.key
    const now = clock.now()
    // Memory lookups and at most one hash: never throws.
    const known = cache.cached(key, now)
    if (known !== undefined) return charge(found(request, known), now)
    // A key this instance has never resolved is read while the client address may still call.
    // A banned or exhausted address is answered from the limiter (charged, so its strikes
    // count), whatever key it sends, but for one lookup per ADDRESS_LOOKUP_INTERVAL_MS: guessing
    // from it costs at most that many reads, and a valid key behind it is served.
    if (!cache.knows(key)) {
      const address = subjectOfAddress(request.address)
      let gate: Decision | Promise<Decision>
      try {
        gate = limiter.peek(address, ANONYMOUS_QUOTA)
      } catch {
        return readThenCharge(request, key, now)
      }
      const pass = (g: Decision): AccessOutcome | Promise<AccessOutcome> =>
        g.allowed || lookups.take(address, now) ? readThenCharge(request, key, now) : charge(anonymous(request))
      if (isPromise(gate)) return gate.then(pass, () => readThenCharge(request, key, now))
      return pass(gate)
    }
    return readThenCharge(request, key, now)
  }

  function readThenCharge (request: AccessRequest, key: string, now: number): Promise<AccessOutcome> {
    let read: Promise<Principal | Refused>
    try {
      read = cache.read(key, now)
    } catch (error) {
      return Promise.resolve(charge(failed(request, error), now))
    }
    // When the key cannot be read (the database is out), the request is still charged, to the
    // client address, so that the 503 carries the rate-limit headers.
    return read.then((f) => charge(found(request, f)), (error: unknown) => charge(failed(request, error)))
  }

  /**
   * A portal request: its session's key read (one session and one key row), then charged and
   * decided like that key's own request. Without a live session it is charged to the client
   * address, like a request without a valid key (so guessing cookies is throttled), and answered
   * 401 portal_session_ended; a change without the session's CSRF token is charged to the key and
   * answered 403 csrf_token_invalid.
   */
  function portalThenCharge (
    request: AccessRequest,
    credentials: PortalCredentials
  ): Promise<AccessOutcome> | AccessOutcome {
    const ended = (why: string, refusedKey: RefusedKey | null = null): Charge =>
      ({ ...anonymous(request), portalRefusal: new AppError('portal_session_ended', why), refusedKey })
    if (portal === null || credentials.session === null) return charge(ended('no portal session: open a new link'))
    const token = credentials.session
    const now = clock.now()
    // The session's key, and when it is refused (revoked, expired), which key: its request log
    // keeps the refusal, as for the key presented itself.
    let read: Promise<Principal | RefusedKey | null>
    try {
      read = portal.sessionKey(token, now).then((record) =>
        record === null ? null : principalOf(record, now) ?? refusedKeyOf(record, now))
    } catch (error) {
      return charge(failed(request, error), now)
    }
    return read.then((found) => {
      if (found === null || !('role' in found)) return charge(ended('the portal session ended (signed out, idle for an hour, 24 hours old, or its key revoked or expired): open a new link', found))
      const principal: Principal = found
      const c: Charge = { request, principal, failure: null, expiredAt: null }
      if (!credentials.safe && !portal!.csrfMatches(token, credentials.csrf)) {
        c.portalRefusal = new AppError('csrf_token_invalid', 'a change through the portal needs the session\'s X-CSRF-Token header (GET /portal/session gives it)')
      }
      return charge(c)
    }, (error: unknown) => charge(failed(request, error)))
  }

  function charge (c: Charge, now: number = clock.now()): AccessOutcome | Promise<AccessOutcome> {
    const { principal } = c
    const subject = principal === null ? subjectOfAddress(c.request.address) : principal.caller.subject
    const quota = principal === null ? ANONYMOUS_QUOTA : principal.quota
    // Preflights, and free operations called with a valid key, cost nothing: a browser app's
    // preflights must not eat its users' quota, and a client must be able to ask how long to
    // wait. A wrong key is charged everywhere, so guessing is never free (nor is a key that could
    // not be read: it has no principal).
    const charged = !(c.request.preflight || (c.request.free && principal !== null))
    // Off the request path: the identity's day count, put back from the database when the
    // limiter may have lost it (day-seed.ts).
    if (principal !== null) days.check(principal, now)
    const decision = charged ? limiter.consume(subject, quota) : limiter.peek(subject, quota)
    const refusedKey = c.refusedKey ?? null
    if (isPromise(decision)) {
      return decision.then((d) => conclude(c, {
        principal, decision: d, quota, subject, charged, refusal: null, at: clock.now(), refusedKey
      }))
    }
    return conclude(c, { principal, decision, quota, subject, charged, refusal: null, at: now, refusedKey })
  }

  /** Completes the outcome: its refusal, the metrics, and the record of a ban it started. */
  function conclude (c: Charge, outcome: AccessOutcome): AccessOutcome | Promise<AccessOutcome> {
    const { decision } = outcome
    if (ownReadWhileBanned(c, decision)) {
      // A consume while banned charges no window and counts no strike (ratelimit/limiter.ts,
      // decision 7), so the read is served as it was, uncharged (role and scope still apply),
      // while the key identity and the address have free reads left this minute; past them, it
      // gets the ban's 429, which says so, and extends nothing either.
      outcome.charged = false
      if (freeReads.take(c.principal.caller.subject, subjectOfAddress(c.request.address), outcome.at)) {
        outcome.refusal = refusalOf(c.request, c.principal, c.expiredAt)
      } else {
        outcome.refusal = freeReadsSpent(decision, outcome.at)
        options.onDecision?.('banned')
      }
      return outcome
    }
    if (outcome.charged && !decision.allowed) {
      outcome.refusal = limited(decision, outcome.at, c.principal === null ? outcome.subject : null)
      options.onDecision?.(decision.code === 'api_key_banned' ? 'banned' : 'limited')
      if (decision.banStarted && decision.ban !== null) {
        const { ban } = decision
        return bans.record({
          keyId: c.principal?.keyId ?? null,
          subject: outcome.subject,
          startedAt: ban.startedAt,
          endsAt: ban.until,
          reason: ban.reason,
          strike: ban.level
        }).then((failure) => {
          if (failure !== undefined) outcome.banNotRecorded = failure
          return outcome
        })
      }
      bans.retryIfDue()
      return outcome
    }
    if (outcome.charged) options.onDecision?.('allowed')
    outcome.refusal = c.failure !== null
      ? toRefusal(c.failure)
      : c.portalRefusal ?? refusalOf(c.request, c.principal, c.expiredAt)
    return outcome
  }

  return {
    decide,
    retryPendingBans: bans.retryPending,
    forgetKey: cache.forget,
    usePortal: (gate) => { portal = gate }
  }
}
