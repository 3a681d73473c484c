// The public contract of webhook endpoints (docs/product.md, webhooks): the endpoint, its
// deliveries, and the bodies of create, change and replay.
import { Type, type Static } from 'typebox'
import { NO_CONTROLS, MULTILINE_TEXT, PageQuery, StringEnum } from '../shared/schemas.ts'

const WEBHOOK_ID_PATTERN = '^wh_[0-9a-f]{24}$'
const EXAMPLE_ID = 'wh_5f0c6b1e8d2a4c7b9e3f1a20'
const EXAMPLE_URL = 'https://hooks.partner.example/petstore'
// The create example's host is an address: it must pass the address check where no DNS answers (the examples walk).
const CREATE_EXAMPLE_URL = 'https://93.184.215.14/petstore'

const webhookIdParams = (example: string) => Type.Object({
  webhookId: Type.String({ pattern: WEBHOOK_ID_PATTERN, description: 'The endpoint id (`wh_` and 24 hex digits).', examples: [example] })
}, { additionalProperties: false })
export const WebhookIdParams = webhookIdParams(EXAMPLE_ID)
/**
 * deleteWebhook's example deletes the other sample endpoint (src/sample-data.ts), so the operations
 * after it find theirs.
 */
export const DeleteWebhookIdParams = webhookIdParams('wh_0d3e9a7c2b5f4e1a8c6d2b90')

const Url = Type.String({ minLength: 1, maxLength: 2048, pattern: NO_CONTROLS, description: 'Where deliveries are POSTed: `https://`, a host that resolves only to public addresses (SECURITY.md), no user name or password.', examples: [EXAMPLE_URL] })
const Types = Type.Array(Type.String({ pattern: '^[a-z_]{1,40}\\.(?:[a-z_]{1,40}|\\*)$', description: 'An event type (`order.created`) or a family (`order.*`).' }), {
  minItems: 1, maxItems: 40, uniqueItems: true, description: 'The event types delivered: names or `family.*`. A type the caller may never see is `403 forbidden`; an unknown one `400 validation_failed`.', examples: [['order.*']]
})
const Description = Type.String({ maxLength: 500, pattern: MULTILINE_TEXT, description: 'A note for the endpoint\'s owner, at most 500 characters.' })
const WebhookStatusSchema = StringEnum(['enabled', 'disabled'] as const, { title: 'WebhookStatus', description: 'enabled: deliveries go out; disabled: none (by the owner, or after 5 days in which every attempt failed).' })

export const NewWebhookSchema = Type.Object({
  url: Url,
  types: Types,
  description: Type.Optional(Description)
}, { title: 'NewWebhook', additionalProperties: false, examples: [{ url: CREATE_EXAMPLE_URL, types: ['order.*'], description: 'Order updates for the partner shop' }] })
export type NewWebhook = Static<typeof NewWebhookSchema>

export const WebhookPatchSchema = Type.Object({
  url: Type.Optional(Url),
  types: Type.Optional(Types),
  description: Type.Optional(Description),
  status: Type.Optional(WebhookStatusSchema)
}, { title: 'WebhookPatch', additionalProperties: false, minProperties: 1, examples: [{ status: 'disabled' }] })
export type WebhookPatch = Static<typeof WebhookPatchSchema>

const webhookFields = {
  id: Type.String({ description: 'The endpoint id.' }),
  url: Type.String({ description: 'Where deliveries are POSTed.' }),
  types: Type.Array(Type.String(), { description: 'The event types delivered.' }),
  description: Type.Optional(Type.String()),
  status: WebhookStatusSchema,
  ownerKeyId: Type.Integer({ description: 'The key holder the endpoint belongs to (the first key of its rotation chain).' }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' })
}
const example = { id: EXAMPLE_ID, url: EXAMPLE_URL, types: ['order.*'], status: 'enabled', ownerKeyId: 1, createdAt: '2026-11-21T12:00:00.000Z', updatedAt: '2026-11-21T12:00:00.000Z' }

export const WebhookSchema = Type.Object(webhookFields, { title: 'Webhook', additionalProperties: false, examples: [example] })
export type Webhook = Static<typeof WebhookSchema>
export const WebhooksSchema = Type.Array(WebhookSchema, { title: 'Webhooks', examples: [[example]] })

export const WebhookWithSecretSchema = Type.Object({
  ...webhookFields,
  secret: Type.String({ description: 'The signing secret (`whsec_` and base64), shown only here: keep it to verify the `webhook-signature` header.' })
}, { title: 'WebhookWithSecret', additionalProperties: false, examples: [{ ...example, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] })
export type WebhookWithSecret = Static<typeof WebhookWithSecretSchema>

export const WebhookListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type WebhookListQuery = Static<typeof WebhookListQuery>

export const DeliveriesQuery = Type.Object({
  limit: PageQuery.limit
}, { additionalProperties: false })

export const DeliverySchema = Type.Object({
  eventId: Type.String(),
  type: Type.String(),
  attempt: Type.Integer({ description: 'The attempt number, from 1.' }),
  at: Type.String({ format: 'date-time', description: 'When the attempt was made, or when a pending one is due.' }),
  outcome: StringEnum(['succeeded', 'failed', 'pending'] as const, { title: 'DeliveryOutcome' }),
  status: Type.Optional(Type.Integer({ description: 'The receiver\'s HTTP status, when it answered.' })),
  error: Type.Optional(Type.String({ description: 'Why the attempt failed, in a few words (never the receiver\'s body).' })),
  durationMs: Type.Optional(Type.Integer())
}, { title: 'WebhookDelivery', additionalProperties: false })
export const DeliveriesSchema = Type.Array(DeliverySchema, {
  title: 'WebhookDeliveries',
  examples: [[
    { eventId: 'evt_0b7c4e9a2f3d4c1e8a6b5d7f9e0c1a2b', type: 'order.created', attempt: 2, at: '2026-11-21T12:00:06.000Z', outcome: 'succeeded', status: 200, durationMs: 85 },
    { eventId: 'evt_0b7c4e9a2f3d4c1e8a6b5d7f9e0c1a2b', type: 'order.created', attempt: 1, at: '2026-11-21T12:00:01.000Z', outcome: 'failed', status: 503, error: 'HTTP 503', durationMs: 40 }
  ]]
})

const EventId = Type.String({ pattern: '^evt_[0-9a-f]{32}$' })
export const ReplaySchema = Type.Union([
  Type.Object({
    since: Type.String({ format: 'date-time', description: 'Events created at or after this instant.' }),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'Events created before this instant (default: now).' }))
  }, { additionalProperties: false }),
  Type.Object({
    eventIds: Type.Array(EventId, { minItems: 1, maxItems: 100, uniqueItems: true })
  }, { additionalProperties: false })
], { title: 'WebhookReplay', description: 'The events to deliver again: a time range, or a list of event ids. Only the endpoint\'s types that its owner may see are queued.', examples: [{ since: '2026-11-21T00:00:00.000Z' }] })
export type Replay = Static<typeof ReplaySchema>

export const QueuedSchema = Type.Object({
  queued: Type.Integer({ description: 'How many events were queued for delivery.' })
}, { title: 'WebhookQueued', additionalProperties: false, examples: [{ queued: 3 }] })

export const TestQueuedSchema = Type.Object({
  eventId: Type.String({ description: 'The webhook.test event, delivered to this endpoint alone.' })
}, { title: 'WebhookTestQueued', additionalProperties: false, examples: [{ eventId: 'evt_5a1e0c9b7d3f4a2e8c6b1d0f9e7a3c5b' }] })
