// API key administration over HTTP (admin role).
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { etagOf, ifMatchOf, setNextLink } from '../routing/conditional.ts'
import { ETagHeader, IfMatchHeaders, LinkHeader, LocationHeader, NoContent, NoQuery, Reply } from '../shared/schemas.ts'
import {
  ApiKeyPatchSchema,
  ApiKeySchema,
  ApiKeysSchema,
  CreatedApiKeySchema,
  DeprecationsSchema,
  KeyBansSchema,
  KeyIdParams,
  KeyRateLimitSchema,
  KeyListQuery,
  KeyUsageQuery,
  KeyUsageSchema,
  LEAK_REPORT_ANSWER,
  LeakedKeysSchema,
  LeakReportSchema,
  NewApiKeySchema,
  RevokeKeyIdParams,
  RotateApiKeySchema
} from './keys.schema.ts'
import type { KeyAdmin } from './keys.service.ts'
import { toApiKey } from './keys.view.ts'

export async function keyRoutes (fastify: FastifyInstance, { admin }: { admin: KeyAdmin }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['API keys']

  app.get('/admin/keys', {
    schema: {
      operationId: 'listApiKeys', tags, summary: 'List API keys',
      description: 'Keys in id order, revoked ones included, each with its ban in force. The next page, if any, is in the `Link` header, which keeps the filters. Filter by `status`, `role` and `plan`, and search by name or prefix with `q`; every filter given must hold.',
      querystring: KeyListQuery,
      response: { 200: Reply('A page of keys (never the keys themselves).', ApiKeysSchema, LinkHeader) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed'] }
  }, async (request, reply) => {
    const page = await admin.list(request.query)
    setNextLink(request, reply, page.nextCursor)
    return page.items.map(toApiKey)
  })

  app.post('/admin/keys', {
    schema: {
      operationId: 'createApiKey', tags, summary: 'Create an API key',
      description: 'The response holds the key itself, once: only its hash is stored. With `expiresAt` (a future instant) the key stops working then, answering `401 api_key_expired`.',
      querystring: NoQuery, body: NewApiKeySchema,
      response: { 201: Reply('The key, shown once.', CreatedApiKeySchema, { ...LocationHeader, ...ETagHeader }) }
    },
    config: {
      role: 'admin', scope: 'keys:admin', errors: ['validation_failed'],
      errorExamples: [{ code: 'validation_failed', message: 'perMinute cannot exceed perDay', details: [{ path: '/perMinute', message: 'exceeds perDay' }] }]
    }
  }, async (request, reply) => {
    const { key, ...state } = await admin.create(request.body)
    const { record } = state
    reply.code(201).header('location', `/v1/admin/keys/${record.id}`).header('etag', etagOf(record)).header('cache-control', 'no-store')
    return { ...toApiKey(state), key }
  })

  app.get('/admin/keys/:keyId', {
    schema: {
      operationId: 'getApiKey', tags, summary: 'Get an API key',
      description: 'The key\'s record (never the key itself) and its ban in force.',
      params: KeyIdParams, querystring: NoQuery,
      response: { 200: Reply('The key\'s record and ban.', ApiKeySchema, ETagHeader) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed', 'not_found'] }
  }, async (request, reply) => {
    const state = await admin.get(request.params.keyId)
    const { record } = state
    reply.header('etag', etagOf(record))
    return toApiKey(state)
  })

  app.patch('/admin/keys/:keyId', {
    schema: {
      operationId: 'updateApiKey', tags, summary: 'Change a key\'s name, role, plan or quotas',
      description: 'Custom quotas (`perMinute`, `perDay`) are for the enterprise plan only; moving a key off enterprise drops them. Takes effect on running instances within seconds. Honours `If-Match`.',
      params: KeyIdParams, querystring: NoQuery, headers: IfMatchHeaders, body: ApiKeyPatchSchema,
      response: { 200: Reply('The updated key.', ApiKeySchema, ETagHeader) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed', 'not_found', 'precondition_failed'] }
  }, async (request, reply) => {
    const state = await admin.update(request.params.keyId, request.body, ifMatchOf(request))
    const { record } = state
    reply.header('etag', etagOf(record))
    return toApiKey(state)
  })

  app.delete('/admin/keys/:keyId', {
    schema: {
      operationId: 'revokeApiKey', tags, summary: 'Revoke an API key',
      description: 'The key stops working on every instance within seconds. Revoking twice is harmless. Honours `If-Match`.',
      params: RevokeKeyIdParams, querystring: NoQuery, headers: IfMatchHeaders,
      response: { 204: NoContent('The key is revoked.') }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed', 'not_found', 'precondition_failed'] }
  }, async (request, reply) => {
    await admin.revoke(request.params.keyId, ifMatchOf(request))
    return reply.code(204).send(null)
  })

  app.delete('/admin/keys/:keyId/ban', {
    schema: {
      operationId: 'liftApiKeyBan', tags, summary: 'Lift a key\'s ban',
      description: 'Ends the ban in force, if any, on every instance within seconds. The escalation history stays: a key banned again within 24 hours gets a longer ban.',
      params: KeyIdParams, querystring: NoQuery,
      response: { 204: NoContent('The key is not banned (any more).') }
    },
    config: {
      role: 'admin', scope: 'keys:admin',
      errors: ['validation_failed', 'not_found'],
      lifecycle: { stability: 'experimental', note: 'Whether lifting a ban should also clear the escalation history is being decided with operators; the operation may change or move without a deprecation period.' }
    }
  }, async (request, reply) => {
    await admin.unban(request.params.keyId)
    return reply.code(204).send(null)
  })

  // The key lifecycle operations are beta: new in this release, their shapes may still change
  // with what partners tell us (announced with a deprecation period, never silently).
  const lifecycleBeta = 'New with key expiry and rotation: the request and response shapes may still change, with a deprecation period.'

  app.post('/admin/keys/:keyId/rotate', {
    schema: {
      operationId: 'rotateApiKey', tags, summary: 'Rotate an API key',
      params: KeyIdParams, querystring: NoQuery, body: RotateApiKeySchema,
      response: { 201: Reply('The new key, shown once; its `replaces` names the old key.', CreatedApiKeySchema, { ...LocationHeader, ...ETagHeader }) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed', 'not_found', 'api_key_not_rotatable'], lifecycle: { stability: 'beta', note: lifecycleBeta }, optionalBody: true },
    // A rotation with the defaults needs no body at all; a JSON null is a body, and refused.
    preValidation: async (request) => { if (request.body === undefined) request.body = {} }
  }, async (request, reply) => {
    const { key, old: _old, ...state } = await admin.rotate(request.params.keyId, request.body)
    const { record } = state
    reply.code(201).header('location', `/v1/admin/keys/${record.id}`).header('etag', etagOf(record)).header('cache-control', 'no-store')
    return { ...toApiKey(state), key }
  })

  app.get('/admin/keys/:keyId/usage', {
    schema: {
      operationId: 'getApiKeyUsage', tags, summary: 'A key\'s requests per day',
      params: KeyIdParams, querystring: KeyUsageQuery,
      response: { 200: Reply('The key\'s usage per day.', KeyUsageSchema) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed', 'not_found'], lifecycle: { stability: 'beta', note: lifecycleBeta } }
  }, async (request) => admin.usage(request.params.keyId, request.query))

  // The operator console's reads (docs/product.md section 10).
  const consoleBeta = 'New with the operator console: the response shape may still change, with a deprecation period.'

  app.get('/admin/keys/:keyId/rate_limit', {
    schema: {
      operationId: 'getApiKeyRateLimit', tags, summary: 'A key\'s current windows and ban',
      description: 'The minute and day windows of the key\'s quota identity (shared by its rotation chain) as this instance\'s limiter holds them: used, remaining, limit and reset, and the ban in force. Reading them charges the key nothing (the limiter is peeked); the request is charged to the admin key that makes it.',
      params: KeyIdParams, querystring: NoQuery,
      response: { 200: Reply('The key\'s windows and ban.', KeyRateLimitSchema) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed', 'not_found'], lifecycle: { stability: 'beta', note: consoleBeta } }
  }, async (request) => admin.rateLimit(request.params.keyId))

  app.get('/admin/keys/:keyId/bans', {
    schema: {
      operationId: 'listApiKeyBans', tags, summary: 'A key\'s ban history',
      description: 'The bans of the key\'s rotation chain (they share one quota and ban), latest first, at most 50: when each started, when it ends or ended, and whether an admin lifted it.',
      params: KeyIdParams, querystring: NoQuery,
      response: { 200: Reply('The key\'s bans.', KeyBansSchema) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed', 'not_found'], lifecycle: { stability: 'beta', note: consoleBeta } }
  }, async (request) => admin.bans(request.params.keyId))

  app.get('/admin/deprecations', {
    schema: {
      operationId: 'listDeprecations', tags, summary: 'Who still calls deprecated operations',
      description: 'Each deprecated operation with its sunset and successor, and the keys that called it over the last 30 UTC days (today included): calls per day and the last call. Counts reach the database in the usage flush (within 5 seconds); this instance\'s are written before the answer.',
      querystring: NoQuery,
      response: { 200: Reply('The deprecated operations and their callers.', DeprecationsSchema) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed'], lifecycle: { stability: 'beta', note: consoleBeta } }
  }, async () => admin.deprecations())

  // Anyone who finds a key exposed may report it, without a key of their own (role none), charged
  // to their address like any request without a valid key, and per key sent to the address's
  // reported keys (access/reported-keys.ts). The answer never varies: it must not tell whether any
  // key sent was valid (docs/product.md, leaked keys).
  app.post('/keys/leaked', {
    schema: {
      operationId: 'reportLeakedKeys', tags, summary: 'Report leaked API keys',
      description: 'Revokes every valid key among those sent, and the other keys of its rotation, on every instance within seconds, and writes `key.revoked` with `reason: "leaked"`. Needs no key: send it from wherever the keys were found. The answer is `202` and the same body whether or not any key was valid, so it tells nothing about any key. Charged to the client address like any request without a valid key, and besides one per key sent against the address\'s reported keys (100 a minute, 1,000 a day): a report that does not fit is `429 rate_limited` with `Retry-After`, before any key is read.',
      security: [],
      querystring: NoQuery, body: LeakedKeysSchema,
      response: { 202: Reply('Received: every valid key sent is revoked. The same answer whatever was sent.', LeakReportSchema) }
    },
    config: { role: 'none', scope: null, errors: ['validation_failed'] }
  }, async (request, reply) => {
    await admin.reportLeaked(request.body.keys, { address: request.ip })
    reply.code(202)
    return LEAK_REPORT_ANSWER
  })
}
