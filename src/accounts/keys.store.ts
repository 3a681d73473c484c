// The API keys port: keys (stored as hashes), the ban records admins list and lift, and usage
// per key and UTC day.
import type { IfMatch, PageRequest } from '../shared/store.ts'
import type { Plan, Role } from './plans.ts'
import type { KeyStatus } from './keys.status.ts'
import type { Scope } from './scopes.ts'
import type { RevocationReason } from './keys.rules.ts'

export interface KeyRecord {
  id: number
  name: string | null
  role: Role
  plan: Plan
  /** Custom quotas (enterprise); null for the plans' own. */
  perMinute: number | null
  perDay: number | null
  prefix: string
  createdAt: number // epoch ms
  revokedAt: number | null
  /** From this instant on the key answers 401 api_key_expired; null: never. */
  expiresAt: number | null
  /** The key this one replaced by rotation, and the key that replaced this one. */
  replaces: number | null
  replacedBy: number | null
  /**
   * The key whose quota identity (rate-limit counters and ban) this key shares: its own id, or
   * for a key made by rotation, the first key of its rotation chain.
   */
  quotaKeyId: number
  /** The last request made with the key, as last flushed by a server (access/usage.ts). */
  lastUsedAt: number | null
  /** Grows on every change an admin makes (the ETag); lastUsedAt moving is not one. */
  version: number
  /**
   * A restricted key's scopes, in canonical order (accounts/scopes.ts); null: all its role allows.
   * Kept by rotation.
   */
  scopes: Scope[] | null
}

export interface BanRecord {
  id: number
  keyId: number | null
  subject: string
  startedAt: number
  endsAt: number
  reason: string
  liftedAt: number | null
}

/**
 * A ban to record: `strike` is the limiter's level of it (1 for a first ban, one more for each
 * ban within 24 hours: ratelimit/limiter.ts decision 6), carried by its key.banned event.
 */
export type NewBanRecord = Omit<BanRecord, 'id' | 'liftedAt'> & { strike?: number }

/** Requests of one key on one UTC day, by how they were answered (see access/usage.ts). */
export interface UsageCounts {
  allowed: number
  limited: number
  banned: number
  /** Of these three, the requests an agent made through MCP (shared/channel.ts); absent in a batch: none. */
  mcp?: number
  /**
   * Of `allowed`, the requests answered 4xx (a 429 is never among them): refused for another
   * reason than a window or a ban (validation, not found, conflict, role, scope). Counted inside
   * `allowed`, which stays what the windows charged (day-seed.ts, quota.threshold); absent: none.
   */
  other4xx?: number
}

export interface UsageRow extends UsageCounts {
  keyId: number
  /** UTC day, YYYY-MM-DD. */
  day: string
}

/** Calls of one deprecated operation by one key on one UTC day (access/usage.ts). */
export interface DeprecatedCallRow {
  operation: string
  keyId: number
  /** UTC day, YYYY-MM-DD. */
  day: string
  calls: number
  /** The latest call counted in this row, epoch ms. */
  lastCallAt: number
}

/**
 * A deprecated operation as its deprecation.used event names it: its sunset (epoch ms) and
 * successor (`GET /v1/pets?id={petId}`), or null.
 */
export interface DeprecationFacts { sunset: number | null; successor: string | null }

/**
 * What one flush adds: counts to add per key and day, the latest use per key, and calls of
 * deprecated operations per operation, key and day (added, the last call only moving forward).
 */
export interface UsageBatch {
  counts: UsageRow[]
  lastUsed: { keyId: number; at: number }[]
  deprecated?: DeprecatedCallRow[]
  /** The sunset and successor of each deprecated operation called, for its deprecation.used event. */
  deprecations?: Record<string, DeprecationFacts>
  /** The flush's instant: the date of the events it writes (else the latest use in the batch). */
  now?: number
}

/** The key list's filters (GET /admin/keys); every one given must hold. */
export interface KeyFilter {
  /** accounts/keys.status.ts: one status per key, computed at `now`. */
  status?: KeyStatus
  role?: Role
  plan?: Plan
  /** Case-insensitive part of the name, or the start of the prefix (case-sensitive). */
  q?: string
  now: number
}

