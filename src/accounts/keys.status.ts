// A key's status, one word the console shows and the key list filters by (docs/product.md
// rule 10.2). One status per key, the first that applies in this order:
//   revoked   revokedAt is set;
//   rotated   a successor replaces it (replacedBy is set), whether or not its grace period is over;
//   expired   expiresAt has passed;
//   banned    a ban is in force on its quota identity (its rotation chain);
//   expiring  it expires within EXPIRING_WITHIN_MS (7 days);
//   active    none of these.
// The SQL of both engines applies the same order (storage/key-filters.ts); the console applies
// this function to the ApiKey view, so the table and its filter agree.
import type { BanRecord, KeyRecord } from './keys.store.ts'

export const KEY_STATUSES = ['active', 'expiring', 'expired', 'revoked', 'rotated', 'banned'] as const
export type KeyStatus = typeof KEY_STATUSES[number]

/** "Expiring": the key stops working within a week. */
export const EXPIRING_WITHIN_MS = 7 * 86_400_000

export function keyStatus (record: Pick<KeyRecord, 'revokedAt' | 'replacedBy' | 'expiresAt'>, ban: Pick<BanRecord, 'endsAt'> | null, now: number): KeyStatus {
  if (record.revokedAt !== null) return 'revoked'
  if (record.replacedBy !== null) return 'rotated'
  if (record.expiresAt !== null && now >= record.expiresAt) return 'expired'
  if (ban !== null && ban.endsAt > now) return 'banned'
  if (record.expiresAt !== null && record.expiresAt - now <= EXPIRING_WITHIN_MS) return 'expiring'
  return 'active'
}
