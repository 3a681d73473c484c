// The texts of the access service's refusals (docs/product.md sections 3 and 4). They carry no
// HTTP headers: the hook (http/access.ts) sets Retry-After and WWW-Authenticate from the decision.
import { AppError } from '../errors.ts'
import type { Role } from '../accounts/plans.ts'
import { missingAccess, type ScopeNeed } from '../accounts/scopes.ts'
import type { Decision } from '../ratelimit/limiter.ts'
import type { Principal } from './principal.ts'
import { FREE_READS_PER_ADDRESS, FREE_READS_PER_KEY } from './free-reads.ts'

/** The facts of a request a refusal depends on. */
export interface RefusalFacts {
  key: string | null
  role: Role | undefined
  preflight: boolean
  keyInQuery: string | null
  /** The scopes of the matched operation (route config `scope`); undefined or null: none. */
  scope?: ScopeNeed | undefined
}

/**
 * 429: rate_limited, or a ban naming its end. `address`: the limiter subject of the client
 * address when the request was charged to it (no valid key): then the refusal names the address,
 * never a key (address_banned), since a valid key from that address may still be served.
 */
export function limited (decision: Decision, now: number, address: string | null = null): AppError {
  const until = new Date(decision.ban?.until ?? now).toISOString()
  if (address !== null) {
    const where = addressOf(address)
    return decision.code === 'api_key_banned'
      ? new AppError('address_banned', `requests without a valid API key from ${where} are banned until ${until}: they kept calling while told to wait; a valid key is still served`)
      : new AppError('rate_limited', `too many requests without a valid API key from ${where}; retry in ${decision.retryAfterSeconds} s`)
  }
  return decision.code === 'api_key_banned'
    ? new AppError('api_key_banned', `this key is banned until ${until} for calling while told to wait; back off exponentially after a 429`)
    : new AppError('rate_limited', `rate limit exceeded; retry in ${decision.retryAfterSeconds} s`)
}

/** The address as a client reads it: `ip:192.0.2.1` is 192.0.2.1, an IPv6 subject its /64. */
const addressOf = (subject: string): string => subject.slice(subject.indexOf(':') + 1)

/**
 * 400 for a key in the URL, 401 without a valid key (api_key_expired for a key past its
 * `expiredAt`), 403 below the operation's role, then 403 insufficient_scope for a restricted key
 * without a scope the operation needs; null to serve.
 */
export function refusalOf (
  request: RefusalFacts,
  principal: Principal | null,
  expiredAt: number | null
): AppError | null {
  if (request.keyInQuery !== null) {
    return new AppError('validation_failed', `API keys are never accepted in the URL (query parameter "${request.keyInQuery}"): send the key in the X-API-Key header (or Authorization: Bearer), and treat this key as exposed`, {
      details: [{ path: `/query/${request.keyInQuery}`, message: 'send the key in the X-API-Key header' }]
    })
  }
  const role = request.role
  if (role === undefined || request.preflight) return null
  if (principal === null && expiredAt !== null) {
    return new AppError('api_key_expired', `the API key expired at ${new Date(expiredAt).toISOString()}; use the key that replaced it, or ask an admin for a new one`)
  }
  if (principal === null) {
    return new AppError('unauthenticated', request.key === null
      ? 'an API key is required: send it as X-API-Key or Authorization: Bearer'
      : 'the API key is not valid (unknown or revoked)')
  }
  const missing = missingAccess(principal, { role, scope: request.scope })
  if (missing === null) return null
  if ('role' in missing) {
    return new AppError('forbidden', `this operation needs the ${missing.role} role; the key has ${principal.role}`)
  }
  const held = [...principal.scopes ?? []].join(', ')
  return new AppError('insufficient_scope', `this operation needs the ${missing.scope} scope; the key is restricted to ${held === '' ? 'no scope' : held}`)
}

/** A failure to read the key: the store's own error (503 when the database is out), or a bug (500). */
export function toRefusal (failure: unknown): Error {
  return failure instanceof Error ? failure : new Error(String(failure))
}

/**
 * 429 api_key_banned for a banned key's own reads (GET /keys/me, /keys/me/bans, /keys/me/requests,
 * /rate_limit: the routes `banExempt` or `quota: 'free'`) past their free allowance
 * (free-reads.ts): they are served again next minute; the ban's end is unchanged.
 */
export function freeReadsSpent (decision: Decision, now: number): AppError {
  const until = new Date(decision.ban?.until ?? now).toISOString()
  return new AppError('api_key_banned', `this key is banned until ${until}; while banned, its own reads (GET /keys/me, /keys/me/bans, /keys/me/requests and /rate_limit) are served free up to ${FREE_READS_PER_KEY} a minute per key and ${FREE_READS_PER_ADDRESS} per client address, and this minute's are spent; the ban's end is unchanged`)
}
