// The webhooks port (docs/product.md, webhooks): endpoints, their deliveries and attempts, and
// what the dispatcher (dispatcher.ts) asks of storage. Each method that changes state is one
// transaction on both engines, with the events it writes (webhook.test, webhook.disabled).
import type { Role } from '../accounts/plans.ts'
import type { EventDraft, StoredEvent } from '../events/events.store.ts'
import type { AttemptResponse, HeaderPair } from './attempt.ts'

export type WebhookStatus = 'enabled' | 'disabled'
/**
 * Why an endpoint is disabled: every attempt failed for 5 days, its owner or an admin disabled
 * it, or its owner has no live key left (revoked, expired, or rotated and past the grace period
 * with no live successor).
 */
export type DisabledReason = 'failing' | 'manual' | 'owner_inactive'

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
  /** Set while disabled; null while enabled (and for an endpoint disabled before reasons were kept). */
  disabledReason: DisabledReason | null
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

/**
 * What started an attempt: the first of a delivery the feed or a test queued, a retry after a
 * failure (the schedule), or a replay: the first of a delivery a replay or a recovery queued, or
 * the waiting retry a replay or a recovery made due at once (issue 49).
 */
export type AttemptKind = 'first' | 'retry' | 'replay'

/** One row of GET /webhooks/{id}/deliveries: an attempt made, or the next one still to come. */
export interface DeliveryEntry {
  /** The attempt's id; null for a pending one, not made yet. */
  id: number | null
  eventId: string
  /** The type delivered: the event's, or the one a test sent. */
  type: string
  attempt: number
  kind: AttemptKind
  /** When the attempt was made, or when the pending one is due. */
  at: number
  outcome: 'succeeded' | 'failed' | 'pending'
  status: number | null
  error: string | null
  durationMs: number | null
}

/** What an attempt sent: the URL, the headers in their order, the signed body. Never the secret. */
export interface AttemptRequest {
  url: string
  headers: HeaderPair[]
  body: string
}

/**
 * One attempt with what it sent and what the endpoint answered (GET
 * /webhooks/{id}/attempts/{attemptId}). `request` is null when nothing was sent (the URL was
 * refused before connecting) and once the details are pruned (ATTEMPT_DETAILS_KEPT_DAYS), as is
 * `response`, which is also null when no answer came (a network error, the deadline before the
 * status line).
 */
export interface AttemptDetail extends DeliveryEntry {
  id: number
  webhookId: string
  outcome: 'succeeded' | 'failed'
  durationMs: number
  request: AttemptRequest | null
  response: AttemptResponse | null
}

/**
 * What a replay queues: a time range or a list of ids; `onlyFailed`: a recovery, only the events
 * whose delivery to the endpoint failed for good and that neither succeeded since nor wait.
 */
export type ReplaySelection = { since: number; until: number; onlyFailed?: true } | { eventIds: string[] }

/** The bounds of one replay or recovery (docs/product.md 13.9). */
export interface ReplayLimits {
  /** At most this many events per request. */
  max: number
  /** At most this many deliveries queued by replays and recoveries per key holder and UTC hour. */
  perHour: number
}

export type ReplayResult =
  /**
   * `nextSince`: the creation time of the first event left out when `max` or the hour's rest cut
   * the selection (a range only), from which a next request goes on.
   */
  | { queued: number; nextSince: number | null }
  /** The hour's deliveries are all used: nothing was queued before `retryAt`. */
  | { refused: 'rate'; retryAt: number }

/** A delivery the dispatcher holds a lease on, with what its attempt needs. */
export interface ClaimedDelivery {
  id: number
  webhookId: string
  /** The endpoint's owner (the key holder whose share of attempts it uses). */
  ownerKeyId: number
  url: string
  secrets: string[]
  /** Attempts made before this one. */
  attempts: number
  event: StoredEvent
  /** The type a test delivery sends, with its documented example, in place of the event's; null: the event's. */
  testType: string | null
  /** What this attempt is: first, retry, or replay (also a retry a replay made due). */
  kind: AttemptKind
  /**
   * The body an earlier attempt of this delivery sent: sent again as it was, so every attempt of a
   * delivery carries the same bytes; null before the first.
   */
  requestBody: string | null
}

export interface DueClaim {
  now: number
  leaseOwner: string
  leaseUntil: number
  limit: number
  perEndpoint: number
  /** Attempts this instance has in flight, by endpoint id. */
  inFlight: Readonly<Record<string, number>>
  /** At most this many in flight per key holder, all its endpoints together (unbounded when absent). */
  perOwner?: number
  /** Attempts this instance has in flight, by owner key id. */
  inFlightByOwner?: Readonly<Record<string, number>>
  /**
   * The claim after an attempt ended (a refill): a store may start each endpoint's read past the
   * last delivery it claimed of it since its last claim without this flag, which reads from the
   * start. What a refill leaves behind (a lease that expired, a replay made due) waits for the next
   * such claim: the dispatcher's next poll.
   */
  refill?: boolean
}

