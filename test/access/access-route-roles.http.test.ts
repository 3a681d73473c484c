// Every operation under /v1 names the least role that may call it (requireRoles in
// routing/route-config.ts): a route without one fails the app at start, not at its first request.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { requireRoles } from '../../src/routing/route-config.ts'

test('a /v1 route without a role fails the app at start; one with a role, or outside /v1, does not', async () => {
  const app = Fastify()
  requireRoles(app)
  app.get('/v1/named', { config: { role: 'customer' } }, async () => ({}))
  app.get('/healthz', async () => ({}))
  await app.ready()
  await app.close()

  const bad = Fastify()
  requireRoles(bad)
  await assert.rejects(async () => {
    await bad.register(async (v1) => { v1.get('/v1/unnamed', async () => ({})) })
    await bad.ready()
  }, /route GET \/v1\/unnamed declares no role/)
  await bad.close()
})
