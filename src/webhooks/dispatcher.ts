// The webhook dispatcher (docs/product.md, webhooks): run by the webhook-dispatch job every
// WEBHOOK_POLL_MS and woken at once after this instance queues a test or a replay. One tick
// disables the endpoints whose owner has no live key left, fans out the new events of the feed
// into deliveries, then claims the due deliveries this instance has room for and starts their
// attempts without waiting for them: a slow or dead endpoint holds only its own slots (at most
// maxInFlightPerEndpoint) and its key holder's share, never the tick nor the other holders'.
import { randomUUID } from 'node:crypto'
import { exampleOf, isEventType } from '../events/catalogue.ts'
import type { StoredEvent } from '../events/events.store.ts'
import type { Clock } from '../shared/clock.ts'
import { telemetry, type WebhookAttemptSpan } from '../telemetry/hooks.ts'
import { attemptDelivery, type AttemptResult } from './attempt.ts'
import { nextAttemptAt } from './schedule.ts'
import { webhookHeaders } from './signature.ts'
import { checkWebhookUrl, URL_REFUSAL_MESSAGES, type Resolve } from './url-guard.ts'
import { disabledEvent } from './webhooks.view.ts'
import type {
  AttemptRequest, ClaimedDelivery, DisabledReason, DueClaim, WebhookRecord, WebhookStore
} from './webhooks.store.ts'

/** The delivery settings (config.ts reads them from the environment). */
export interface WebhookSettings {
  /** One attempt's whole deadline (WEBHOOK_TIMEOUT_MS, default 10,000). */
  timeoutMs: number
  /** The waits before each retry (WEBHOOK_RETRY_SCHEDULE, default 5s,5m,30m,2h,5h,10h,10h). */
  retryScheduleMs: number[]
  /**
   * Hosts allowed over http or https whatever they resolve to (WEBHOOK_ALLOWED_HOSTS, none by
   * default): development and tests.
   */
  allowedHosts: string[]
  /**
   * Attempts in flight per instance, in all and per endpoint (WEBHOOK_MAX_IN_FLIGHT 64,
   * WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT 4).
   */
  maxInFlight: number
  maxInFlightPerEndpoint: number
  /**
   * Attempts in flight per instance for one key holder's endpoints together; ownerShare's default
   * (a quarter of maxInFlight) when absent.
   */
  maxInFlightPerOwner?: number
  /** How often the dispatcher looks for new events and due retries (WEBHOOK_POLL_MS, 250). */
  pollMs: number
}

/**
 * An event's `data` as the API shows it (webhooks.feature.ts passes events/render.ts's, so a
 * delivery's data is the feed's).
 */
export type RenderEvent = (event: StoredEvent) => unknown

/** An endpoint failing for this long, every attempt, is disabled (issue 31: 5 days). */
export const DISABLE_AFTER_MS = 5 * 24 * 3_600_000
/** At most one warn line a minute per endpoint for its failed attempts; the next says how many it left out. */
export const FAILURE_LOG_INTERVAL_MS = 60_000
/** Events read from the feed per fan-out round. */
const FAN_OUT_BATCH = 500
/**
 * A lease outlives the attempt's deadline by this much: another instance takes the delivery only
 * once it is surely abandoned.
 */
const LEASE_MARGIN_MS = 5_000
/**
 * How long a stop waits for attempts in flight; past it their leases expire and another instance
 * (or the next start) retries.
 */
const DRAIN_MS = 2_000

export type DeliveryOutcome = 'succeeded' | 'retrying' | 'failed'

/** What a record's refill claimed (RefillWithRecord), and the claim it ran. */
interface Refilled { deliveries: ClaimedDelivery[]; claim: DueClaim }

/** An attempt's result with what was sent (null: nothing, the URL was refused before connecting). */
type SentAttempt = AttemptResult & { request: AttemptRequest | null }

/**
 * A key holder's share of an instance's attempts in flight (issue 48 finding 2): a quarter of
 * them (16 of 64), and never less than one endpoint's, so that the endpoints of three holders
 * that never answer still leave a quarter of the slots to everyone else, and the claim serves
 * the holders with the fewest in flight first as slots free (webhooks.store.ts, claimDue).
 */
