// Key lifecycle rules that both engines apply inside their transactions and the access check
// applies on every request (docs/product.md section 9, key lifecycle).
import { createHash } from 'node:crypto'
import { AppError } from '../errors.ts'
import { DAY_MS } from '../ratelimit/limiter.ts'
import { PLAN_QUOTAS } from './plans.ts'
import type { KeyRecord } from './keys.store.ts'

/** A key as stored and looked up: its SHA-256 (keys/keys.service.ts generateKey says why not a slow hash). */
export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex')

/** The quotas in force for a key: its plan's, or an enterprise key's own. */
export function quotaOf (key: Pick<KeyRecord, 'plan' | 'perMinute' | 'perDay'>): { perMinute: number; perDay: number } {
  if (key.plan === 'enterprise') return { perMinute: key.perMinute ?? 1, perDay: key.perDay ?? 1 }
  return PLAN_QUOTAS[key.plan]
}

/** Expiry is an instant: from `expiresAt` on (inclusive) the key no longer works. */
export const isExpired = (key: Pick<KeyRecord, 'expiresAt'>, now: number): boolean =>
  key.expiresAt !== null && now >= key.expiresAt

/** `key:ID`: the one spelling of a caller's identity (the limiter subject, the Idempotency-Key scope). */
export const subjectOfKey = (keyId: number): string => `key:${keyId}`

/** The subject of a key: its quota identity, the first key of its rotation chain, shared by the chain. */
export const subjectOf = (key: Pick<KeyRecord, 'quotaKeyId'>): string => subjectOfKey(key.quotaKeyId)

/** The UTC day of an instant, YYYY-MM-DD: usage is counted per key and UTC day. */
export const utcDay = (ms: number): string => new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10)

/**
 * Why the key cannot be rotated now, or null when it can. Only a live key that nothing has
 * replaced yet may be rotated: rotating a replaced key again would give it two successors, and
 * could push the end of its grace period out.
 */
export function rotationRefusal (key: KeyRecord, now: number): AppError | null {
  if (key.revokedAt !== null) {
    return new AppError('api_key_not_rotatable', `key ${key.id} was revoked at ${new Date(key.revokedAt).toISOString()}; only a live key can be rotated`)
  }
  if (isExpired(key, now)) {
    return new AppError('api_key_not_rotatable', `key ${key.id} expired at ${new Date(key.expiresAt!).toISOString()}; only a live key can be rotated`)
  }
  if (key.replacedBy !== null) {
    return new AppError('api_key_not_rotatable', `key ${key.id} was already rotated: key ${key.replacedBy} replaces it; rotate key ${key.replacedBy} instead`)
  }
  return null
}
