// The public view of an API key (the ApiKey schema), made from what the admin service answers.
// The routes and the CLI map with it; the service itself returns records.
import type { ApiKey } from './keys.schema.ts'
import type { KeyState } from './keys.service.ts'
import { quotaOf } from '../accounts/keys.rules.ts'

const iso = (ms: number | null): string | null => ms === null ? null : new Date(ms).toISOString()

export function toApiKey ({ record, ban, lastUsedAt }: KeyState): ApiKey {
  return {
    id: record.id,
    name: record.name,
    role: record.role,
    plan: record.plan,
    limits: quotaOf(record),
    prefix: record.prefix,
    createdAt: new Date(record.createdAt).toISOString(),
    revokedAt: iso(record.revokedAt),
    expiresAt: iso(record.expiresAt),
    replaces: record.replaces,
    replacedBy: record.replacedBy,
    lastUsedAt: iso(lastUsedAt),
    // A key event stored before keys had scopes holds a record without them: unrestricted.
    scopes: record.scopes ?? null,
    ban: ban === null ? null : { until: new Date(ban.endsAt).toISOString(), reason: ban.reason }
  }
}