export interface KeyStore {
  createKey (input: {
    name: string | null
    role: Role
    plan: Plan
    perMinute: number | null
    perDay: number | null
    hash: string
    prefix: string
    now: number
    expiresAt?: number | null
    scopes?: Scope[] | null
  }): Promise<KeyRecord>
  /** Includes revoked keys; the caller decides. */
  findKeyByHash (hash: string): Promise<KeyRecord | null>
  /**
   * The keys whose hash is one of `hashes` (at most 100), in one query, in no particular order;
   * revoked keys included. A leaked-key report looks up all its keys at once (keys.service.ts).
   */
  findKeysByHashes (hashes: readonly string[]): Promise<KeyRecord[]>
  /**
   * The display prefixes of the legacy keys (accounts/keys.rules.ts DISPLAY_PREFIX_LENGTH) not
   * revoked, expired ones included: the access check refuses a legacy-form key whose prefix is none
   * of them without reading it (access/key-cache.ts). No legacy key is made any more, so the list
   * only shrinks.
   */
  legacyKeyPrefixes (): Promise<string[]>
  getKey (id: number): Promise<KeyRecord | null>
  /** In id order; with a filter, only the keys it matches (the console's table). */
  listKeys (page: PageRequest, filter?: KeyFilter): Promise<KeyRecord[]>
  /** Throws not_found, precondition_failed. `now`: the instant of its key.updated event. */
  updateKey (
    id: number,
    changes: { name?: string; role?: Role; plan?: Plan; perMinute?: number | null; perDay?: number | null },
    ifMatch: IfMatch,
    now: number
  ): Promise<KeyRecord>
  /**
   * Revokes the key and the other live keys of its rotation chain; its key.revoked event says
   * why (`reason`, `requested` when absent). Idempotent; throws not_found.
   */
  revokeKey (id: number, now: number, ifMatch: IfMatch, reason?: RevocationReason): Promise<KeyRecord>
  /**
   * In one transaction: makes the successor of key `id` (same name, role, plan, quotas, scopes and quota
   * identity; `replaces` = id) and sets the old key's `replacedBy` and its `expiresAt` to
   * `graceEndsAt` (or keeps an earlier expiry: rotation never lengthens a key's life).
   * Throws not_found, and api_key_not_rotatable when the key is revoked, expired at `now` or
   * already replaced.
   */
  rotateKey (
    id: number,
    input: { hash: string; prefix: string; now: number; graceEndsAt: number }
  ): Promise<{ old: KeyRecord; created: KeyRecord }>
  /**
   * Records a ban that started, and for a key's ban appends its key.banned event in the same
   * transaction. Idempotent on (subject, startedAt, endsAt): a retry after a commit whose answer was lost
   * records nothing twice, and appends no second event.
   */
  recordBan (ban: NewBanRecord): Promise<BanRecord>
  /**
   * The ban in force at `now` (latest ending) on the key's quota identity, if any: a ban
   * started through any key of a rotation chain covers them all.
   */
  activeBan (keyId: number, now: number): Promise<BanRecord | null>
  /**
   * Marks the bans in force on the key's quota identity as lifted; returns how many. When one
   * was, appends one key.unbanned event in the same transaction (a ban that ends on time emits none).
   */
  liftBans (keyId: number, now: number): Promise<number>
  /**
   * Every ban in force at `now` (keys and client addresses), at most `limit`, latest ending first:
   * a starting instance loads them.
   */
  activeBans (now: number, limit: number): Promise<BanRecord[]>
  /**
   * Bans lifted after `since` (epoch ms, the lifter's clock) that end after `endingAfter` (all
   * when omitted), in lift order, at most 10,000: running instances poll this to drop them from
   * the limiter (access/ban-sync.ts).
   */
  bansLiftedSince (since: number, endingAfter?: number): Promise<BanRecord[]>
  /**
   * Adds a batch of usage in one transaction: counts are added to the (key, day) rows, and
   * lastUsedAt only ever moves forward (instances flush independently, in any order). In the same
   * transaction it appends the quota.threshold and deprecation.used events the new counts
   * announce, each once per quota identity and day (events/usage-events.ts).
   */
  recordUsage (batch: UsageBatch): Promise<void>
  /** The key's usage rows from `fromDay` (YYYY-MM-DD, inclusive) on, oldest first. */
  usage (keyId: number, fromDay: string): Promise<UsageRow[]>
  /**
   * Calls of deprecated operations from `fromDay` (inclusive) on, by operation, key and day; of
   * the one key `keyId` only when given (its holder's usage view).
   */
  deprecatedCalls (fromDay: string, keyId?: number): Promise<DeprecatedCallRow[]>
  /** The bans of the key's quota identity (its rotation chain), latest start first, at most `limit`. */
  banHistory (keyId: number, limit: number): Promise<BanRecord[]>
  /**
   * Deletes at most `max` of the notices recordUsage keeps per key and day (which thresholds and
   * deprecations were announced) of days before `beforeDay` (YYYY-MM-DD); returns how many.
   */
  pruneUsageNotices (beforeDay: string, max: number): Promise<number>
  /** Deletes at most `max` usage rows (key_usage) of days before `beforeDay` (YYYY-MM-DD); returns how many. */
  pruneUsage (beforeDay: string, max: number): Promise<number>
  /** Deletes at most `max` rows of deprecated calls (deprecatedCalls) of days before `beforeDay`; returns how many. */
  pruneDeprecatedCalls (beforeDay: string, max: number): Promise<number>
}
