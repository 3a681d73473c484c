// The key holder's own key over HTTP (docs/product.md 9.11): every role, its own key only, named
// by the key the request carries (there is no id parameter). GET /keys/me and GET /keys/me/bans
// are served to a banned key, uncharged (config.banExempt), so that it can learn why and until
// when; everything else here is charged like any request.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { AppError } from '../errors.ts'
import type { Principal } from '../access/principal.ts'
import { NoQuery, Reply } from '../shared/schemas.ts'
import { toApiKey } from '../keys/keys.view.ts'
import {
  ApiKeySchema,
  BanRetryAfterHeader,
  CreatedApiKeySchema,
  KeyBansSchema,
  KeyUsageQuery,
  KeyUsageSchema,
  NoStoreHeader,
  RotateApiKeySchema
} from './key-holder.schema.ts'
import type { KeyHolder } from './key-holder.service.ts'

/**
 * The id of the key the request carries. The access hook has authenticated it (a request
 * without a principal never reaches these routes). Not the caller's identity (the first key of a
 * rotation chain): each key of a rotated pair shows its own record and usage.
 */
function ownKeyId (principal: Principal | null): number {
  if (principal === null) throw new AppError('unauthenticated', 'an API key is required')
  return principal.keyId
}

export async function keyHolderRoutes (fastify: FastifyInstance, { holder }: { holder: KeyHolder }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Your key']
  // Own-key views need no scope: a restricted key sees and rotates only itself, and its
  // successor keeps its scopes, so nothing here widens what it may do.
  const lifecycle = { stability: 'beta', note: 'New with key self-service: the response shapes may still change, with a deprecation period.' } as const

  app.get('/keys/me', {
    schema: {
      operationId: 'getMyApiKey', tags, summary: 'Your key',
      description: 'The key this request carries, as an admin sees it: name, role, plan, quotas, scopes, when it was made, when it expires, its last use, the ban in force, and during a rotation the key it replaced (`replaces`) or the key that replaces it (`replacedBy`, on the old key until its grace period ends). Answers even while the key is banned, charging nothing, so a banned key can learn why and until when.',
      querystring: NoQuery,
      response: { 200: Reply('Your key\'s record (never the key itself).', ApiKeySchema, { ...NoStoreHeader, ...BanRetryAfterHeader }) }
    },
    config: { role: 'customer', scope: null, errors: ['validation_failed'], banExempt: true, lifecycle }
  }, async (request, reply) => {
    const state = await holder.view(ownKeyId(request.principal))
    reply.header('cache-control', 'no-store')
    return toApiKey(state)
  })

  app.get('/keys/me/usage', {
    schema: {
      operationId: 'getMyApiKeyUsage', tags, summary: 'Your key\'s requests per day',
      description: 'The requests made with this key per UTC day, as `GET /admin/keys/{keyId}/usage` shows them to an admin: `allowed` (charged to the key\'s windows, whatever the answer), of which `other4xx` (answered 4xx: refused for another reason than a window or a ban), `limited` (`429 rate_limited`), `banned` (`429 api_key_banned`); days with traffic only, oldest first. `allowed - other4xx`, `other4xx`, `limited` and `banned` partition the counted requests. `deprecated` lists this key\'s own calls of deprecated operations over the same days, with the successor and sunset of each. Each key of a rotated pair counts its own.',
      querystring: KeyUsageQuery,
      response: { 200: Reply('Your key\'s usage per day.', KeyUsageSchema, NoStoreHeader) }
    },
    config: { role: 'customer', scope: null, errors: ['validation_failed'], lifecycle }
  }, async (request, reply) => {
    const usage = await holder.usage(ownKeyId(request.principal), request.query)
    reply.header('cache-control', 'no-store')
    return usage
  })

  app.get('/keys/me/bans', {
    schema: {
      operationId: 'listMyApiKeyBans', tags, summary: 'Your key\'s ban history',
      description: 'The bans of this key\'s rotation chain (they share one quota and ban), latest first, at most 50: when each started, when it ends or ended, why, and whether an admin lifted it. Answers even while the key is banned, charging nothing.',
      querystring: NoQuery,
      response: { 200: Reply('Your key\'s bans.', KeyBansSchema, { ...NoStoreHeader, ...BanRetryAfterHeader }) }
    },
    config: { role: 'customer', scope: null, errors: ['validation_failed'], banExempt: true, lifecycle }
  }, async (request, reply) => {
    const bans = await holder.bans(ownKeyId(request.principal))
    reply.header('cache-control', 'no-store')
    return bans
  })

  app.post('/keys/me/rotate', {
    schema: {
      operationId: 'rotateMyApiKey', tags, summary: 'Rotate your key',
      description: 'Makes this key\'s successor, as an admin\'s rotation does: the same name, role, plan, quotas and scopes, and the same quota identity (one minute and day count, one ban). The new key is in the answer, once. The key that asked keeps working for `gracePeriodSeconds` (a day by default; 0 stops it at once, for a key that leaked), then answers `401 api_key_expired`. A key already rotated (during its grace period) is `409 api_key_not_rotatable`: rotate its successor. Writes `key.rotated`.',
      querystring: NoQuery, body: RotateApiKeySchema,
      response: { 201: Reply('The new key, shown once; its `replaces` names the key that asked.', CreatedApiKeySchema, NoStoreHeader) }
    },
    config: { role: 'customer', scope: null, errors: ['validation_failed', 'api_key_not_rotatable'], lifecycle, optionalBody: true },
    // A rotation with the defaults needs no body at all; a JSON null is a body, and refused.
    preValidation: async (request) => { if (request.body === undefined) request.body = {} }
  }, async (request, reply) => {
    const { key, ...state } = await holder.rotate(ownKeyId(request.principal), request.body)
    reply.code(201).header('cache-control', 'no-store')
    return { ...toApiKey(state), key }
  })
}
