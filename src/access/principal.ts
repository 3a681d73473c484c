// Who a request's key says is calling: the principal of the key and its caller
// (accounts/caller.ts), built once per key read (and cached with it), never per request.
import { AppError } from '../errors.ts'
import type { Quota } from '../ratelimit/limiter.ts'
import { callerOf, type Caller } from '../accounts/caller.ts'
import { isExpired, quotaOf } from '../accounts/keys.rules.ts'
import type { KeyRecord } from '../accounts/keys.store.ts'
import { PLAN_QUOTAS, type Plan, type Role } from '../accounts/plans.ts'
import type { Scope } from '../accounts/scopes.ts'

/** An authenticated request: the key presented, and the caller it speaks for. */
export interface Principal {
  /** The key presented (logs, usage per key, lastUsedAt); not the caller's identity. */
  keyId: number
  role: Role
  plan: Plan
  quota: Quota
  caller: Caller
  /** A restricted key's scopes (accounts/scopes.ts); null: everything its role allows. */
  scopes: ReadonlySet<Scope> | null
}

/** The quota of a request without a valid key, charged to its client address. */
export const ANONYMOUS_QUOTA: Quota = PLAN_QUOTAS.free

/** A revoked or expired key is refused (null); any other key is charged to its caller's identity. */
export function principalOf (record: KeyRecord, now: number): Principal | null {
  if (record.revokedAt !== null || isExpired(record, now)) return null
  return {
    keyId: record.id,
    role: record.role,
    plan: record.plan,
    quota: quotaOf(record),
    caller: callerOf(record),
    scopes: record.scopes === null ? null : new Set(record.scopes)
  }
}

/**
 * The caller of an operation that names a role. The access hook has authenticated it already (a
 * request without a principal never reaches such a route), so null here is refused, never served.
 * Orders belong to the caller, so a rotated key's successor keeps its customer's orders.
 */
export function requireCaller (principal: Principal | null): Caller {
  if (principal === null) throw new AppError('unauthenticated', 'an API key is required')
  return principal.caller
}
