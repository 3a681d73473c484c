// The one-time links to the partner portal (docs/product.md, "Partner portal"): a key holder asks
// one for itself (a shop embeds "open your dashboard" in its own site, as Unkey and Svix let it),
// an admin for any key. The link's origin is this request's (Host, and X-Forwarded-Proto and
// X-Forwarded-Host from a trusted proxy: TRUST_PROXY), the address the caller reached us at.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { AppError } from '../errors.ts'
import { NoQuery, Reply } from '../shared/schemas.ts'
import { PortalKeyIdParams, PortalLinkSchema } from './portal.schema.ts'
import type { Portal } from './portal.service.ts'

/** A host as a link may carry it: a name or address and an optional port, nothing else. */
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$/

/** The origin the caller reached this server at. */
export function requestOrigin (request: FastifyRequest): string {
  const host = request.host
  if (!HOST.test(host)) throw new AppError('validation_failed', 'the request\'s Host header is not a host name: the portal link could not be made')
  return `${request.protocol}://${host}`
}

const NoStore = { 'Cache-Control': Type.String({ description: 'Always `no-store`: a link opens a session once and must not be kept by any cache.' }) }

export async function portalLinkRoutes (fastify: FastifyInstance, { portal }: { portal: Portal }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const lifecycle = { stability: 'beta', note: 'New with the partner portal: the response shape may still change, with a deprecation period.' } as const

  app.post('/keys/me/portal', {
    schema: {
      operationId: 'createMyPortalLink', tags: ['Your key'], summary: 'A link to your partner portal',
      description: 'A one-time link to the partner portal (`/portal`) for the key this request carries: valid 15 minutes, usable once. Opening it starts a portal session that acts as this key (its role, scopes and quota) without the key ever reaching the browser. Charged as a read.',
      querystring: NoQuery,
      response: { 201: Reply('The link.', PortalLinkSchema, NoStore) }
    },
    config: { role: 'customer', scope: null, errors: ['validation_failed'], lifecycle }
  }, async (request, reply) => {
    const principal = request.principal
    if (principal === null) throw new AppError('unauthenticated', 'an API key is required')
    const link = await portal.makeLink(principal.keyId, requestOrigin(request))
    reply.code(201).header('cache-control', 'no-store')
    return link
  })

  app.post('/admin/keys/:keyId/portal', {
    schema: {
      operationId: 'createPortalLink', tags: ['API keys'], summary: 'A link to a key\'s partner portal',
      description: 'A one-time link to the partner portal (`/portal`) for key `keyId`, to hand to its holder: valid 15 minutes, usable once. A link for a key revoked or expired by the time it is opened is refused then, with a page that says so. `petstore keys portal-link ID` makes the same.',
      params: PortalKeyIdParams, querystring: NoQuery,
      response: { 201: Reply('The link.', PortalLinkSchema, NoStore) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed', 'not_found'], lifecycle }
  }, async (request, reply) => {
    const link = await portal.makeLink(request.params.keyId, requestOrigin(request))
    reply.code(201).header('cache-control', 'no-store')
    return link
  })
}
