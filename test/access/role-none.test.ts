// Role none (POST /v1/keys/leaked, issue 32): an operation that needs no key says so in its route
// config, with scope null (a scope would promise a check that never happens); the document then
// declares `security: []` and no 401 for it. Faults caught: role none taken with a scope; the
// document listing 401 (or no security override) for an operation that never asks for a key.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { openApiDocument } from '../../src/cli/openapi.ts'
import { errorCodesOf } from '../../src/openapi/error-responses.ts'
import { requireRoles } from '../../src/routing/route-config.ts'

test('a /v1 route of role none builds with scope null, and fails the app at start with a scope', async () => {
  const app = Fastify()
  requireRoles(app)
  app.post('/v1/open', { config: { role: 'none', scope: null } }, async () => ({}))
  await app.ready()
  await app.close()

  const bad = Fastify()
  requireRoles(bad)
  await assert.rejects(async () => {
    await bad.register(async (v1) => { v1.post('/v1/x', { config: { role: 'none', scope: 'catalog:read' } }, async () => ({})) })
    await bad.ready()
  }, /route POST \/v1\/x: role none needs no key, so it has no scope \(null\)/)
  await bad.close()
})

test('role none documents no 401 and no 403, and POST /keys/leaked has security: [] in the document', async () => {
  const codes = errorCodesOf({ method: 'POST', schema: { body: {} }, config: { role: 'none', scope: null } })
  for (const code of ['unauthenticated', 'api_key_expired', 'forbidden', 'insufficient_scope']) assert.ok(!codes.includes(code as never), code)
  for (const code of ['validation_failed', 'rate_limited', 'address_banned', 'api_key_banned', 'service_unavailable']) assert.ok(codes.includes(code as never), code)
  const doc = JSON.parse(await openApiDocument()) as {
    paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>
  }
  const leaked = doc.paths['/keys/leaked']!.post!
  assert.deepEqual(leaked.security, [])
  assert.deepEqual(Object.keys(leaked.responses).filter((s) => s.startsWith('4')), ['400', '408', '413', '415', '429', '431'])
})
