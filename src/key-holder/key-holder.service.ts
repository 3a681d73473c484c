// The key holder's own key (docs/product.md 9.11): its view, its usage, its ban history and its
// rotation, always of the key that makes the request. There is no id to give, so no holder can
// name another's key. On the keys port, with the admin's rules: the key is made by keys/'s
// generator and rotated by the port's one atomic method (which refuses what rotationRefusal
// refuses, accounts/keys.rules.ts), so a self-rotation is an admin rotation in all but who asked.
import { AppError } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import { DAY_MS } from '../ratelimit/limiter.ts'
import { utcDay } from '../accounts/keys.rules.ts'
import type { KeyRecord, KeyStore } from '../accounts/keys.store.ts'
import { generateKey, type KeyState } from '../keys/keys.service.ts'
import { toKeyUsage } from '../keys/keys.view.ts'
import type { DeprecatedOperation } from '../shared/deprecation.ts'
import {
  BAN_HISTORY_MAX,
  GRACE_PERIOD_DEFAULT_S,
  GRACE_PERIOD_MAX_S,
  USAGE_DAYS_DEFAULT,
  USAGE_DAYS_MAX,
  type KeyBans,
  type KeyUsage,
  type RotateApiKey
} from '../keys/keys.schema.ts'

export interface KeyHolder {
  /** The key's record, its ban in force and its last use: the admin's key view of it. */
  view (keyId: number): Promise<KeyState>
  /**
   * Requests per UTC day over the last `days` days (today included), days with traffic only, and
   * the key's own calls of deprecated operations over those days.
   */
  usage (keyId: number, query: { days?: number }): Promise<KeyUsage>
  /** The bans of the key's rotation chain (one quota identity, one ban), latest first. */
  bans (keyId: number): Promise<KeyBans>
  /**
   * The key's successor (same name, role, plan, quotas and scopes) and the key itself, shown
   * once; the old key works for the grace period.
   */
  rotate (keyId: number, input: RotateApiKey): Promise<KeyState & { key: string }>
}

export interface KeyHolderHooks {
  /** This instance's usage not yet flushed (access/usage.ts): written before usage is read. */
  usage?: { flush (): Promise<void>; lastUsedAt (keyId: number): number | null }
  /** The key changed (its expiry, by rotation): forget what every instance cached about it. */
  onKeyChanged?: (record: KeyRecord) => void
  /** The deprecated operations the app serves (known once its routes are declared). */
  deprecatedOperations?: () => readonly DeprecatedOperation[]
}

const isoOf = (ms: number): string => new Date(ms).toISOString()

/** A bound the HTTP schema also checks; the service holds the rule whoever calls it. */
function checkWhole (value: number, min: number, max: number, path: string): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new AppError('validation_failed', `${path.slice(1)} must be a whole number from ${min} to ${max}`, { details: [{ path, message: `must be from ${min} to ${max}` }] })
  }
}

export function createKeyHolder (keys: KeyStore, clock: Clock, hooks: KeyHolderHooks = {}): KeyHolder {
  /** The caller's key. The access step has just resolved it, and keys are never deleted. */
  async function own (keyId: number): Promise<KeyRecord> {
    const record = await keys.getKey(keyId)
    if (record === null) throw new AppError('unauthenticated', 'the API key is not valid (unknown or revoked)')
    return record
  }
  /** The later of the stored instant and this instance's uses not yet flushed, as the admin view. */
  const lastUsedAt = (record: KeyRecord): number | null => {
    const pending = hooks.usage?.lastUsedAt(record.id) ?? null
    return pending !== null && (record.lastUsedAt === null || pending > record.lastUsedAt) ? pending : record.lastUsedAt
  }
  const stateOf = async (record: KeyRecord): Promise<KeyState> => ({
    record,
    ban: await keys.activeBan(record.id, clock.now()),
    lastUsedAt: lastUsedAt(record)
  })

  return {
    async view (keyId) {
      return stateOf(await own(keyId))
    },
    async usage (keyId, query) {
      const days = query.days ?? USAGE_DAYS_DEFAULT
      checkWhole(days, 1, USAGE_DAYS_MAX, '/days')
      // This instance's counts first, so the answer includes every request it has answered.
      await hooks.usage?.flush()
      const fromDay = utcDay(clock.now() - (days - 1) * DAY_MS)
      const rows = await keys.usage(keyId, fromDay)
      // Its own rows only: another key's calls are never read, let alone shown.
      const calls = await keys.deprecatedCalls(fromDay, keyId)
      return toKeyUsage(keyId, rows, calls, hooks.deprecatedOperations?.() ?? [])
    },
    async bans (keyId) {
      const rows = await keys.banHistory(keyId, BAN_HISTORY_MAX)
      return {
        keyId,
        bans: rows.map((b) => ({
          keyId: b.keyId,
          startedAt: isoOf(b.startedAt),
          until: isoOf(b.endsAt),
          liftedAt: b.liftedAt === null ? null : isoOf(b.liftedAt),
          reason: b.reason
        }))
      }
    },
    async rotate (keyId, input) {
      const grace = input.gracePeriodSeconds ?? GRACE_PERIOD_DEFAULT_S
      checkWhole(grace, 0, GRACE_PERIOD_MAX_S, '/gracePeriodSeconds')
      const now = clock.now()
      const { key, hash, prefix } = generateKey()
      // One transaction: refuses a revoked, expired or already replaced key (409), writes key.rotated
      // and so its audit entry, the actor the key that asked (docs/product.md 14.2).
      const { old, created } = await keys.rotateKey(keyId, { hash, prefix, now, graceEndsAt: now + grace * 1000 })
      hooks.onKeyChanged?.(old)
      // The successor shares the old key's quota identity, and so its ban, if any.
      return { ...await stateOf(created), key }
    }
  }
}
