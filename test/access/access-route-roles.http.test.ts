// Every operation under /v1 names the least role that may call it and the scope a restricted key
// needs (requireRoles in routing/route-config.ts): a route without either fails the app at start,
// not at its first request, and so does one whose role can hold none of its scopes.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { requireRoles } from '../../src/routing/route-config.ts'

test('a /v1 route without a role fails the app at start; one with a role, or outside /v1, does not', async () => {
  const app = Fastify()
  requireRoles(app)
  app.get('/v1/named', { config: { role: 'customer', scope: null } }, async () => ({}))
  app.get('/v1/scoped', { config: { role: 'staff', scope: 'catalog:write' } }, async () => ({}))
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

test('a /v1 route without a scope, or with scopes its role cannot hold, fails the app at start', async () => {
  for (const [config, message] of [
    [{ role: 'customer' }, /route GET \/v1\/x declares no scope \(null for none\)/],
    [{ role: 'customer', scope: 'catalog:write' }, /route GET \/v1\/x: its role customer can hold none of its scopes catalog:write/],
    [{ role: 'staff', scope: ['keys:admin'] }, /its role staff can hold none of its scopes keys:admin/]
  ] as const) {
    const bad = Fastify()
    requireRoles(bad)
    await assert.rejects(async () => {
      await bad.register(async (v1) => { v1.get('/v1/x', { config }, async () => ({})) })
      await bad.ready()
    }, message)
    await bad.close()
  }
})
