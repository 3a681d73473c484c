// Who is calling, how much they may call, and whether they may call this (docs/product.md
// sections 3 and 4). The HTTP layer hands each request's facts to decide() and only sets headers
// and throws what it answers; every decision lives here, next to the keys and the limiter.
//
// Order matters: the key is resolved first (without failing), then the request is charged to the
// key's quota subject, or to the client address when there is no valid key (so 401s are
// throttled and carry the headers), and only then are a missing key (401) and the role (403)
// enforced. A key this instance has not resolved is read from the database only while the client
// address may still call (a peek of the address first): a banned or exhausted address gets its
// 429 without a database read, whatever key it sends. A preflight never reads its key.
//
// decide() answers synchronously when it can (the key is cached, refused recently or malformed,
// and the limiter answers synchronously), so the common request costs no promise; otherwise it
// returns a promise.
import { AppError } from '../errors.ts'
import type { Decision, Quota, RateLimiter } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import { PLAN_QUOTAS, ROLE_RANK, type Plan, type Role } from '../keys/keys.schema.ts'
import { isExpired, subjectOf } from '../keys/keys.rules.ts'
import { hashKey, quotaOf } from '../keys/keys.service.ts'
import type { BanRecord, KeyRecord, KeyStore } from '../keys/keys.store.ts'
import { subjectOfAddress } from './client-subject.ts'

/** An authenticated caller. */
export interface Principal {
  keyId: number
  role: Role
  plan: Plan
  quota: Quota
  /**
   * The limiter subject the key is charged to: `key:ID` of its identity, so keys that share one
   * quota identity (a rotated key and its successor) share one subject.
   */
  subject: string
  /**
   * The caller's identity: the first key of its rotation chain (the key's own id when it was
   * never rotated). Quotas, bans, order ownership and Idempotency-Key claims belong to it, so the
   * successor of a rotated key is the same caller.
   */
  identityKeyId: number
}

/** The facts of one request the HTTP layer passes in. */
export interface AccessRequest {
  /** The key as presented in X-API-Key or Authorization: Bearer; null when none. */
  key: string | null
  /** The client address (see TRUST_PROXY in config.ts). */
  address: string
  /** The least role of the matched operation; undefined for a request that matched none (404, 405). */
  role: Role | undefined
  /** The operation costs no quota to a valid key (GET /rate_limit). */
  free: boolean
  /** A CORS preflight: costs nothing, checks nothing, still gets the headers. */
  preflight: boolean
  /** The name of a query parameter that carries a key, if any: refused after the charge. */
  keyInQuery: string | null
}

export interface AccessOutcome {
  principal: Principal | null
  decision: Decision
  /** The quota the decision was taken against (for the headers), and the subject charged. */
  quota: Quota
  subject: string
  /**
   * What to answer instead of serving: 429, 400 (key in the URL), 401 or 403, or the failure to
   * read the key (503 during a database outage); null to serve.
   */
  refusal: Error | null
  /** Set when this request started a ban whose record in the database failed (it is retried): the failure, for the log. */
  banNotRecorded?: unknown
}

export interface AccessEvents {
  /** A request was allowed, limited or banned (metrics). */
  onDecision?: (outcome: 'allowed' | 'limited' | 'banned') => void
  /** A ban started; it is recorded in the database already. For logs and metrics. */
  onBan?: (subject: string, keyId: number | null, until: number) => void
}

export interface AccessServiceOptions extends AccessEvents {
  /**
   * A ban started (and is in force in the limiter), but recording it in the database failed; it
   * is retried (retryPendingBans). The subject is `key:ID` or the address, never a key.
   */
  onBanNotRecorded?: (subject: string, until: number, error: unknown) => void
  /**
   * Extension point: called once per charged request after it is decided, served or refused
   * (preflights and free calls are not charged, so not reported). The place to record per-key
   * usage; it must not throw or block (queue and batch any write).
   */
  onDecided?: (outcome: AccessOutcome, request: AccessRequest) => void
  keys: KeyStore
  limiter: RateLimiter
  clock: Clock
  /** How long a resolved key is reused before it is read again (2 s): the bound on cross-instance staleness without Redis. */
  keyCacheMs?: number
  /** How many resolved keys are held at most (10,000). */
  keyCacheMax?: number
  /** How long a refused key is remembered (60 s), and how many at most (10,000). */
  refusedCacheMs?: number
  refusedCacheMax?: number
  /** During a database outage, a key's last principal is used for at most this long after it was read (5 min). */
  staleIfErrorMs?: number
  /**
   * Turns a stored key into the principal of a request, or null when the key may not be used
   * (revoked). The one place that decides what a key may do; extend it here (expiry, shared
   * quota identity).
   */
  principalOf?: (record: KeyRecord, now: number) => Principal | null
}

