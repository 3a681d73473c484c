// GET /v1/rate_limit: the caller's own quotas and ban state. It has no service: the answer is
// the decision the access step already made for this request (request.rateLimit) and the
// caller it resolved (request.principal), so it reads nothing; a valid key asks for free
// (config.quota 'free'), a wrong one is charged like any request (docs/architecture.md).
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { NoQuery, Reply } from '../shared/schemas.ts'
import { RateLimitStatusSchema } from './rate-limit-status.schema.ts'

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
      role: 'customer', scope: null,
      quota: 'free',
      lifecycle: { stability: 'beta', note: 'The shape mirrors the IETF RateLimit header fields, which are still a draft: field names may follow the final RFC. Changes will be announced with a deprecation period.' }
    }
  }, async (request) => {
    const decision = request.rateLimit!
    const principal = request.principal!
    const toWindow = (w: { limit: number; remaining: number; resetAt: number }) => ({
      limit: w.limit,
      remaining: w.remaining,
      reset: Math.ceil(w.resetAt / 1000)
    })
    return {
      plan: principal.plan,
      role: principal.role,
      windows: { minute: toWindow(decision.minute), day: toWindow(decision.day) },
      ban: decision.ban === null
        ? null
        : { until: new Date(decision.ban.until).toISOString(), reason: decision.ban.reason }
    }
  })
}
