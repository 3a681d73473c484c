// The caller: whose orders, quotas, bans and Idempotency-Key claims a request's key speaks for.
// One type, built in one place, that access/ attaches to the principal and orders/ reads.
import { subjectOf } from './keys.rules.ts'
import type { KeyRecord } from './keys.store.ts'
import type { Plan, Role } from './plans.ts'

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

/** The one place a caller's identity is built (orders, idempotency claims and the limiter read it). */
export function callerOf (record: Pick<KeyRecord, 'quotaKeyId' | 'role' | 'plan'>): Caller {
  return { keyId: record.quotaKeyId, role: record.role, plan: record.plan, subject: subjectOf(record) }
}
