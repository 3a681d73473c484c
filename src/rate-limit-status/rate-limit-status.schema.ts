// The answer of GET /v1/rate_limit: the caller's plan, role, both quota windows and ban.
import { Type } from 'typebox'
import { PlanSchema, RoleSchema } from '../accounts/plans.ts'

const WindowSchema = Type.Object({
  limit: Type.Integer({ description: 'The quota of the window.' }),
  remaining: Type.Integer({ description: 'Requests left in it.' }),
  reset: Type.Integer({ description: 'Unix time (seconds) at which it resets.' })
}, { title: 'RateLimitWindow', additionalProperties: false })

export const RateLimitStatusSchema = Type.Object({
  plan: PlanSchema,
  role: RoleSchema,
  windows: Type.Object({ minute: WindowSchema, day: WindowSchema }, { additionalProperties: false }),
  ban: Type.Union([Type.Object({
    until: Type.String({ format: 'date-time' }),
    reason: Type.String()
  }, { additionalProperties: false }), Type.Null()])
}, {
  title: 'RateLimitStatus',
  additionalProperties: false,
  examples: [{
    plan: 'free',
    role: 'admin',
    windows: {
      minute: { limit: 60, remaining: 57, reset: 1795435260 },
      day: { limit: 1000, remaining: 988, reset: 1795478400 }
    },
    ban: null
  }]
})
