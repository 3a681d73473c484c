// The public view of an API key (the ApiKey schema), made from what the admin service answers.
// The routes and the CLI map with it; the service itself returns records.
import type { ApiKey, KeyUsage } from './keys.schema.ts'
import type { KeyState } from './keys.service.ts'
import { keyFormatOfPrefix, quotaOf, type RevocationReason } from '../accounts/keys.rules.ts'
import type { DeprecatedCallRow, UsageRow } from '../accounts/keys.store.ts'
import type { DeprecatedOperation } from '../shared/deprecation.ts'

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

/**
 * A key's usage view (the admin's and its holder's, one shape): its days by outcome, and its
 * calls of the deprecated operations the routes declare, summed over the days read, latest call
 * first. Calls of an operation no longer declared deprecated are left out: there is no successor
 * or sunset to name (the admin's deprecation view does the same).
 */
export function toKeyUsage (
  keyId: number,
  rows: readonly UsageRow[],
  calls: readonly DeprecatedCallRow[],
  operations: readonly DeprecatedOperation[]
): KeyUsage {
  const sums = new Map<string, { calls: number; last: number }>()
  for (const c of calls) {
    const sum = sums.get(c.operation)
    if (sum === undefined) sums.set(c.operation, { calls: c.calls, last: c.lastCallAt })
    else {
      sum.calls += c.calls
      if (c.lastCallAt > sum.last) sum.last = c.lastCallAt
    }
  }
  const deprecated = operations.flatMap((op) => {
    const sum = sums.get(op.operationId)
    return sum === undefined || sum.calls === 0 ? [] : [{ op, ...sum }]
  })
    .sort((a, b) => b.last - a.last || (a.op.operationId < b.op.operationId ? -1 : 1))
    .map(({ op, calls: n, last }) => ({
      operationId: op.operationId,
      method: op.method,
      path: op.path,
      deprecatedAt: op.deprecatedAt.toISOString(),
      sunsetAt: op.sunsetAt === undefined ? null : op.sunsetAt.toISOString(),
      successor: op.successor === undefined ? null : { ...op.successor },
      calls: n,
      lastCallAt: new Date(last).toISOString()
    }))
  return {
    keyId,
    days: rows.map((r) => ({
      date: r.day,
      allowed: r.allowed,
      limited: r.limited,
      banned: r.banned,
      mcp: r.mcp ?? 0,
      other4xx: r.other4xx ?? 0
    })),
    deprecated
  }
}
