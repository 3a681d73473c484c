// Row shapes and row -> record converters shared by both engines: the two schemas are kept
// column for column alike (snake_case in SQL, camelCase in records). Each engine's SQL stays
// in its own folder; only the mapping lives here, once.
import type { CategoryRecord } from '../categories/categories.store.ts'
import type { InventoryRecord } from '../inventory/inventory.store.ts'
import type { Plan, Role } from '../accounts/plans.ts'
import { scopesFromText } from '../accounts/scopes.ts'
import type { BanRecord, DeprecatedCallRow, KeyRecord, UsageRow } from '../accounts/keys.store.ts'
import type { OrderRecord } from '../orders/orders.store.ts'
import type { PetStatus } from '../pets/pets.schema.ts'
import type { PetRecord } from '../pets/pets.store.ts'

export interface PetRow { id: number; name: string; category_id: number; status: PetStatus; version: number }
export const PET_COLUMNS = 'id, name, category_id, status, version'
export const toPet = (row: PetRow): PetRecord =>
  ({ id: row.id, name: row.name, categoryId: row.category_id, status: row.status, version: row.version })

export interface CategoryRow { id: number; name: string; description: string | null; version: number }
export const CATEGORY_COLUMNS = 'id, name, description, version'
export function toCategory (row: CategoryRow): CategoryRecord {
  const category: CategoryRecord = { id: row.id, name: row.name, version: row.version }
  if (row.description !== null) category.description = row.description
  return category
}

export interface InventoryRow { id: number; stock: number; status: PetStatus; version: number }
export const INVENTORY_COLUMNS = 'id, stock, status, version'
export const toInventory = (row: InventoryRow): InventoryRecord =>
  ({ petId: row.id, quantity: row.stock, status: row.status, version: row.version })

export interface KeyRow {
  id: number
  name: string | null
  role: Role
  plan: Plan
  per_minute: number | null
  per_day: number | null
  key_prefix: string
  created_at: number
  revoked_at: number | null
  version: number
  expires_at: number | null
  replaces: number | null
  replaced_by: number | null
  quota_key_id: number | null
  last_used_at: number | null
  scopes: string | null
}
export const KEY_COLUMNS = 'id, name, role, plan, per_minute, per_day, key_prefix, created_at, revoked_at, version, expires_at, replaces, replaced_by, quota_key_id, last_used_at, scopes'
export const toKey = (r: KeyRow): KeyRecord => ({
  id: r.id, name: r.name, role: r.role, plan: r.plan, perMinute: r.per_minute, perDay: r.per_day,
  prefix: r.key_prefix, createdAt: r.created_at, revokedAt: r.revoked_at,
  expiresAt: r.expires_at, replaces: r.replaces, replacedBy: r.replaced_by,
  // NULL: the key is the first of its rotation chain, its own quota identity.
  quotaKeyId: r.quota_key_id ?? r.id, lastUsedAt: r.last_used_at, version: r.version, scopes: scopesFromText(r.scopes)
})

export interface UsageRowSql {
  key_id: number
  day: string
  allowed: number
  limited: number
  banned: number
  mcp: number
}
export const USAGE_COLUMNS = 'key_id, day, allowed, limited, banned, mcp'
export const toUsage = (r: UsageRowSql): UsageRow =>
  ({ keyId: r.key_id, day: r.day, allowed: r.allowed, limited: r.limited, banned: r.banned, mcp: r.mcp })

export interface BanRow {
  id: number
  key_id: number | null
  subject: string
  started_at: number
  ends_at: number
  reason: string
  lifted_at: number | null
}
export const BAN_COLUMNS = 'id, key_id, subject, started_at, ends_at, reason, lifted_at'
export const toBan = (r: BanRow): BanRecord => ({
  id: r.id,
  keyId: r.key_id,
  subject: r.subject,
  startedAt: r.started_at,
  endsAt: r.ends_at,
  reason: r.reason,
  liftedAt: r.lifted_at
})

/** `complete` is INTEGER 0/1 on SQLite and BOOLEAN on PostgreSQL. */
export interface OrderRow {
  id: number
  pet_id: number
  owner_key_id: number
  quantity: number
  ship_date: number | null
  complete: number | boolean
  created_at: number
  expires_at: number | null
  version: number
}
export const ORDER_COLUMNS = 'id, pet_id, owner_key_id, quantity, ship_date, complete, created_at, expires_at, version'
export const toOrder = (row: OrderRow): OrderRecord => ({
  id: row.id,
  petId: row.pet_id,
  quantity: row.quantity,
  shipDate: row.ship_date,
  complete: row.complete === true || row.complete === 1,
  ownerKeyId: row.owner_key_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  version: row.version
})

export interface DeprecatedCallSql {
  operation: string
  key_id: number
  day: string
  calls: number
  last_call_at: number
}
export const toDeprecatedCall = (r: DeprecatedCallSql): DeprecatedCallRow =>
  ({ operation: r.operation, keyId: r.key_id, day: r.day, calls: r.calls, lastCallAt: r.last_call_at })