export function ownerShare (settings: WebhookSettings): number {
  return settings.maxInFlightPerOwner ?? Math.max(settings.maxInFlightPerEndpoint, Math.floor(settings.maxInFlight / 4))
}

/**
 * What a test of another type than webhook.test sends as `data`: that type's documented example
 * (events/catalogue.ts), as GET /v1/event_types shows it. A type dropped from the catalogue since
 * the test was queued sends none.
 */
const testData = (type: string): unknown => isEventType(type) ? exampleOf(type) : null

export interface DispatcherDeps {
  store: WebhookStore
  clock: Clock
  settings: WebhookSettings
  render?: RenderEvent
  /** The resolver the URL guard asks at every attempt (tests stub it). */
  resolve?: Resolve
  /**
   * Whether an attempt may connect to this address (all by default). Tests pass one that allows
   * only loopback: a test never sends traffic off this machine, whatever URL it subscribes.
   */
  mayConnect?: (address: string) => boolean
  /** Counts each attempt's outcome (ops/metrics.ts): succeeded, retrying (another is due) or failed for good. */
  metrics?: { onWebhookOutcome (outcome: DeliveryOutcome): void }
  log?: {
    warn (fields: object, message: string): void
    info (fields: object, message: string): void
  }
}

export interface Dispatcher {
  /** One round: fan-out, then claim and start attempts. Never waits for an attempt. */
  tick (): Promise<void>
  /** Asks for a round as soon as possible (after a test or replay this instance queued). */
  wake (): void
  /** Waits, up to a bound, for the attempts in flight. */
  drain (): Promise<void>
  /** Attempts in flight on this instance. */
  inFlight (): number
  /**
   * Forgets what attempts made before `before` sent and got (jobs/attempt-prune.ts), up to `max`
   * rows; returns how many it changed.
   */
  pruneAttemptDetails (before: number, max: number): Promise<number>
}