export interface AccessService {
  decide (request: AccessRequest): AccessOutcome | Promise<AccessOutcome>
  /** The principal of a key (cached), null for an unknown, revoked or malformed key. */
  resolve (key: string): Principal | null | Promise<Principal | null>
  /**
   * Forgets what is cached about a key, and about every key whose quota identity it is (pass the
   * identity, `quotaKeyId`, to forget a whole rotation chain): a revocation, role, plan or ban changed.
   */
  forgetKey (keyId: number): void
  /** Forgets every cached key. */
  forgetAll (): void
  /** Records the bans whose record in the database failed; resolves to how many are still pending. */
  retryPendingBans (): Promise<number>
}

/** A ban whose record in the database failed is tried again at most this often. */
export const BAN_RETRY_MS = 5000

/** Observers must not turn an answer into an error. */
function report (call: () => void): void {
  try {
    call()
  } catch {
    // deliberately ignored, see above
  }
}

export const ANONYMOUS_QUOTA: Quota = PLAN_QUOTAS.free

/** Keys are `psk_` and 43 base64url characters (keys/keys.service.ts generateKey); anything else is refused without a lookup. */
const KEY_FORMAT = /^psk_[A-Za-z0-9_-]{43}$/

/** A revoked or expired key is refused; a key is charged to its quota identity (shared by a rotation chain). */
export function defaultPrincipalOf (record: KeyRecord, now: number): Principal | null {
  if (record.revokedAt !== null || isExpired(record, now)) return null
  return { keyId: record.id, role: record.role, plan: record.plan, quota: quotaOf(record), subject: subjectOf(record), identityKeyId: record.quotaKeyId }
}

interface CachedKey { principal: Principal; expires: number; staleUntil: number }

/**
 * Why a presented key gives no principal: `expiredAt` when it is a key past its expiry (401
 * api_key_expired names the instant), null when it is unknown, revoked or malformed. Refused
 * keys are remembered as this very object.
 */
interface Refused { expires: number; expiredAt: number | null }
const NOT_VALID: Refused = Object.freeze({ expires: Infinity, expiredAt: null })

const isRefused = (value: Principal | Refused): value is Refused => !('keyId' in value)

/** The instant a stored key expired, when that (and not a revocation) is why it is refused. */
const expiryRefusal = (record: KeyRecord | null, now: number): number | null =>
  record !== null && record.revokedAt === null && isExpired(record, now) ? record.expiresAt : null

/**
 * A map bounded by size and time. Entries leave in insertion order when it is full (one delete
 * per insert, never a sweep), and lazily when found expired.
 */
class BoundedCache<V extends { expires: number }> {
  readonly map = new Map<string, V>()
  readonly max: number
  constructor (max: number) { this.max = max }
  get (key: string): V | undefined { return this.map.get(key) }
  set (key: string, value: V): void {
    this.map.delete(key)
    if (this.map.size >= this.max) {
      const oldest = this.map.keys().next()
      if (oldest.done !== true) this.map.delete(oldest.value)
    }
    this.map.set(key, value)
  }

  delete (key: string): void { this.map.delete(key) }
  clear (): void { this.map.clear() }
}

function isPromise<T> (value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function'
}

