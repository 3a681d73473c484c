// An endpoint as its GET answers it, and why it may be disabled: the data of the webhook.disabled
// event as well as the webhooks' own schema. It lives here, beside the catalogue that declares that
// event, so that events/ never imports webhooks/ (webhooks/ imports events/ for the catalogue and
// the outbox port); webhooks/webhooks.schema.ts re-exports it.
import { Type, type Static } from 'typebox'
import { StringEnum } from '../shared/schemas.ts'

export const WEBHOOK_EXAMPLE_ID = 'wh_5f0c6b1e8d2a4c7b9e3f1a20'
export const WEBHOOK_EXAMPLE_URL = 'https://hooks.partner.example/petstore'

export const WebhookStatusSchema = StringEnum(['enabled', 'disabled'] as const, { title: 'WebhookStatus', description: 'enabled: deliveries go out; disabled: none (by the owner, or after 5 days in which every attempt failed).' })
/** Why an endpoint is disabled: the endpoint's `disabledReason` and the `reason` of its webhook.disabled event. */
export const DisabledReasonSchema = StringEnum(['failing', 'manual', 'owner_inactive'] as const, {
  title: 'WebhookDisabledReason',
  description: 'failing: every attempt failed for 5 days; manual: its owner or an admin disabled it; owner_inactive: its owner has no live key left (revoked, expired, or rotated and past the grace period without a live successor), from which moment it receives nothing.'
})

export const webhookFields = {
  id: Type.String({ description: 'The endpoint id.' }),
  url: Type.String({ description: 'Where deliveries are POSTed.' }),
  types: Type.Array(Type.String(), { description: 'The event types delivered.' }),
  description: Type.Optional(Type.String()),
  status: WebhookStatusSchema,
  disabledReason: Type.Optional(DisabledReasonSchema),
  ownerKeyId: Type.Integer({ description: 'The key holder the endpoint belongs to (the first key of its rotation chain).' }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' })
}
export const webhookExample = {
  id: WEBHOOK_EXAMPLE_ID,
  url: WEBHOOK_EXAMPLE_URL,
  types: ['order.*'],
  status: 'enabled',
  ownerKeyId: 1,
  createdAt: '2026-11-21T12:00:00.000Z',
  updatedAt: '2026-11-21T12:00:00.000Z'
}

export const WebhookSchema = Type.Object(webhookFields, {
  title: 'Webhook',
  additionalProperties: false,
  examples: [webhookExample]
})
export type Webhook = Static<typeof WebhookSchema>
