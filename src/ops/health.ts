// GET /healthz (the process answers) and GET /readyz (it can serve: the Readiness port, which
// infra.ts implements with the database and Redis checks). Outside /v1: no key, no quota, and
// hidden from the OpenAPI document; load balancers and orchestrators call them.
import type { FastifyInstance } from 'fastify'
import type { Readiness } from '../shared/readiness.ts'

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
