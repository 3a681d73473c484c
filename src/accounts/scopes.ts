// Restricted keys (docs/product.md section 3, issue 33): a key may carry scopes, a subset of what
// its role allows, and then may call only the operations whose scopes it holds. A scope only
// narrows a role, never widens it: the role check comes first, and a key can only be given the
// scopes its role could use. A key without scopes (null) may do everything its role allows.
import type { Static } from 'typebox'
import { StringEnum } from '../shared/schemas.ts'
import { ROLE_RANK, type Role } from './plans.ts'

export const SCOPES = ['catalog:read', 'catalog:write', 'orders:read', 'orders:write', 'inventory:read', 'inventory:write', 'webhooks:manage', 'keys:admin'] as const
export const ScopeSchema = StringEnum(SCOPES, { description: 'A scope: what a restricted key may do, within its role.', examples: ['catalog:read'] })
export type Scope = Static<typeof ScopeSchema>

/** The least role that can use each scope: what the operations needing it ask of the role. */
export const SCOPE_ROLE: Record<Scope, Role> = {
  'catalog:read': 'customer',
  'catalog:write': 'staff',
  'orders:read': 'customer',
  'orders:write': 'customer',
  'inventory:read': 'customer',
  'inventory:write': 'staff',
  'webhooks:manage': 'customer',
  'keys:admin': 'admin'
}

/** Whether a key of `role` can hold `scope`. */
export const roleAllows = (role: Role, scope: Scope): boolean => ROLE_RANK[role] >= ROLE_RANK[SCOPE_ROLE[scope]]

/**
 * What the event feed shows (and a webhook endpoint receives): the catalogue, orders, stock and,
 * to an admin, keys. A restricted key reads it, or manages endpoints, only with every one of these
 * its role can hold: a `catalog:read` key must not learn of orders through the feed.
 */
export const FEED_SCOPES: readonly Scope[] = ['catalog:read', 'orders:read', 'inventory:read', 'keys:admin']

/**
 * Managing webhook endpoints: `webhooks:manage`, and the feed's scopes, since an endpoint receives
 * what the feed shows.
 */
export const WEBHOOK_SCOPES: readonly Scope[] = ['webhooks:manage', ...FEED_SCOPES]

/**
 * What an operation asks of a restricted key (route config `scope`): one scope, several (all
 * needed, of those the key's role can hold), or null for none (the caller's own views, such as
 * GET /rate_limit).
 */
export type ScopeNeed = Scope | readonly Scope[] | null

export const scopesOfNeed = (need: ScopeNeed | undefined): readonly Scope[] =>
  need === null || need === undefined ? [] : typeof need === 'string' ? [need] : need

/**
 * The first scope an operation needs that the key lacks, or null when it may call it. A key
 * without scopes lacks none; a scope its role cannot hold is not asked of it (the role check
 * has let it through already, and the feed's `keys:admin` is not asked of staff).
 */
export function missingScope (
  role: Role,
  scopes: ReadonlySet<Scope> | null,
  need: ScopeNeed | undefined
): Scope | null {
  if (scopes === null) return null
  for (const scope of scopesOfNeed(need)) if (roleAllows(role, scope) && !scopes.has(scope)) return scope
  return null
}

/**
 * What a key lacks to call an operation, or null when it may: the operation's role, when the key's
 * is below it, else the first scope it needs that a restricted key lacks. The one answer of the
 * access step's refusals (access/refusals.ts) and of the tools MCP offers a key (mcp/tools.ts).
 */
export function missingAccess (
  key: { role: Role; scopes: ReadonlySet<Scope> | null },
  operation: { role: Role; scope?: ScopeNeed | undefined }
): { role: Role } | { scope: Scope } | null {
  if (ROLE_RANK[key.role] < ROLE_RANK[operation.role]) return { role: operation.role }
  const scope = missingScope(key.role, key.scopes, operation.scope)
  return scope === null ? null : { scope }
}

/** Scopes in their canonical order (that of SCOPES), without repeats: how they are stored and shown. */
export const canonicalScopes = (scopes: readonly Scope[]): Scope[] => SCOPES.filter((s) => scopes.includes(s))

/** The stored form: the canonical list joined by commas, or null for an unrestricted key. */
export const scopesToText = (scopes: readonly Scope[] | null): string | null =>
  scopes === null ? null : canonicalScopes(scopes).join(',')

/** The stored form read back; an unknown word (a newer program's scope) is dropped, so the key only narrows. */
export const scopesFromText = (text: string | null): Scope[] | null =>
  text === null ? null : text.split(',').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s))
