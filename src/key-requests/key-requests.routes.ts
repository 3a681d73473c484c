// GET /v1/keys/me/requests: the key's own request log (docs/product.md 9.13), any role, its own
// key's requests only (there is no id parameter). Free like /rate_limit (config.quota 'free'), and
// served to a banned key within its free reads (config.banExempt): looking at why a request was
// refused must never cost a request, nor be refused for the same reason.
// GET /v1/admin/keys/{keyId}/requests: the same log of any key, for an operator (admin role,
// keys:admin), a revoked or expired key's too, whose holder can no longer read it: "why was this
// key refused" has an answer. Charged like the other admin reads of a key (its usage, its bans).
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { AppError } from '../errors.ts'
import { setNextLink } from '../routing/conditional.ts'
import { LinkHeader, Reply, StringEnum } from '../shared/schemas.ts'
import {
  KEEP_LAST, KeyRequestListQuery, KeyRequestsParams, KeyRequestsSchema, REFUSAL_DAYS, REFUSALS_MAX
} from './key-requests.schema.ts'
import type { KeyRequestService } from './key-requests.service.ts'
import { toApiKeyRequest } from './key-requests.view.ts'

const HEADERS = {
  ...LinkHeader,
  'Cache-Control': StringEnum(['no-store'] as const, { description: 'Always `no-store`: the log changes with every request.' }),
  'retry-after': Type.Integer({ description: 'Sent only while the key is banned (this read is served and charged nothing): whole seconds until the ban ends.' })
}
const KEPT = `Kept: the last ${KEEP_LAST.toLocaleString('en')} requests of the key, and besides them its refusals of the last ${REFUSAL_DAYS} days (at most ${REFUSALS_MAX.toLocaleString('en')}).`
const LIFECYCLE = { stability: 'beta', note: 'New with the partner portal: the shape may still change, with a deprecation period.' } as const

export async function keyRequestRoutes (
  fastify: FastifyInstance,
  { service }: { service: KeyRequestService }
): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.get('/keys/me/requests', {
    schema: {
      operationId: 'listMyApiKeyRequests', tags: ['Your key'], summary: 'Your key\'s request log',
      description: `The requests made with this key, newest first: each one's time, method, path template and operation, status, error code, \`Request-Id\` and latency, and for a refusal which rule refused it (the minute or day window with its limit and reset, the ban with its end and reason, the scope or role needed). Requests through the MCP endpoint and the portal are in it too. Find one by \`requestId\`; filter by \`status\` (\`429\`, \`4xx\`), \`code\` and \`operationId\`; filters combine, and the next page, if any, is in the \`Link\` header, which keeps them. ${KEPT} Bodies are never kept; query values that may carry a secret are \`[redacted]\`. A request is in the log at most a second after its answer. Costs no quota, and answers even while the key is banned; reading the log is not itself logged when it succeeds.`,
      querystring: KeyRequestListQuery,
      response: { 200: Reply('A page of your key\'s requests, newest first.', KeyRequestsSchema, HEADERS) }
    },
    config: {
      role: 'customer', scope: null, quota: 'free', banExempt: true, errors: ['validation_failed'],
      lifecycle: LIFECYCLE
    }
  }, async (request, reply) => {
    const principal = request.principal
    if (principal === null) throw new AppError('unauthenticated', 'an API key is required')
    const page = await service.list(principal.keyId, request.query)
    setNextLink(request, reply, page.nextCursor)
    reply.header('cache-control', 'no-store')
    return page.items.map(toApiKeyRequest)
  })

  app.get('/admin/keys/:keyId/requests', {
    schema: {
      operationId: 'listApiKeyRequests', tags: ['API keys'], summary: 'A key\'s request log',
      description: `The request log of any key, as its holder reads it with \`GET /v1/keys/me/requests\`: the same entries, filters and pages, newest first. A revoked or expired key's too, whose holder can no longer read it: each request it still sends is there with the rule that refused it. ${KEPT} An id no key has is \`404 not_found\`; a key without requests has an empty log.`,
      params: KeyRequestsParams,
      querystring: KeyRequestListQuery,
      response: { 200: Reply('A page of the key\'s requests, newest first.', KeyRequestsSchema, LinkHeader) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed', 'not_found'], lifecycle: LIFECYCLE }
  }, async (request, reply) => {
    // Cache-Control: no-store is every /v1/admin answer's (the pipeline's route head).
    const { keyId } = request.params
    const page = await service.listOfKey(keyId, request.query)
    setNextLink(request, reply, page.nextCursor)
    return page.items.map(toApiKeyRequest)
  })
}
