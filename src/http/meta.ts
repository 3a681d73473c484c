// Operational routes outside /v1 (health, readiness) and GET /v1/rate_limit.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { PlanSchema, RoleSchema } from '../keys/keys.schema.ts'
import type { Readiness } from '../shared/readiness.ts'
import { NoQuery, Reply } from '../shared/schemas.ts'

export type { Readiness } from '../shared/readiness.ts'

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
  examples: [{ plan: 'free', role: 'admin', windows: { minute: { limit: 60, remaining: 57, reset: 1795435260 }, day: { limit: 1000, remaining: 988, reset: 1795478400 } }, ban: null }]
})

export async function healthRoutes (app: FastifyInstance, { readiness }: { readiness: Readiness }): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const report = await readiness.check().catch((error: unknown) => {
      request.log.warn({ err: error }, 'not ready')
      return null
    })
    if (report === null || Object.values(report.checks).some((c) => c.status === 'down')) {
      return reply.code(503).send({ status: 'unavailable', checks: report?.checks ?? {} })
    }
    return report
  })
}

export async function rateLimitRoutes (fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/rate_limit', {
    schema: {
      operationId: 'getRateLimit', tags: ['Rate limits'], summary: 'Your quotas and ban state',
      description: 'Costs no quota, and answers even while the key is banned, so a client can always learn how long to wait.',
      querystring: NoQuery,
      response: {
        200: Reply('The caller\'s windows and ban.', RateLimitStatusSchema, {
          'retry-after': Type.Integer({ description: 'Sent only while the caller is limited or banned: whole seconds until it may call again.' })
        })
      }
    },
    config: {
      role: 'customer',
      quota: 'free',
      lifecycle: { stability: 'beta', note: 'The shape mirrors the IETF RateLimit header fields, which are still a draft: field names may follow the final RFC. Changes will be announced with a deprecation period.' }
    }
  }, async (request) => {
    const decision = request.rateLimit!
    const principal = request.principal!
    const toWindow = (w: { limit: number; remaining: number; resetAt: number }) => ({ limit: w.limit, remaining: w.remaining, reset: Math.ceil(w.resetAt / 1000) })
    return {
      plan: principal.plan,
      role: principal.role,
      windows: { minute: toWindow(decision.minute), day: toWindow(decision.day) },
      ban: decision.ban === null ? null : { until: new Date(decision.ban.until).toISOString(), reason: decision.ban.reason }
    }
  })
}
