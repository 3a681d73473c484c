// Key lifecycle rules that both engines apply inside their transactions and the access check
// applies on every request (docs/product.md section 9, key lifecycle).
import { createHash, randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'
import { AppError } from '../errors.ts'
import { DAY_MS } from '../ratelimit/limiter.ts'
import { PLAN_QUOTAS } from './plans.ts'
import type { KeyRecord } from './keys.store.ts'

/** A key as stored and looked up: its SHA-256 (keys/keys.service.ts generateKey says why not a slow hash). */
export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex')

// Key formats (docs/api.md "API keys", SECURITY.md). A checksummed key, made since issue 32, is
// `psk_`, 43 base62 characters of randomness (62^43 > 2^256) and 6 base62 characters of the
// CRC32 of those 43, as GitHub's tokens are: a scanner, or this service before any database
// read, tells a real key from a random string without knowing any key. A legacy key is `psk_` and
// 43 base64url characters (32 random bytes): it keeps working until it is rotated or expires.
// The lengths differ (53 and 47), so a key's length says which rule applies.

/** The fixed prefix of every key: redaction (http/redact.ts) and secret scanners look for it. */
export const KEY_PREFIX = 'psk_'
/** The base62 digits, in the order the checksum is written with (0-9, A-Z, a-z). */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const RANDOM_LENGTH = 43
const CHECKSUM_LENGTH = 6
/** The published pattern of a checksummed key, for secret scanners (docs/api.md, SECURITY.md). */
export const KEY_PATTERN = `psk_[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}`
const CHECKSUMMED_KEY = new RegExp(`^${KEY_PATTERN}$`)
const LEGACY_KEY = /^psk_[A-Za-z0-9_-]{43}$/

/** `checksummed` (issue 32) or `legacy` (psk_ and base64url, made before). */
export const KEY_FORMATS = ['checksummed', 'legacy'] as const
export type KeyFormat = typeof KEY_FORMATS[number]

/** The checksum of a key's random part: its CRC32 (zlib's, IEEE) in 6 base62 digits, most significant first. */
export function keyChecksum (random: string): string {
  let n = crc32(random)
  let out = ''
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62]! + out
    n = Math.floor(n / 62)
  }
  return out
}

/**
 * A new key's secret: 43 base62 characters drawn without bias (bytes from 248 up are dropped, as
 * 248 = 4 × 62), then their checksum.
 */
export function newKeySecret (): string {
  let random = ''
  while (random.length < RANDOM_LENGTH) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && random.length < RANDOM_LENGTH) random += BASE62[byte % 62]!
    }
  }
  return `${KEY_PREFIX}${random}${keyChecksum(random)}`
}

/**
 * The format of a presented key, or null when it can be no key of ours: neither shape, or a
 * checksummed shape whose checksum is wrong. Costs one CRC32 of 43 bytes; never a database read.
 */
export function keyFormatOf (key: string): KeyFormat | null {
  if (key.length === KEY_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH) {
    if (!CHECKSUMMED_KEY.test(key)) return null
    const random = key.slice(KEY_PREFIX.length, KEY_PREFIX.length + RANDOM_LENGTH)
    return key.endsWith(keyChecksum(random)) ? 'checksummed' : null
  }
  return LEGACY_KEY.test(key) ? 'legacy' : null
}

/**
 * How many characters of a key are kept to recognise it (`prefix`): `psk_` and 12 for a
 * checksummed key, `psk_` and 8 for a legacy one. Only the prefix and the hash are stored, so the
 * prefix's length is how a stored key says its format (keyFormatOfPrefix).
 */
export const DISPLAY_PREFIX_LENGTH: Record<KeyFormat, number> = { checksummed: 16, legacy: 12 }

/** The format of a stored key, read from its prefix (DISPLAY_PREFIX_LENGTH). */
export const keyFormatOfPrefix = (prefix: string): KeyFormat =>
  prefix.length === DISPLAY_PREFIX_LENGTH.legacy ? 'legacy' : 'checksummed'

/**
 * Why a key was revoked: an admin asked (DELETE /admin/keys/{keyId}, `petstore keys revoke`), or
 * it was reported leaked (POST /keys/leaked).
 */
export const REVOCATION_REASONS = ['requested', 'leaked'] as const
export type RevocationReason = typeof REVOCATION_REASONS[number]

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