export function createAccessService (options: AccessServiceOptions): AccessService {
  const { keys, limiter, clock } = options
  const keyCacheMs = options.keyCacheMs ?? 2000
  const refusedCacheMs = options.refusedCacheMs ?? 60_000
  const staleIfErrorMs = options.staleIfErrorMs ?? 5 * 60_000
  const principalOf = options.principalOf ?? defaultPrincipalOf
  // Resolved keys by the key as presented, so a hit costs no hash. Refused keys by their hash,
  // so a flood of wrong keys costs one hash each and no database read.
  const resolved = new BoundedCache<CachedKey>(options.keyCacheMax ?? 10_000)
  // Bans the limiter started whose record in the database failed, by subject and start; retried
  // at most every BAN_RETRY_MS on the next charged request, or by retryPendingBans().
  const pendingBans = new Map<string, Omit<BanRecord, 'id' | 'liftedAt'>>()
  let nextBanRetryAt = 0
  let retrying: Promise<number> | null = null
  const refused = new BoundedCache<Refused>(options.refusedCacheMax ?? 10_000)

  /**
   * What the caches know of a key: its principal, why it has none (an expired key is told so:
   * 401 api_key_expired), or undefined when it must be read.
   */
  function cached (key: string, now: number): Principal | Refused | undefined {
    const hit = resolved.get(key)
    if (hit !== undefined && hit.expires > now) return hit.principal
    if (!KEY_FORMAT.test(key)) return NOT_VALID
    const hash = hashKey(key)
    const known = refused.get(hash)
    if (known !== undefined) {
      if (known.expires > now) return known
      refused.delete(hash)
    }
    return undefined
  }

  /** Reads the key from the database (the caches could not answer), and caches the answer. */
  function read (key: string, now: number): Promise<Principal | Refused> {
    const hit = resolved.get(key)
    const hash = hashKey(key)
    return keys.findKeyByHash(hash).then((record): Principal | Refused => {
      const principal = record === null ? null : principalOf(record, now)
      if (principal === null) {
        resolved.delete(key)
        const why: Refused = { expires: now + refusedCacheMs, expiredAt: expiryRefusal(record, now) }
        refused.set(hash, why)
        return why
      } else {
        // Never past the key's own expiry, not even as a stale answer during an outage.
        const end = record!.expiresAt ?? Infinity
        resolved.set(key, { principal, expires: Math.min(now + keyCacheMs, end), staleUntil: Math.min(now + staleIfErrorMs, end) })
      }
      return principal
    }, (error: unknown) => {
      // The database is out: the key's last principal serves for a bounded time, so the
      // request is still charged to the right quota (and carries its headers).
      if (hit !== undefined && hit.staleUntil > now) return hit.principal
      throw error
    })
  }

  /** The key's principal, or why it has none. */
  function lookup (key: string): Principal | Refused | Promise<Principal | Refused> {
    const now = clock.now()
    return cached(key, now) ?? read(key, now)
  }

  function resolve (key: string): Principal | null | Promise<Principal | null> {
    const found = lookup(key)
    if (isPromise(found)) return found.then((f) => isRefused(f) ? null : f)
    return isRefused(found) ? null : found
  }

  function decide (request: AccessRequest): AccessOutcome | Promise<AccessOutcome> {
    // A preflight never reads its key: its headers describe the client address, so it cannot
    // tell whether a guessed key is valid, nor cost a database read.
    if (request.key === null || request.preflight) return charge(request, null, null)
    const key = request.key
    const now = clock.now()
    let found: Principal | Refused | undefined
    try {
      found = cached(key, now)
    } catch (error) {
      return charge(request, null, error)
    }
    // A refused key (an expired one too) is charged to the client address, like no key: the
    // forgotten deployment of a rotated key must not eat its successor's quota.
    if (found !== undefined) return isRefused(found) ? charge(request, null, null, found.expiredAt) : charge(request, found, null)
    // A key this instance has never resolved is read only while the client address may still
    // call: a banned or exhausted address is answered from the limiter (charged, so its strikes
    // count), whatever key it sends, and guessing from it costs no database read.
    if (resolved.get(key) === undefined) {
      let gate: Decision | Promise<Decision>
      try {
        gate = limiter.peek(subjectOfAddress(request.address), ANONYMOUS_QUOTA)
      } catch {
        return readThenCharge(request, key, now)
      }
      if (isPromise(gate)) return gate.then((g) => g.allowed ? readThenCharge(request, key, now) : charge(request, null, null), () => readThenCharge(request, key, now))
      if (!gate.allowed) return charge(request, null, null)
    }
    return readThenCharge(request, key, now)
  }

  function readThenCharge (request: AccessRequest, key: string, now: number): Promise<AccessOutcome> {
    let found: Promise<Principal | Refused>
    try {
      found = read(key, now)
    } catch (error) {
      return Promise.resolve(charge(request, null, error))
    }
    // When the key cannot be read (the database is out), the request is still charged, to the
    // client address, so that the 503 carries the rate-limit headers.
    return found.then((f) => isRefused(f) ? charge(request, null, null, f.expiredAt) : charge(request, f, null), (error: unknown) => charge(request, null, error))
  }

  function charge (request: AccessRequest, principal: Principal | null, failure: unknown, expiredAt: number | null = null): AccessOutcome | Promise<AccessOutcome> {
    const subject = principal === null ? subjectOfAddress(request.address) : principal.subject
    const quota = principal === null ? ANONYMOUS_QUOTA : principal.quota
    // Preflights, and free operations called with a valid key, cost nothing: a browser app's
    // preflights must not eat its users' quota, and a client must be able to ask how long to
    // wait. A wrong key is charged everywhere, so guessing is never free.
    const free = request.preflight || (request.free && principal !== null && failure === null)
    const decision = free ? limiter.peek(subject, quota) : limiter.consume(subject, quota)
    if (isPromise(decision)) return decision.then((d) => conclude(request, principal, quota, subject, d, free, failure, expiredAt))
    return conclude(request, principal, quota, subject, decision, free, failure, expiredAt)
  }

  function conclude (request: AccessRequest, principal: Principal | null, quota: Quota, subject: string, decision: Decision, free: boolean, failure: unknown, expiredAt: number | null): AccessOutcome | Promise<AccessOutcome> {
    if (free) {
      const outcome: AccessOutcome = { principal, decision, quota, subject, refusal: failure === null ? refusalOf(request, principal, expiredAt) : toRefusal(failure) }
      return outcome
    }
    if (!decision.allowed) {
      const outcome: AccessOutcome = { principal, decision, quota, subject, refusal: limited(decision) }
      options.onDecision?.(decision.code === 'api_key_banned' ? 'banned' : 'limited')
      if (decision.banStarted && decision.ban !== null) {
        const ban = decision.ban
        const record = { keyId: principal?.keyId ?? null, subject, startedAt: ban.startedAt, endsAt: ban.until, reason: ban.reason }
        // The ban is in force in the limiter already, and the 429 api_key_banned is answered
        // whatever the database does: a failed record is reported and kept for a retry.
        return keys.recordBan(record).then(() => {
          options.onBan?.(subject, record.keyId, ban.until)
        }, (error: unknown) => {
          pendingBans.set(`${subject} ${ban.startedAt}`, record)
          nextBanRetryAt = clock.now() + BAN_RETRY_MS
          outcome.banNotRecorded = error
          report(() => options.onBanNotRecorded?.(subject, ban.until, error))
        }).then(() => {
          options.onDecided?.(outcome, request)
          return outcome
        })
      }
      if (pendingBans.size > 0 && clock.now() >= nextBanRetryAt) void retryPendingBans()
      options.onDecided?.(outcome, request)
      return outcome
    }
    options.onDecision?.('allowed')
    const outcome: AccessOutcome = { principal, decision, quota, subject, refusal: failure === null ? refusalOf(request, principal, expiredAt) : toRefusal(failure) }
    options.onDecided?.(outcome, request)
    return outcome
  }

  /**
   * Records again the bans whose record failed (the database was out), oldest first; a ban that
   * is over by now is still recorded (its history makes the next ban escalate). Returns how many
   * are still pending.
   */
  async function retryPendingBans (): Promise<number> {
    if (retrying !== null) return retrying
    nextBanRetryAt = clock.now() + BAN_RETRY_MS
    retrying = (async () => {
      for (const [id, record] of [...pendingBans]) {
        try {
          await keys.recordBan(record)
        } catch {
          break // still out: the next retry starts here again
        }
        pendingBans.delete(id)
        report(() => options.onBan?.(record.subject, record.keyId, record.endsAt))
      }
      return pendingBans.size
    })().finally(() => { retrying = null })
    return retrying
  }

  function limited (decision: Decision): AppError {
    const headers = { 'retry-after': String(decision.retryAfterSeconds) }
    return decision.code === 'api_key_banned'
      ? new AppError('api_key_banned', `this caller is banned until ${new Date(decision.ban?.until ?? clock.now()).toISOString()} for calling while told to wait; back off exponentially after a 429`, { headers })
      : new AppError('rate_limited', `rate limit exceeded; retry in ${decision.retryAfterSeconds} s`, { headers })
  }

  return {
    decide,
    resolve,
    retryPendingBans,
    forgetKey (keyId) {
      for (const [key, entry] of resolved.map) if (entry.principal.keyId === keyId || entry.principal.identityKeyId === keyId) resolved.delete(key)
    },
    forgetAll () {
      resolved.clear()
      refused.clear()
    }
  }
}

