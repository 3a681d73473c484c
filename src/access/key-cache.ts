// What this instance knows of the keys it was sent: resolved keys by the key as presented (a hit
// costs no hash), refused keys by their hash (a flood of wrong keys costs one hash each and no
// database read). A key that is no key of ours by its shape or its checksum (accounts/keys.rules.ts
// keyFormatOf) is refused before both: no hash, no read, whatever the flood. Both caches are
// bounded in size and time; a resolved key is reused for 2 s, the bound on cross-instance
// staleness without Redis (docs/architecture.md).
//
// A legacy key (made before checksums) has no checksum to check, so its shape alone cannot refuse
// it (issue 48 finding 7: 50 random legacy-form keys cost 50 reads). No legacy key is made any more,
// so their set only shrinks: the instance holds the display prefixes of those not revoked (12
// characters each, read at most once a minute, and only when a legacy-form key is presented), and
// a legacy-form key whose prefix is none of them is refused like a wrong checksum, without a read.
import { DISPLAY_PREFIX_LENGTH, hashKey, isExpired, keyFormatOf } from '../accounts/keys.rules.ts'
import type { KeyRecord, KeyStore } from '../accounts/keys.store.ts'
import { principalOf, type Principal } from './principal.ts'

/**
 * A key of ours that was found and refused (revoked, expired, or rotated and past its grace
 * period): the request log keeps the refusal in that key's own log (key-requests/). Its id and
 * state only, never the key; an unknown or malformed key has none.
 */
export interface RefusedKey {
  keyId: number
  /** `rotated`: a successor replaces it and its grace period is over (an expiry by rotation). */
  state: 'revoked' | 'expired' | 'rotated'
  /** When it was revoked, or expired (epoch ms). */
  since: number
  /** The key that replaced it by rotation, or null. */
  replacedBy: number | null
}

/**
 * Why a presented key gives no principal: `expiredAt` when it is a key past its expiry (401
 * api_key_expired names the instant), null when it is unknown, revoked or malformed; `key` when
 * it is a key of ours (revoked or expired), null otherwise. Refused keys are remembered as this
 * very object.
 */
export interface Refused { expires: number; expiredAt: number | null; key: RefusedKey | null }
const NOT_VALID: Refused = Object.freeze({ expires: Infinity, expiredAt: null, key: null })

/** The state of a stored key that gives no principal (principalOf: null), or null for a live key. */
export function refusedKeyOf (record: KeyRecord, now: number): RefusedKey | null {
  if (record.revokedAt !== null) {
    return { keyId: record.id, state: 'revoked', since: record.revokedAt, replacedBy: record.replacedBy }
  }
  if (!isExpired(record, now)) return null
  return {
    keyId: record.id,
    state: record.replacedBy === null ? 'expired' : 'rotated',
    since: record.expiresAt!,
    replacedBy: record.replacedBy
  }
}

export const isRefused = (value: Principal | Refused): value is Refused => !('keyId' in value)

export interface KeyCacheOptions {
  keys: KeyStore
  /** How long a resolved key is reused before it is read again (2 s). */
  keyCacheMs?: number
  /** How many resolved keys are held at most (10,000). */
  keyCacheMax?: number
  /** How long a refused key is remembered (60 s), and how many at most (10,000). */
  refusedCacheMs?: number
  refusedCacheMax?: number
  /** During a database outage, a key's last principal is used for at most this long after it was read (5 min). */
  staleIfErrorMs?: number
  /** How long the prefixes of the legacy keys are used before they are read again (60 s). */
  legacyPrefixesMs?: number
}

export interface KeyCache {
  /** What the caches know of a key: its principal, why it has none, or undefined when it must be read. */
  cached (key: string, now: number): Principal | Refused | undefined
  /** Reads the key from the database and caches the answer; during an outage, its last principal for a bounded time. */
  read (key: string, now: number): Promise<Principal | Refused>
  /** Whether this instance resolved the key before (even if that answer is out of date). */
  knows (key: string): boolean
  /** Forgets every key whose id or caller's identity is `keyId`. */
  forget (keyId: number): void
}

interface CachedKey { principal: Principal; expires: number; staleUntil: number }

/** The instant a stored key expired, when that (and not a revocation) is why it is refused. */
const expiryRefusal = (record: KeyRecord | null, now: number): number | null =>
  record !== null && record.revokedAt === null && isExpired(record, now) ? record.expiresAt : null

