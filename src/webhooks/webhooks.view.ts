// The public shape of an endpoint: what GET answers and what webhook.disabled carries. The
// secret appears only in the answers of create and rotate_secret (webhooks.routes.ts).
import type { Attempt, Webhook } from './webhooks.schema.ts'
import type { EventDraft } from '../events/events.store.ts'
import { ATTEMPT_DETAILS_KEPT_MS, type HeaderPair } from './attempt.ts'
import type { AttemptDetail, DisabledReason, WebhookRecord } from './webhooks.store.ts'

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

const headerView = ([name, value]: HeaderPair) => ({ name, value })

/**
 * An attempt with what it sent and what the endpoint answered. The answer's text is the
 * receiver's, untrusted: it goes out as JSON strings, never interpreted here.
 */
export function attemptView (detail: AttemptDetail): Attempt {
  const { request, response } = detail
  return {
    id: `att_${detail.id}`,
    webhookId: detail.webhookId,
    eventId: detail.eventId,
    type: detail.type,
    attempt: detail.attempt,
    kind: detail.kind,
    at: new Date(detail.at).toISOString(),
    outcome: detail.outcome,
    ...(detail.status !== null && { status: detail.status }),
    ...(detail.error !== null && { error: detail.error }),
    durationMs: detail.durationMs,
    request: request === null ? null : { ...request, headers: request.headers.map(headerView) },
    response: response === null ? null : { ...response, headers: response.headers.map(headerView) },
    keptUntil: new Date(detail.at + ATTEMPT_DETAILS_KEPT_MS).toISOString()
  }
}