export function createDispatcher (deps: DispatcherDeps): Dispatcher {
  const { store, clock, settings } = deps
  const render = deps.render ?? ((event: StoredEvent) => event.data)
  const leaseOwner = `${process.pid}-${randomUUID()}`
  const perOwnerShare = ownerShare(settings)
  const perEndpoint = new Map<string, number>()
  const perOwner = new Map<number, number>()
  // Failures logged per endpoint: when the last line was written, and how many failed since.
  const failures = new Map<string, { loggedAt: number; suppressed: number }>()
  let failuresSweptAt = 0
  const attempts = new Set<Promise<void>>()
  let running: Promise<void> | null = null
  let again = false
  // A full round (the poll's, a wake's) is asked for: the next round fans out first. A round
  // asked for by an attempt that ended (a refill) only claims: the fan-out and the check of
  // inactive owners run each poll, and doing them for every delivery of a backlog made a round of
  // five statements per delivery (PostgreSQL: 250 deliveries a second, docs/performance.md).
  let fullPending = false
  // The last claim took all the room it had (in all, or an endpoint's share): more may be due,
  // so each attempt that ends asks for the next round at once rather than a poll later (one
  // endpoint got at most its share per poll: 16 deliveries a second at the defaults).
  let saturated = false
  let stopping = false

  async function round (full: boolean): Promise<void> {
    if (full) {
      const fannedAt = clock.now()
      // Before the fan-out and the claim (which skip such endpoints too), so that the endpoint
      // says why it gets nothing.
      for (const webhook of await store.disableInactiveOwners(fannedAt, disabledEvent('owner_inactive'))) {
        logDisabled(webhook, 'owner_inactive')
      }
      while (await store.fanOut(fannedAt, FAN_OUT_BATCH) === FAN_OUT_BATCH) { /* a backlog: read on */ }
    }
    const room = settings.maxInFlight - attempts.size
    if (room <= 0) { saturated = true; return }
    const claim = claimFor(room, !full, null)
    startClaimed(await store.claimDue(claim), claim)
  }

  /**
   * A claim of up to `room` deliveries, counting what is in flight now, less `ending` (the attempt
   * whose record carries this claim: its slot is the one refilled). Its own time, not the round's:
   * a fan-out can take seconds (the cursor's lock, a backlog, a busy database), and a lease
   * counted from before it would expire that much before the attempt's deadline, letting another
   * instance attempt the delivery too; what came due meanwhile is claimed now rather than a round
   * later.
   */
  function claimFor (room: number, refill: boolean, ending: ClaimedDelivery | null): DueClaim {
    const now = clock.now()
    const inFlight = Object.fromEntries(perEndpoint)
    const inFlightByOwner = Object.fromEntries(perOwner)
    if (ending !== null) {
      inFlight[ending.webhookId] = (inFlight[ending.webhookId] ?? 1) - 1
      inFlightByOwner[ending.ownerKeyId] = (inFlightByOwner[ending.ownerKeyId] ?? 1) - 1
    }
    return {
      now,
      leaseOwner,
      leaseUntil: now + settings.timeoutMs + LEASE_MARGIN_MS,
      limit: room,
      perEndpoint: settings.maxInFlightPerEndpoint,
      inFlight,
      perOwner: perOwnerShare,
      inFlightByOwner,
      refill
    }
  }

  /** Starts what `claim` took, and says whether more may be due now (saturated). */
  function startClaimed (claimed: ClaimedDelivery[], claim: DueClaim): void {
    const inFlight = { ...claim.inFlight }
    const inFlightByOwner: Record<string, number> = { ...claim.inFlightByOwner }
    for (const delivery of claimed) {
      start(delivery)
      inFlight[delivery.webhookId] = (inFlight[delivery.webhookId] ?? 0) + 1
      inFlightByOwner[delivery.ownerKeyId] = (inFlightByOwner[delivery.ownerKeyId] ?? 0) + 1
    }
    // An endpoint or a key holder at its share when the claim ran may have more due, whether this
    // claim or an earlier one filled it. Counted from what the claim saw, not from the maps now:
    // attempts that ended during the claim lowered those, and a backlog would wait for the poll.
    saturated = claimed.length === claim.limit
      || Object.values(inFlight).some((n) => n >= settings.maxInFlightPerEndpoint)
      || Object.values(inFlightByOwner).some((n) => n >= perOwnerShare)
  }

  function logDisabled (webhook: WebhookRecord, reason: DisabledReason): void {
    deps.log?.info({ webhookId: webhook.id, ownerKeyId: webhook.ownerKeyId, reason }, 'a webhook endpoint was disabled')
  }

  /**
   * A warn line for a failed attempt, at most one per endpoint each FAILURE_LOG_INTERVAL_MS: an
   * endpoint that is down fails every attempt, and a line each would drown the log. The next
   * line says how many failures were not logged since the last (`suppressed`).
   */
  function logFailure (
    delivery: ClaimedDelivery,
    attempt: number,
    result: AttemptResult,
    next: number | null,
    at: number
  ): void {
    const seen = failures.get(delivery.webhookId)
    if (seen !== undefined && at - seen.loggedAt < FAILURE_LOG_INTERVAL_MS) {
      seen.suppressed++
      return
    }
    failures.set(delivery.webhookId, { loggedAt: at, suppressed: 0 })
    const fields = {
      webhookId: delivery.webhookId,
      eventId: delivery.event.id,
      type: delivery.testType ?? delivery.event.type,
      attempt,
      status: result.status ?? null,
      error: result.error ?? null,
      nextAttemptAt: next === null ? null : new Date(next).toISOString(),
      suppressed: seen?.suppressed ?? 0
    }
    deps.log?.warn(fields, next === null
      ? 'a webhook attempt failed, the last of its schedule: replay or recover it'
      : 'a webhook attempt failed; it is retried')
    // At most once an interval, the endpoints quiet for a whole one are forgotten (and those whose
    // count of failures left out has waited an hour for a next failure), so the map holds only
    // the endpoints failing now.
    if (at - failuresSweptAt >= FAILURE_LOG_INTERVAL_MS) {
      failuresSweptAt = at
      for (const [id, entry] of failures) {
        const quiet = at - entry.loggedAt
        if (quiet >= (entry.suppressed === 0 ? 1 : 60) * FAILURE_LOG_INTERVAL_MS) failures.delete(id)
      }
    }
  }

  function start (delivery: ClaimedDelivery): void {
    perEndpoint.set(delivery.webhookId, (perEndpoint.get(delivery.webhookId) ?? 0) + 1)
    perOwner.set(delivery.ownerKeyId, (perOwner.get(delivery.ownerKeyId) ?? 0) + 1)
    const done = attempt(delivery)
      .catch((error: unknown) => {
        deps.log?.warn({ err: error, webhookId: delivery.webhookId }, 'a webhook attempt could not be recorded; its lease expires and it is retried')
        return null
      })
      .then((refilled) => {
        attempts.delete(done)
        release(perEndpoint, delivery.webhookId)
        release(perOwner, delivery.ownerKeyId)
        // What a stop meets claimed is left to its lease, as an attempt the drain cuts short.
        if (stopping) return
        // The record's round trip refilled this slot: every other claim meanwhile counted it as
        // taken, so nothing is left to claim for it.
        if (refilled !== null) startClaimed(refilled.deliveries, refilled.claim)
        // Ended during a round: that round's claim did not count this room, so one more runs
        // (a claim only, unless a full round was asked for meanwhile).
        else if (running !== null) again = true
        else if (saturated) later(false)
      })
    attempts.add(done)
  }

  /** One attempt fewer in flight for `key`; a key with none left goes from the map. */
  function release<K> (counts: Map<K, number>, key: K): void {
    const left = (counts.get(key) ?? 1) - 1
    if (left === 0) counts.delete(key)
    else counts.set(key, left)
  }

  /** One attempt and its record; what the record's refill claimed, or null when none ran. */
  async function attempt (delivery: ClaimedDelivery): Promise<Refilled | null> {
    const at = clock.now()
    const number = delivery.attempts + 1
    // With tracing on, the attempt is a span (telemetry/webhook-span.ts); off, nothing is allocated.
    const tracing = telemetry.webhooks
    const span = tracing === null
      ? undefined
      : tracing.startAttempt({
          url: delivery.url,
          webhookId: delivery.webhookId,
          deliveryId: delivery.id,
          eventId: delivery.event.id,
          eventType: delivery.testType ?? delivery.event.type,
          attempt: number
        })
    let result: SentAttempt
    try {
      result = await send(delivery, at, span)
    } catch (error) {
      span?.end({ outcome: 'failed', error: 'internal error' })
      throw error
    }
    span?.end(result)
    const next = result.outcome === 'succeeded' ? null : nextAttemptAt(number, at, settings.retryScheduleMs)
    let refilled: Refilled | null = null
    const disabled = await store.recordAttempt({
      deliveryId: delivery.id,
      webhookId: delivery.webhookId,
      leaseOwner,
      attempt: number,
      kind: delivery.kind,
      at,
      outcome: result.outcome,
      status: result.status ?? null,
      error: result.error ?? null,
      durationMs: result.durationMs,
      request: result.request,
      response: result.response ?? null,
      nextAttemptAt: next,
      disableIfFailingSince: at - DISABLE_AFTER_MS,
      disabledEvent: disabledEvent('failing')
    }, {
      // The claim the attempt's end would run next (below, in start), made with the record where
      // the store can (PostgreSQL: one round trip for both): only when a refill would follow.
      // Its room counts this attempt's slot free: one at least.
      claim: () => stopping || !saturated ? null : claimFor(settings.maxInFlight - attempts.size + 1, true, delivery),
      claimed: (deliveries, claim) => { refilled = { deliveries, claim } }
    })
    if (result.outcome === 'succeeded') failures.delete(delivery.webhookId)
    else logFailure(delivery, number, result, next, at)
    if (disabled !== null) logDisabled(disabled, 'failing')
    deps.metrics?.onWebhookOutcome(result.outcome === 'succeeded' ? 'succeeded' : next === null ? 'failed' : 'retrying')
    return refilled
  }

  /** The body of a delivery: the one its earlier attempts sent, else rendered now from its event. */
  function bodyOf (delivery: ClaimedDelivery): string {
    if (delivery.requestBody !== null) return delivery.requestBody
    const { event } = delivery
    // The id too (Standard Webhooks allows more fields than three): a receiver that stores the
    // body keeps the event's id, the feed's and the webhook-id header's.
    return JSON.stringify({
      id: event.id,
      type: delivery.testType ?? event.type,
      timestamp: new Date(event.createdAt).toISOString(),
      data: delivery.testType === null ? render(event) : testData(delivery.testType)
    })
  }

  /**
   * The URL is checked again at every attempt, and the attempt connects to the address just
   * checked. What was sent comes back with the result (null when the URL was refused: nothing was).
   */
  async function send (
    delivery: ClaimedDelivery,
    at: number,
    span: WebhookAttemptSpan | undefined
  ): Promise<SentAttempt> {
    const check = await checkWebhookUrl(delivery.url, {
      allowedHosts: settings.allowedHosts,
      ...(deps.resolve !== undefined && { resolve: deps.resolve })
    })
    if (!check.ok) return { outcome: 'failed', error: URL_REFUSAL_MESSAGES[check.reason], durationMs: 0, request: null }
    const address = check.addresses[0]!
    if (deps.mayConnect !== undefined && !deps.mayConnect(address.address)) {
      return { outcome: 'failed', error: 'address not reachable from here', durationMs: 0, request: null }
    }
    const body = bodyOf(delivery)
    const timestamp = Math.floor(at / 1000)
    const signed = webhookHeaders({ id: delivery.event.id, timestamp, body, secrets: delivery.secrets })
    // The receiver may join the attempt's trace; the header is not part of the signed content.
    const headers = span === undefined ? signed : { ...signed, traceparent: span.traceparent }
    const input = { url: check.url, address, headers, body, timeoutMs: settings.timeoutMs }
    const result = span === undefined ? await attemptDelivery(input) : await span.run(() => attemptDelivery(input))
    const request: AttemptRequest | null = result.requestHeaders === undefined
      ? null
      : { url: check.url.href, headers: result.requestHeaders, body }
    return { ...result, request }
  }

  /** A round now: a full one (fan-out first), or a claim only; while one runs, the next after it. */
  function run (full: boolean): Promise<void> {
    if (full) fullPending = true
    if (running !== null) {
      again = true
      return running
    }
    const current = (async () => {
      try {
        do {
          again = false
          const fanOut = fullPending
          fullPending = false
          await round(fanOut)
        } while (again)
      } finally {
        running = null
      }
    })()
    running = current
    return current
  }

  function tick (): Promise<void> {
    return run(true)
  }

  function wake (): void {
    later(true)
  }

  /** A round in a turn of its own (not the caller's, nor its trace). */
  function later (full: boolean): void {
    const round = (): void => {
      run(full).catch((error: unknown) => { deps.log?.warn({ err: error }, 'a webhook dispatch round failed; the next one retries') })
    }
    // The request that woke the dispatcher does not own its round: with tracing on, the round
    // runs outside that request's trace (its storage work would otherwise show under it).
    const tracing = telemetry.webhooks
    const timer = setTimeout(tracing === null ? round : () => { tracing.detached(round) }, 0)
    timer.unref()
  }

  return {
    tick,
    wake,
    async drain () {
      stopping = true
      if (running !== null) await running.catch(() => {})
      let timer: NodeJS.Timeout | undefined
      const bound = new Promise<void>((resolve) => { timer = setTimeout(resolve, DRAIN_MS); timer.unref() })
      await Promise.race([Promise.all(attempts), bound])
      clearTimeout(timer)
    },
    inFlight: () => attempts.size,
    pruneAttemptDetails: (before, max) => store.pruneAttemptDetails(before, max)
  }
}