/**
 * The refill's claim that an attempt's record may carry (recordAttempt): PostgreSQL runs it in
 * the record's round trip, after the record; a store that does not, or a record written in a batch
 * with others, never asks for it, and the dispatcher refills with claimDue as before.
 */
export interface RefillWithRecord {
  /** The claim, built when the record is sent (null: none is wanted now). A refill: `refill` is true. */
  claim (): DueClaim | null
  /** What that claim took, before recordAttempt resolves; not called when no claim ran. */
  claimed (deliveries: ClaimedDelivery[], claim: DueClaim): void
}

export interface AttemptRecord {
  deliveryId: number
  webhookId: string
  leaseOwner: string
  attempt: number
  /** The claim's (ClaimedDelivery.kind); absent, the list tells it from the delivery, as before kinds were kept. */
  kind?: AttemptKind
  at: number
  outcome: 'succeeded' | 'failed'
  status: number | null
  error: string | null
  durationMs: number
  /** What was sent; null or absent when nothing was (the URL refused before connecting). */
  request?: AttemptRequest | null
  /** What the endpoint answered; null or absent when no answer came. */
  response?: AttemptResponse | null
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
  /**
   * Writes the event and one delivery of it to this endpoint alone; returns the event id.
   * `testType`: the type that delivery sends instead of the event's (its documented example).
   */
  queueTest (id: string, event: EventDraft, now: number, testType?: string): Promise<string>
  /** The role of the endpoint's owner; null when there is no such endpoint. */
  ownerRole (id: string): Promise<Role | null>
  /**
   * Queues again the events of the endpoint's types that its owner may see and the selection
   * names, none that already waits for a delivery to it, within `limits` (oldest first).
   */
  replay (id: string, selection: ReplaySelection, now: number, limits: ReplayLimits): Promise<ReplayResult>
  listDeliveries (id: string, limit: number): Promise<DeliveryEntry[]>
  /** One attempt of the endpoint, with what it sent and what the endpoint answered; null when absent. */
  getAttempt (webhookId: string, attemptId: number): Promise<AttemptDetail | null>
  /**
   * Forgets what up to `max` attempts made before `before` sent and got (request and response),
   * and the bodies of their deliveries that no longer wait and whose last change was before it
   * (a delivery's body goes with its last attempt's details; one settled later by another's
   * success keeps it until its event is pruned). Returns how many attempts it changed (0: none left).
   */
  pruneAttemptDetails (before: number, max: number): Promise<number>

  /**
   * The dispatcher's fan-out: reads the feed after the 'webhooks' cursor (under its lock), adds one
   * delivery per enabled endpoint whose types match and whose owner is live at `now` and may see
   * the event, moves the cursor; returns how many events it read (0: caught up).
   */
  fanOut (now: number, batch: number): Promise<number>
  /**
   * Disables (reason owner_inactive) every enabled endpoint whose owner has no live key at `now`,
   * each with its webhook.disabled event in the same transaction; returns them.
   */
  disableInactiveOwners (now: number, disabledEvent: (webhook: WebhookRecord) => EventDraft): Promise<WebhookRecord[]>
  /**
   * Takes a lease on up to `limit` due deliveries of enabled endpoints whose owner is live at
   * `now`, each endpoint's oldest due first, so that each endpoint has at most `perEndpoint` in
   * flight and each owner at most `perOwner`, counting what this instance holds (`inFlight`,
   * `inFlightByOwner`); a delivery another lease holds is taken only once that lease has expired.
   * The result is in due order. Owners with the fewest attempts in flight go first, so a slot
   * that frees goes to a key holder who waits rather than back to one whose endpoints hang; among
   * equals, endpoints take turns: when the limit runs out, the next claim (of this store) starts
   * with the endpoint after the last one served, in creation order, so endpoints with a backlog
   * never keep the others waiting for good.
   */
  claimDue (claim: DueClaim): Promise<ClaimedDelivery[]>
  /**
   * Records an attempt, what it sent and what it got, and its delivery's new state (the body sent is
   * kept once per delivery, by its first attempt); a success settles every other delivery of
   * the same event to the endpoint that waits (none is sent again). Returns the endpoint when
   * this failure disabled it (see AttemptRecord), else null. With `refill`, the store may run its
   * claim in the same round trip (RefillWithRecord).
   */
  recordAttempt (record: AttemptRecord, refill?: RefillWithRecord): Promise<WebhookRecord | null>
  /** Deliveries waiting for an attempt (enabled endpoints), and the creation time of the oldest. */
  pendingStats (): Promise<{ pending: number; oldestCreatedAt: number | null }>
}