/**
 * 400 for a key in the URL, 401 without a valid key (api_key_expired for a key past its
 * `expiredAt`), 403 below the operation's role; null to serve.
 */
function refusalOf (request: AccessRequest, principal: Principal | null, expiredAt: number | null): AppError | null {
  if (request.keyInQuery !== null) {
    return new AppError('validation_failed', `API keys are never accepted in the URL (query parameter "${request.keyInQuery}"): send the key in the X-API-Key header (or Authorization: Bearer), and treat this key as exposed`, {
      details: [{ path: `/query/${request.keyInQuery}`, message: 'send the key in the X-API-Key header' }]
    })
  }
  const role = request.role
  if (role === undefined || request.preflight) return null
  if (principal === null && expiredAt !== null) {
    return new AppError('api_key_expired', `the API key expired at ${new Date(expiredAt).toISOString()}; use the key that replaced it, or ask an admin for a new one`, { headers: { 'www-authenticate': 'Bearer realm="petstore"' } })
  }
  if (principal === null) {
    return new AppError('unauthenticated', request.key === null
      ? 'an API key is required: send it as X-API-Key or Authorization: Bearer'
      : 'the API key is not valid (unknown or revoked)', { headers: { 'www-authenticate': 'Bearer realm="petstore"' } })
  }
  if (ROLE_RANK[principal.role] < ROLE_RANK[role]) {
    return new AppError('forbidden', `this operation needs the ${role} role; the key has ${principal.role}`)
  }
  return null
}

/** A failure to read the key: the store's own error (503 when the database is out), or a bug (500). */
function toRefusal (failure: unknown): Error {
  return failure instanceof Error ? failure : new Error(String(failure))
}
