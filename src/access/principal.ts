// Who a request's key says is calling: the principal of the key, and the caller's identity,
// built once per key read (and cached with it), never per request.
import type { Quota } from '../ratelimit/limiter.ts'
import { isExpired, subjectOf } from '../keys/keys.rules.ts'
import { PLAN_QUOTAS, type Plan, type Role } from '../keys/keys.schema.ts'
import { quotaOf } from '../keys/keys.service.ts'
import type { KeyRecord } from '../keys/keys.store.ts'

/**
 * The caller's identity: the first key of its rotation chain (the key's own id when it was never
 * rotated). Quotas, bans, order ownership and Idempotency-Key claims belong to it, so the
 * successor of a rotated key is the same caller.
 */
export interface Caller {
  /** The id of the first key of the rotation chain. */
  keyId: number
  role: Role
  plan: Plan
  /** `key:ID` of that key: the limiter subject and the Idempotency-Key scope of the caller. */
  subject: string
}

/** An authenticated request: the key presented, and the caller it speaks for. */
export interface Principal {
  /** The key presented (logs, usage per key, lastUsedAt); not the caller's identity. */
  keyId: number
  role: Role
  plan: Plan
  quota: Quota
  caller: Caller
}

/** The quota of a request without a valid key, charged to its client address. */
export const ANONYMOUS_QUOTA: Quota = PLAN_QUOTAS.free

/** The one place a caller's identity is built (orders, idempotency claims and the limiter read it). */
export function callerOf (record: Pick<KeyRecord, 'quotaKeyId' | 'role' | 'plan'>): Caller {
  return { keyId: record.quotaKeyId, role: record.role, plan: record.plan, subject: subjectOf(record) }
}

/** A revoked or expired key is refused (null); any other key is charged to its caller's identity. */
export function principalOf (record: KeyRecord, now: number): Principal | null {
  if (record.revokedAt !== null || isExpired(record, now)) return null
  return { keyId: record.id, role: record.role, plan: record.plan, quota: quotaOf(record), caller: callerOf(record) }
}
