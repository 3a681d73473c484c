// API keys, roles and plans (docs/product.md sections 3 and 4).
import { Type, type Static } from 'typebox'
import { Int64, PageQuery, StringEnum } from '../shared/schemas.ts'

export const ROLES = ['customer', 'staff', 'admin'] as const
export const RoleSchema = StringEnum(ROLES, { title: 'Role', description: 'customer: browse and order; staff: also manage catalogue, stock and all orders; admin: also manage keys.' })
export type Role = Static<typeof RoleSchema>

export const PLANS = ['free', 'pro', 'business', 'enterprise'] as const
export const PlanSchema = StringEnum(PLANS, { title: 'Plan', description: 'The plan sets the quotas; enterprise quotas are set per key.' })
export type Plan = Static<typeof PlanSchema>

/** Quotas by plan (docs/product.md 4.1). Enterprise has none of its own: each key carries them. */
export const PLAN_QUOTAS: Record<Exclude<Plan, 'enterprise'>, { perMinute: number; perDay: number }> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 }
}

/** Role rank: each role may do everything the roles below it may. */
export const ROLE_RANK: Record<Role, number> = { customer: 0, staff: 1, admin: 2 }

export const KeyIdParams = Type.Object({ keyId: Int64({ description: 'The key id.' }) }, { additionalProperties: false })

const Quota = Type.Integer({ minimum: 1, maximum: 1_000_000_000 })

export const BanSchema = Type.Object({
  until: Type.String({ format: 'date-time', description: 'When the ban ends.' }),
  reason: Type.String()
}, { title: 'Ban', additionalProperties: false })

export const ApiKeySchema = Type.Object({
  id: Int64(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: RoleSchema,
  plan: PlanSchema,
  limits: Type.Object({ perMinute: Type.Integer(), perDay: Type.Integer() }, { additionalProperties: false, description: 'The quotas in force for this key.' }),
  prefix: Type.String({ description: 'The first characters of the key, to recognise it; the key itself is never shown again.' }),
  createdAt: Type.String({ format: 'date-time' }),
  revokedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  ban: Type.Union([BanSchema, Type.Null()], { description: 'The ban in force, if any.' })
}, { title: 'ApiKey', additionalProperties: false })
export type ApiKey = Static<typeof ApiKeySchema>

export const NewApiKeySchema = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  role: RoleSchema,
  plan: PlanSchema,
  perMinute: Type.Optional(Quota),
  perDay: Type.Optional(Quota)
}, { title: 'NewApiKey', additionalProperties: false, description: 'perMinute and perDay are required for the enterprise plan and refused for the others.' })
export type NewApiKey = Static<typeof NewApiKeySchema>

export const ApiKeyPatchSchema = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  role: Type.Optional(RoleSchema),
  plan: Type.Optional(PlanSchema),
  perMinute: Type.Optional(Quota),
  perDay: Type.Optional(Quota)
}, { title: 'ApiKeyPatch', additionalProperties: false, minProperties: 1 })
export type ApiKeyPatch = Static<typeof ApiKeyPatchSchema>

export const CreatedApiKeySchema = Type.Object({
  ...ApiKeySchema.properties,
  key: Type.String({ description: 'The API key. Shown once: only its hash is stored.' })
}, { title: 'CreatedApiKey', additionalProperties: false })

export const KeyListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
