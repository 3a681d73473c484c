// The webhook tables' rows as both engines read them (column for column alike), mapped once.
import type { StoredEvent } from '../events/events.store.ts'
import { matchesTypes, maySee } from '../webhooks/event-types.ts'
import type { AttemptResponse, HeaderPair } from '../webhooks/attempt.ts'
import type { AttemptDetail, AttemptKind, AttemptRecord, DeliveryEntry, WebhookRecord } from '../webhooks/webhooks.store.ts'

export const WEBHOOK_COLUMNS = 'seq, id, owner_key_id, url, types, description, status, disabled_reason, secret, previous_secret, previous_secret_until, created_at, updated_at, failing_since, version'

export interface WebhookRow {
  seq: number | string
  id: string
  owner_key_id: number | string
  url: string
  types: string
  description: string | null
  status: WebhookRecord['status']
  disabled_reason: WebhookRecord['disabledReason']
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
    disabledReason: row.disabled_reason,
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

/** A delivery's origin, as webhook_deliveries.origin keeps it. */
export type Origin = 'feed' | 'replay' | 'test'

export interface AttemptRow {
  id: number | string
  event_id: string
  type: string
  attempt: number
  /** NULL for an attempt recorded before kinds were kept: kindOf tells it from the delivery. */
  kind: AttemptKind | null
  origin: Origin
  at: number | string
  outcome: 'succeeded' | 'failed'
  status: number | null
  error: string | null
  duration_ms: number | null
}
export interface PendingRow {
  event_id: string
  type: string
  attempts: number
  origin: Origin
  replay_due: boolean | number
  next_attempt_at: number | string
}
/** An attempt with its details (getAttempt). */
export interface AttemptDetailRow extends AttemptRow {
  webhook_id: string
  request_url: string | null
  request_headers: string | null
  request_body: string | null
  response_headers: string | null
  response_body: string | null
  response_truncated: boolean | number | null
}

/**
 * The columns of an attempt row and of a pending row, the same on both engines (`a` the attempt,
 * `d` its delivery, `e` its event). A test delivery shows the type it sends.
 */
export const ATTEMPT_COLUMNS = 'a.id, d.event_id, coalesce(d.test_type, e.type) AS type, a.attempt, a.kind, d.origin, a.at, a.outcome, a.status, a.error, a.duration_ms'
export const ATTEMPT_DETAIL_COLUMNS = `${ATTEMPT_COLUMNS}, a.webhook_id, a.request_url, a.request_headers, d.request_body, a.response_headers,
  a.response_body, a.response_truncated`
export const PENDING_COLUMNS = 'd.event_id, coalesce(d.test_type, e.type) AS type, d.attempts, d.origin, d.replay_due, d.next_attempt_at'

/**
 * The kind of an attempt: the first of a replayed delivery is a replay, and so is a waiting retry
 * that a replay made due (`replayDue`); any other later one, a retry.
 */
export const kindOf = (attempt: number, origin: Origin, replayDue = false): AttemptKind =>
  replayDue ? 'replay' : attempt > 1 ? 'retry' : origin === 'replay' ? 'replay' : 'first'

const attemptEntry = (row: AttemptRow): DeliveryEntry => ({
  id: Number(row.id),
  eventId: row.event_id,
  type: row.type,
  attempt: row.attempt,
  kind: row.kind ?? kindOf(row.attempt, row.origin),
  at: Number(row.at),
  outcome: row.outcome,
  status: row.status,
  error: row.error,
  durationMs: row.duration_ms
})

/** The attempt's details as the API shows them; request and response null when not kept. */
export function toAttemptDetail (row: AttemptDetailRow): AttemptDetail {
  const entry = attemptEntry(row)
  const request = row.request_url === null || row.request_headers === null || row.request_body === null
    ? null
    : { url: row.request_url, headers: JSON.parse(row.request_headers) as HeaderPair[], body: row.request_body }
  const response: AttemptResponse | null = row.response_headers === null || row.status === null
    ? null
    : {
        status: row.status,
        headers: JSON.parse(row.response_headers) as HeaderPair[],
        body: row.response_body ?? '',
        truncated: row.response_truncated === true || row.response_truncated === 1
      }
  return {
    ...entry,
    id: Number(row.id),
    webhookId: row.webhook_id,
    outcome: row.outcome,
    durationMs: row.duration_ms ?? 0,
    request,
    response
  }
}

/**
 * An attempt's details as columns: request_url, request_headers, response_headers, response_body,
 * response_truncated.
 */
export function attemptDetailValues (record: Pick<AttemptRecord, 'request' | 'response'>): [
  string | null, string | null, string | null, string | null, boolean | null
] {
  const request = record.request ?? null
  const response = record.response ?? null
  return [
    request?.url ?? null,
    request === null ? null : JSON.stringify(request.headers),
    response === null ? null : JSON.stringify(response.headers),
    response?.body ?? null,
    response?.truncated ?? null
  ]
}

/** Attempts made and deliveries still pending, newest first, at most `limit`. */
export function deliveryEntries (
  attempts: readonly AttemptRow[],
  pending: readonly PendingRow[],
  limit: number
): DeliveryEntry[] {
  const made: DeliveryEntry[] = attempts.map(attemptEntry)
  const waiting: DeliveryEntry[] = pending.map((row) => ({
    id: null,
    eventId: row.event_id,
    type: row.type,
    attempt: row.attempts + 1,
    kind: kindOf(row.attempts + 1, row.origin, row.replay_due === true || row.replay_due === 1),
    at: Number(row.next_attempt_at),
    outcome: 'pending',
    status: null,
    error: null,
    durationMs: null
  }))
  return [...waiting, ...made].sort((a, b) => b.at - a.at).slice(0, limit)
}

/**
 * Whether the owner of the endpoint `w` is live at the instant `now` (an SQL parameter, written
 * twice: on SQLite a numbered one): a key of its rotation chain (the first key, `owner_key_id`,
 * or a successor naming it in quota_key_id) neither revoked nor expired. A rotated key past its
 * grace period has expired, so an endpoint keeps its owner through a rotation and loses it when
 * the chain has no live key left. Two lookups, not one with OR: each reads its index (the primary
 * key, api_keys_by_quota_key), where an OR of the two columns read every key for each endpoint.
 * PostgreSQL's claim_webhook_deliveries (its migration 28) holds a copy: a change here needs a
 * migration that replaces the function.
 */
export function liveOwnerSql (now: string): string {
  const live = (k: string): string => `${k}.revoked_at IS NULL AND (${k}.expires_at IS NULL OR ${k}.expires_at > ${now})`
  return `(EXISTS (SELECT 1 FROM api_keys lk WHERE lk.id = w.owner_key_id AND ${live('lk')})
    OR EXISTS (SELECT 1 FROM api_keys lq WHERE lq.quota_key_id = w.owner_key_id AND ${live('lq')}))`
}

/** The start (epoch ms) of the UTC hour of `now`: the window of the replay rate. */
export const hourOf = (now: number): number => now - (now % 3_600_000)

/**
 * How many of the `wanted` events a replay may queue with `used` of the hour's `perHour` gone, and
 * when the hour ends (for a refusal's Retry-After).
 */
export function replayRoom (
  used: number,
  wanted: number,
  perHour: number,
  now: number
): { room: number; retryAt: number } {
  return { room: Math.max(0, Math.min(wanted, perHour - used)), retryAt: hourOf(now) + 3_600_000 }
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
