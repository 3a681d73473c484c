// The public view of an API key (the ApiKey schema), made from what the admin service answers.
// The routes and the CLI map with it; the service itself returns records.
import type { ApiKey } from './keys.schema.ts'
import type { KeyState } from './keys.service.ts'
import { keyFormatOfPrefix, quotaOf, type RevocationReason } from '../accounts/keys.rules.ts'

const iso = (ms: number | null): string | null => ms === null ? null : new Date(ms).toISOString()

/**
 * The view of a key. A key.revoked event's state also holds why the key was revoked (`reason`,
 * storage's revokeKey), which its view carries (RevokedApiKey); no other state has one.
 */
export function toApiKey (
  { record, ban, lastUsedAt, reason }: KeyState & { reason?: RevocationReason }
): ApiKey & { reason?: RevocationReason } {
  return {
    id: record.id,
    name: record.name,
    role: record.role,
    plan: record.plan,
    limits: quotaOf(record),
    prefix: record.prefix,
    format: keyFormatOfPrefix(record.prefix),
    createdAt: new Date(record.createdAt).toISOString(),
    revokedAt: iso(record.revokedAt),
    expiresAt: iso(record.expiresAt),
    replaces: record.replaces,
    replacedBy: record.replacedBy,
    lastUsedAt: iso(lastUsedAt),
    // A key event stored before keys had scopes holds a record without them: unrestricted.
    scopes: record.scopes ?? null,
    ban: ban === null ? null : { until: new Date(ban.endsAt).toISOString(), reason: ban.reason },
    ...(reason !== undefined && { reason })
  }
}
