// Who may call and how much (docs/product.md sections 3 and 4): roles, plans, their quotas and
// order limits. The foundation below the access check, key administration, orders, config and
// storage: each reads the policy here, none decides it again.
import type { Static } from 'typebox'
import { StringEnum } from '../shared/schemas.ts'

export const ROLES = ['customer', 'staff', 'admin'] as const
export const RoleSchema = StringEnum(ROLES, { title: 'Role', description: 'customer: browse and order; staff: also manage catalogue, stock and all orders; admin: also manage keys.', examples: ['customer'] })
export type Role = Static<typeof RoleSchema>

export const PLANS = ['free', 'pro', 'business', 'enterprise'] as const
export const PlanSchema = StringEnum(PLANS, { title: 'Plan', description: 'The plan sets the quotas; enterprise quotas are set per key.', examples: ['pro'] })
export type Plan = Static<typeof PlanSchema>

/** Quotas by plan (docs/product.md 4.1). Enterprise has none of its own: each key carries them. */
export const PLAN_QUOTAS: Record<Exclude<Plan, 'enterprise'>, { perMinute: number; perDay: number }> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 }
}

/**
 * What one customer may hold in open orders, per plan (docs/product.md rule 9): how many open
 * orders at once, and how many units of one pet across them; null: no cap. Staff and admin are
 * never capped. Every plan has a cap by default: enterprise buyers order in bulk, so theirs is
 * ten times business's, but one enterprise key must not be able to hold the whole shop (issue 30:
 * 200 open orders of 1,000 units each). ORDER_LIMITS overrides any plan (config.ts), and
 * `enterprise=none` lifts the cap on purpose.
 */
export interface OrderLimits { openOrders: number; unitsPerPet: number }
export const PLAN_ORDER_LIMITS: Record<Plan, OrderLimits> = {
  free: { openOrders: 5, unitsPerPet: 10 },
  pro: { openOrders: 25, unitsPerPet: 100 },
  business: { openOrders: 100, unitsPerPet: 1_000 },
  enterprise: { openOrders: 1_000, unitsPerPet: 10_000 }
}

/** Role rank: each role may do everything the roles below it may. */
export const ROLE_RANK: Record<Role, number> = { customer: 0, staff: 1, admin: 2 }
