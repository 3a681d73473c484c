// The public shape of an endpoint: what GET answers and what webhook.disabled carries. The
// secret appears only in the answers of create and rotate_secret (webhooks.routes.ts).
import type { Webhook } from './webhooks.schema.ts'
import type { EventDraft } from '../events/events.store.ts'
import type { DisabledReason, WebhookRecord } from './webhooks.store.ts'

export function webhookView (record: WebhookRecord): Webhook {
  return {
    id: record.id,
    url: record.url,
    types: record.types,
    ...(record.description !== null && { description: record.description }),
    status: record.status,
    ...(record.status === 'disabled' && record.disabledReason !== null && { disabledReason: record.disabledReason }),
    ownerKeyId: record.ownerKeyId,
    createdAt: new Date(record.createdAt).toISOString(),
    updatedAt: new Date(record.updatedAt).toISOString()
  }
}

/** The webhook.disabled event of an endpoint, to its owner (and admins, who see every event). */
export function disabledEvent (reason: DisabledReason): (webhook: WebhookRecord) => EventDraft {
  return (webhook) => ({
    type: 'webhook.disabled',
    audience: 'webhook',
    subjectKeyId: webhook.ownerKeyId,
    data: { ...webhookView(webhook), reason }
  })
}
