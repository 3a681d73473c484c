// The webhooks port (docs/product.md, webhooks): endpoints, their deliveries and attempts, and
// what the dispatcher (dispatcher.ts) asks of storage. Each method that changes state is one
// transaction on both engines, with the events it writes (webhook.test, webhook.disabled).
import type { EventDraft, StoredEvent } from '../events/events.store.ts'

export type WebhookStatus = 'enabled' | 'disabled'

export interface WebhookRecord {
  /** Position in creation order: the list's cursor. */
  seq: number
  id: string
  /** The caller's key id (accounts/caller.ts): the first key of its rotation chain. */
  ownerKeyId: number
  url: string
  /** Type names and `family.*` patterns. */
  types: string[]
  description: string | null
  status: WebhookStatus
  secret: string
  /** The secret before the last rotation, still signing until previousSecretUntil. */
  previousSecret: string | null
  previousSecretUntil: number | null
  createdAt: number
  updatedAt: number
  /** The first failed attempt since the last success; null while the endpoint succeeds. */
  failingSince: number | null
  version: number
}

export interface NewWebhook {
  id: string
  ownerKeyId: number
  url: string
  types: string[]
  description: string | null
  secret: string
  now: number
}

export interface WebhookPatch {
  url?: string
  types?: string[]
  description?: string
  status?: WebhookStatus
}

/** One row of GET /webhooks/{id}/deliveries: an attempt made, or the next one still to come. */
export interface DeliveryEntry {
  eventId: string
  type: string
  attempt: number
  /** When the attempt was made, or when the pending one is due. */
  at: number
  outcome: 'succeeded' | 'failed' | 'pending'
  status: number | null
  error: string | null
  durationMs: number | null
}

export type ReplaySelection = { since: number; until: number } | { eventIds: string[] }

/** A delivery the dispatcher holds a lease on, with what its attempt needs. */
export interface ClaimedDelivery {
  id: number
  webhookId: string
  url: string
  secrets: string[]
  /** Attempts made before this one. */
  attempts: number
  event: StoredEvent
}

export interface DueClaim {
  now: number
  leaseOwner: string
  leaseUntil: number
  limit: number
  perEndpoint: number
  /** Attempts this instance has in flight, by endpoint id. */
  inFlight: Readonly<Record<string, number>>
}

export interface AttemptRecord {
  deliveryId: number
  webhookId: string
  leaseOwner: string
  attempt: number
  at: number
  outcome: 'succeeded' | 'failed'
  status: number | null
  error: string | null
  durationMs: number
  /** When the next attempt is due after a failure; null: the delivery is failed for good. */
  nextAttemptAt: number | null
  /** An endpoint failing since this instant or earlier is disabled by this failure. */
  disableIfFailingSince: number
  /** The webhook.disabled event written when it is (its data is the endpoint's public view). */
  disabledEvent: (webhook: WebhookRecord) => EventDraft
}

export interface WebhookStore {
  /** Refuses with webhook_limit_reached when the owner already has `maxPerOwner` endpoints. */
  createWebhook (input: NewWebhook, maxPerOwner: number): Promise<WebhookRecord>
  getWebhook (id: string): Promise<WebhookRecord | null>
  /** Creation order, after the seq `afterSeq`; every owner's when `ownerKeyId` is null. */
  listWebhooks (ownerKeyId: number | null, afterSeq: number | null, limit: number): Promise<WebhookRecord[]>
  /** Null when absent. `disabledEvent` is written in the same transaction when the change disables it. */
  updateWebhook (
    id: string,
    patch: WebhookPatch,
    now: number,
    disabledEvent: (webhook: WebhookRecord) => EventDraft
  ): Promise<WebhookRecord | null>
  /** `now`: the instant of its audit entry. */
  deleteWebhook (id: string, now: number): Promise<boolean>
  rotateSecret (id: string, secret: string, previousUntil: number, now: number): Promise<WebhookRecord | null>
  /** Writes the event and one delivery of it to this endpoint alone; returns the event id. */
  queueTest (id: string, event: EventDraft, now: number): Promise<string>
  /**
   * Queues again, at most `max`, the events of the endpoint's types that its owner may see and the
   * selection names; returns how many.
   */
  replay (id: string, selection: ReplaySelection, now: number, max: number): Promise<number>
  listDeliveries (id: string, limit: number): Promise<DeliveryEntry[]>

  /**
   * The dispatcher's fan-out: reads the feed after the 'webhooks' cursor (under its lock), adds one
   * delivery per enabled endpoint whose types match and whose owner may see the event, moves the
   * cursor; returns how many events it read (0: caught up).
   */
  fanOut (now: number, batch: number): Promise<number>
  /**
   * Takes a lease on up to `limit` due deliveries of enabled endpoints, each endpoint's oldest due
   * first, so that each endpoint has at most `perEndpoint` in flight counting the `inFlight` this
   * instance holds; a delivery another lease holds is taken only once that lease has expired. The
   * result is in due order. Endpoints take turns: when the limit runs out, the next claim (of this
   * store) starts with the endpoint after the last one served, in creation order, so endpoints
   * with a backlog never keep the others waiting for good.
   */
  claimDue (claim: DueClaim): Promise<ClaimedDelivery[]>
  /** Records an attempt and its delivery's new state; may disable the endpoint (see AttemptRecord). */
  recordAttempt (record: AttemptRecord): Promise<void>
  /** Deliveries waiting for an attempt (enabled endpoints), and the creation time of the oldest. */
  pendingStats (): Promise<{ pending: number; oldestCreatedAt: number | null }>
}
