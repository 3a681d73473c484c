// Which event types a webhook may subscribe to, and who may see each (docs/product.md, events):
// the same rule as the pull API's SQL condition (storage/event-filters.ts), stated here for the
// checks made before anything is stored: a subscription to a type its owner may never see is
// refused, and the fan-out delivers an event only to an owner who may see it.
import type { EventAudience, TypeFilter } from '../events/events.store.ts'
import type { Role } from '../accounts/plans.ts'

/** Every type the API writes, by family; a family's audience decides who may see its events. */
const FAMILIES: Record<string, { audience: EventAudience; types: readonly string[] }> = {
  order: { audience: 'order', types: ['created', 'updated', 'completed', 'cancelled', 'expired'] },
  pet: { audience: 'catalog', types: ['created', 'updated', 'deleted'] },
  category: { audience: 'catalog', types: ['created', 'updated', 'deleted'] },
  inventory: { audience: 'inventory', types: ['updated', 'low'] },
  key: { audience: 'key', types: ['created', 'updated', 'rotated', 'revoked', 'expiring', 'banned', 'unbanned'] },
  quota: { audience: 'key', types: ['threshold'] },
  deprecation: { audience: 'key', types: ['used'] },
  webhook: { audience: 'webhook', types: ['test', 'disabled'] }
}

export const EVENT_TYPES: readonly string[] = Object.entries(FAMILIES)
  .flatMap(([family, { types }]) => types.map((type) => `${family}.${type}`))

/** Audiences staff sees whatever the subject; a customer sees only its own events of these. */
const STAFF_AUDIENCES: readonly EventAudience[] = ['order', 'catalog', 'inventory']
const CUSTOMER_AUDIENCES: readonly EventAudience[] = ['order', 'key', 'webhook']

/** The family of a type name or of a `family.*` pattern; undefined when it names no known type. */
function familyOf (pattern: string): string | undefined {
  const dot = pattern.indexOf('.')
  const family = pattern.slice(0, dot)
  const rest = pattern.slice(dot + 1)
  const known = FAMILIES[family]
  if (dot <= 0 || known === undefined) return undefined
  return rest === '*' || known.types.includes(rest) ? family : undefined
}

export function isKnownPattern (pattern: string): boolean {
  return familyOf(pattern) !== undefined
}

/**
 * Whether a role may ever see events of this pattern: staff and admin every type (staff sees
 * the key and webhook events about its own key), a customer only its own orders', key's and webhooks'.
 */
export function mayEverSee (role: Role, pattern: string): boolean {
  const family = familyOf(pattern)
  if (family === undefined) return false
  return role !== 'customer' || CUSTOMER_AUDIENCES.includes(FAMILIES[family]!.audience)
}

/** The reader's rule for one event (as storage/event-filters.ts writes it in SQL). */
export function maySee (
  owner: { role: Role; keyId: number },
  event: { audience: EventAudience; subjectKeyId: number | null }
): boolean {
  if (owner.role === 'admin') return true
  if (owner.role === 'staff') return STAFF_AUDIENCES.includes(event.audience) || event.subjectKeyId === owner.keyId
  return event.subjectKeyId === owner.keyId && CUSTOMER_AUDIENCES.includes(event.audience)
}

/** A subscription's patterns as the feed's type filter (`order.*` is a prefix). */
export function typeFilterOf (patterns: readonly string[]): TypeFilter {
  return {
    exact: patterns.filter((p) => !p.endsWith('.*')),
    prefixes: patterns.filter((p) => p.endsWith('.*')).map((p) => p.slice(0, -1))
  }
}

export function matchesTypes (patterns: readonly string[], type: string): boolean {
  return patterns.some((p) => p.endsWith('.*') ? type.startsWith(p.slice(0, -1)) : p === type)
}
