// The webhook tables' rows as both engines read them (column for column alike), mapped once.
import type { StoredEvent } from '../events/events.store.ts'
import { matchesTypes, maySee } from '../webhooks/event-types.ts'
import type { DeliveryEntry, WebhookRecord } from '../webhooks/webhooks.store.ts'

export const WEBHOOK_COLUMNS = 'seq, id, owner_key_id, url, types, description, status, secret, previous_secret, previous_secret_until, created_at, updated_at, failing_since, version'

export interface WebhookRow {
  seq: number | string
  id: string
  owner_key_id: number | string
  url: string
  types: string
  description: string | null
  status: WebhookRecord['status']
  secret: string
  previous_secret: string | null
  previous_secret_until: number | string | null
  created_at: number | string
  updated_at: number | string
  failing_since: number | string | null
  version: number
}

const numberOrNull = (value: number | string | null): number | null => value === null ? null : Number(value)

export function toWebhook (row: WebhookRow): WebhookRecord {
  return {
    seq: Number(row.seq),
    id: row.id,
    ownerKeyId: Number(row.owner_key_id),
    url: row.url,
    types: JSON.parse(row.types) as string[],
    description: row.description,
    status: row.status,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretUntil: numberOrNull(row.previous_secret_until),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    failingSince: numberOrNull(row.failing_since),
    version: row.version
  }
}

/** The secrets that sign a delivery at `now`: the current one, and the previous during its 24 hours. */
export function liveSecrets (webhook: Pick<WebhookRecord, 'secret' | 'previousSecret' | 'previousSecretUntil'>, now: number): string[] {
  const { secret, previousSecret, previousSecretUntil } = webhook
  return previousSecret !== null && previousSecretUntil !== null && previousSecretUntil > now
    ? [secret, previousSecret]
    : [secret]
}

export interface AttemptRow {
  event_id: string
  type: string
  attempt: number
  at: number | string
  outcome: 'succeeded' | 'failed'
  status: number | null
  error: string | null
  duration_ms: number | null
}
export interface PendingRow { event_id: string; type: string; attempts: number; next_attempt_at: number | string }

/** Attempts made and deliveries still pending, newest first, at most `limit`. */
export function deliveryEntries (
  attempts: readonly AttemptRow[],
  pending: readonly PendingRow[],
  limit: number
): DeliveryEntry[] {
  const made: DeliveryEntry[] = attempts.map((row) => ({
    eventId: row.event_id, type: row.type, attempt: row.attempt, at: Number(row.at), outcome: row.outcome,
    status: row.status, error: row.error, durationMs: row.duration_ms
  }))
  const waiting: DeliveryEntry[] = pending.map((row) => ({
    eventId: row.event_id, type: row.type, attempt: row.attempts + 1, at: Number(row.next_attempt_at), outcome: 'pending',
    status: null, error: null, durationMs: null
  }))
  return [...waiting, ...made].sort((a, b) => b.at - a.at).slice(0, limit)
}

export interface EndpointOwner {
  id: string
  types: string[]
  ownerKeyId: number
  ownerRole: WebhookOwnerRole
  createdAt: number
}
type WebhookOwnerRole = 'customer' | 'staff' | 'admin'

/** What the fan-out reads of an event: never its data, which it does not need (nor parse). */
export type FeedHead = Pick<StoredEvent, 'id' | 'type' | 'createdAt' | 'audience' | 'subjectKeyId'>

/**
 * The fan-out's decision, the same on both engines: each event goes to every enabled endpoint
 * created no later than it, whose types match and whose owner may see it. webhook.test is
 * delivered only to the endpoint it tests, by queueTest.
 */
export function fanOutPairs (
  events: readonly FeedHead[],
  endpoints: readonly EndpointOwner[]
): Array<{ webhookId: string; eventId: string }> {
  const pairs: Array<{ webhookId: string; eventId: string }> = []
  for (const event of events) {
    if (event.type === 'webhook.test') continue
    for (const endpoint of endpoints) {
      if (event.createdAt < endpoint.createdAt || !matchesTypes(endpoint.types, event.type)) continue
      if (!maySee({ role: endpoint.ownerRole, keyId: endpoint.ownerKeyId }, event)) continue
      pairs.push({ webhookId: endpoint.id, eventId: event.id })
    }
  }
  return pairs
}