/** The display prefixes of the legacy keys not revoked, as read at `readAt`. */
interface LegacyPrefixes { prefixes: ReadonlySet<string>; readAt: number }

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
}

export function createKeyCache (options: KeyCacheOptions): KeyCache {
  const { keys } = options
  const keyCacheMs = options.keyCacheMs ?? 2000
  const refusedCacheMs = options.refusedCacheMs ?? 60_000
  const staleIfErrorMs = options.staleIfErrorMs ?? 5 * 60_000
  const legacyPrefixesMs = options.legacyPrefixesMs ?? 60_000
  const resolved = new BoundedCache<CachedKey>(options.keyCacheMax ?? 10_000)
  const refused = new BoundedCache<Refused>(options.refusedCacheMax ?? 10_000)
  let legacy: LegacyPrefixes | null = null
  /** The read of the legacy prefixes in flight: a flood of legacy-form keys waits for one read. */
  let legacyRead: Promise<LegacyPrefixes | null> | null = null

  const legacyFresh = (now: number): LegacyPrefixes | null =>
    legacy !== null && now - legacy.readAt < legacyPrefixesMs ? legacy : null
  /** Whether a legacy-form key is surely no key of ours: its prefix is no live legacy key's. */
  const notLegacyKey = (key: string, known: LegacyPrefixes): boolean =>
    !known.prefixes.has(key.slice(0, DISPLAY_PREFIX_LENGTH.legacy))
  /** The legacy prefixes, read again when out of date; null when they cannot be read (then the key is). */
  function legacyPrefixes (now: number): Promise<LegacyPrefixes | null> {
    const fresh = legacyFresh(now)
    if (fresh !== null) return Promise.resolve(fresh)
    legacyRead ??= keys.legacyKeyPrefixes().then((list) => {
      legacy = { prefixes: new Set(list), readAt: now }
      return legacy
    }, () => null).finally(() => { legacyRead = null })
    return legacyRead
  }

  /** Reads a key of a valid format from the database, and caches the answer. */
  function lookUp (key: string, now: number): Promise<Principal | Refused> {
    const hit = resolved.get(key)
    const hash = hashKey(key)
    return keys.findKeyByHash(hash).then((record): Principal | Refused => {
      const principal = record === null ? null : principalOf(record, now)
      if (principal === null) {
        resolved.delete(key)
        const why: Refused = {
          expires: now + refusedCacheMs,
          expiredAt: expiryRefusal(record, now),
          key: record === null ? null : refusedKeyOf(record, now)
        }
        refused.set(hash, why)
        return why
      }
      // Never past the key's own expiry, not even as a stale answer during an outage.
      const end = record!.expiresAt ?? Infinity
      resolved.set(key, {
        principal,
        expires: Math.min(now + keyCacheMs, end),
        staleUntil: Math.min(now + staleIfErrorMs, end)
      })
      return principal
    }, (error: unknown) => {
      // The database is out: the key's last principal serves for a bounded time, so the
      // request is still charged to the right quota (and carries its headers).
      if (hit !== undefined && hit.staleUntil > now) return hit.principal
      throw error
    })
  }

  return {
    cached (key, now) {
      const hit = resolved.get(key)
      if (hit !== undefined && hit.expires > now) return hit.principal
      // Malformed, or a checksummed key whose checksum is wrong: refused without a lookup.
      const format = keyFormatOf(key)
      if (format === null) return NOT_VALID
      const known = format === 'legacy' ? legacyFresh(now) : null
      if (known !== null && notLegacyKey(key, known)) return NOT_VALID
      const hash = hashKey(key)
      const why = refused.get(hash)
      if (why !== undefined) {
        if (why.expires > now) return why
        refused.delete(hash)
      }
      return undefined
    },
    read (key, now) {
      // cached() refused it already when the access service asked first; this keeps the rule for any other caller.
      const format = keyFormatOf(key)
      if (format === null) return Promise.resolve(NOT_VALID)
      if (format === 'checksummed') return lookUp(key, now)
      return legacyPrefixes(now).then((known) =>
        known !== null && notLegacyKey(key, known) ? NOT_VALID : lookUp(key, now))
    },
    knows (key) {
      return resolved.get(key) !== undefined
    },
    forget (keyId) {
      for (const [key, entry] of resolved.map) {
        if (entry.principal.keyId === keyId || entry.principal.caller.keyId === keyId) resolved.delete(key)
      }
    }
  }
}
