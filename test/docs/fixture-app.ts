// A minimal Fastify app for the docs tests: the docs routes, the fixture document at
// /openapi.json, and just enough of the API for the try-it panel to talk to.
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { docsRoutes } from '../../src/openapi/docs.ts'
import { fixtureOpenApi } from './fixture-openapi.ts'

export const FIXTURE_API_KEY = 'test-key'

export interface FixtureApp {
  app: FastifyInstance
  /** Method and URL of every request under /v1, to prove what the try-it panel did or did not send. */
  apiCalls: string[]
}

export async function buildFixtureApp (): Promise<FixtureApp> {
  const app = Fastify()
  const apiCalls: string[] = []
  app.addHook('onRequest', async (request) => {
    if (request.url.startsWith('/v1/')) apiCalls.push(`${request.method} ${request.url}`)
  })
  await app.register(docsRoutes, { specUrl: '/openapi.json', title: 'Petstore API reference' })
  app.get('/openapi.json', async () => fixtureOpenApi)
  app.get('/v1/pets', async (request, reply) => {
    if (request.headers['x-api-key'] !== FIXTURE_API_KEY) {
      return reply.code(401).send({ code: 'unauthorized', message: 'A valid X-API-Key header is required.' })
    }
    return [{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }]
  })
  app.get('/v1/store/orders', async () => [])
  return { app, apiCalls }
}
