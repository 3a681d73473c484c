// GET /healthz (the process answers) and GET /readyz (it can serve: the Readiness port, which
// infra.ts implements with the database and Redis checks). Outside /v1: no key, no quota, and
// hidden from the OpenAPI document; load balancers and orchestrators call them.
import type { FastifyInstance } from 'fastify'
import type { Readiness } from '../shared/readiness.ts'

type Report = Awaited<ReturnType<Readiness['check']>>

/**
 * /readyz answers from one check per this many milliseconds, whoever asks and however often:
 * anyone can reach it (it is routed by the balancer, and served on a full connection cap), and a
 * check costs a round trip to the database and one to Redis. A flood costs no more than one
 * probe a second; a probe sees a change within a second.
 */
export const READINESS_CACHE_MS = 1000

/**
 * The readiness of an app built without infra.ts's (a test's, or the CLI's document build): the
 * database answers a ping. A failed ping is a failed check, so /readyz answers 503.
 */
export function databaseReadiness (database: { ping (): Promise<void> }): Readiness {
  return {
    check: async () => {
      await database.ping()
      return { status: 'ok', checks: { database: { status: 'ok' } } }
    }
  }
}

export async function healthRoutes (app: FastifyInstance, { readiness }: { readiness: Readiness }): Promise<void> {
  const check = cachedCheck(readiness, (error) => { app.log.warn({ err: error }, 'not ready') })
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const report = await check()
    if (report === null || Object.values(report.checks).some((c) => c.status === 'down')) {
      return reply.code(503).send({ status: 'unavailable', checks: report?.checks ?? {} })
    }
    return report
  })
}

/**
 * The check's result (null: it failed), shared by every call within READINESS_CACHE_MS of its
 * start, the calls waiting for it included.
 */
function cachedCheck (readiness: Readiness, onFailure: (error: unknown) => void): () => Promise<Report | null> {
  let last: { startedAt: number; result: Promise<Report | null> } | null = null
  return () => {
    const now = performance.now()
    if (last === null || now - last.startedAt >= READINESS_CACHE_MS) {
      last = {
        startedAt: now,
        result: readiness.check().catch((error: unknown) => {
          onFailure(error)
          return null
        })
      }
    }
    return last.result
  }
}
