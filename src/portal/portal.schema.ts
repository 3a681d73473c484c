// The partner portal's shapes (docs/product.md, "Partner portal"): the one-time link the API
// answers, and what POST and GET /portal/session answer (outside /v1: docs/api.md describes them).
import { Type, type Static } from 'typebox'
import { Int64, IdParam } from '../shared/schemas.ts'

export const PortalLinkSchema = Type.Object({
  url: Type.String({ description: 'The one-time link: `<this server>/portal#link=<token>`. The token is in the URL fragment, which a browser never sends to a server, so it is in no access log. Open it within 15 minutes, once; it opens a portal session acting as the key, without the key ever reaching the browser.' }),
  expiresAt: Type.String({ format: 'date-time', description: 'When the link stops working (15 minutes after it was made), unless used before.' })
}, {
  title: 'PortalLink',
  additionalProperties: false,
  description: 'A link to the partner portal, valid 15 minutes and usable once.',
  examples: [{ url: 'https://petstore.example/portal#link=Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5', expiresAt: '2026-11-21T12:15:30.000Z' }]
})
export type PortalLinkView = Static<typeof PortalLinkSchema>

export const PortalKeyIdParams = Type.Object({ keyId: IdParam('The key the link opens the portal as.', [1]) }, { additionalProperties: false })

/** POST /portal/session: the link's token, as the page read it from the URL fragment. */
export const PortalExchangeBody = Type.Object({
  link: Type.String({ minLength: 1, maxLength: 200, description: 'The token after `#link=` in the link.' })
}, { additionalProperties: false })

export const PortalSessionSchema = Type.Object({
  keyId: Int64({ description: 'The key the portal acts as.' }),
  role: Type.String({ description: 'Its role.' }),
  name: Type.Union([Type.String(), Type.Null()], { description: 'Its name.' }),
  expiresAt: Type.String({ format: 'date-time', description: 'When the session ends at the latest (24 hours after it began, or the key\'s expiry if sooner); it also ends after an hour without a request.' }),
  csrfToken: Type.String({ description: 'Send it as `X-CSRF-Token` with every portal request other than GET and HEAD.' })
}, { title: 'PortalSession', additionalProperties: false })
