// The webhook dispatcher (docs/product.md, webhooks): run by the webhook-dispatch job every
// WEBHOOK_POLL_MS and woken at once after this instance queues a test or a replay. One tick fans
// out the new events of the feed into deliveries, then claims the due deliveries this instance
// has room for and starts their attempts without waiting for them: a slow or dead endpoint holds
// only its own slots (at most maxInFlightPerEndpoint), never the tick nor the other endpoints.
import { randomUUID } from 'node:crypto'
import type { StoredEvent } from '../events/events.store.ts'
import type { Clock } from '../shared/clock.ts'
import { telemetry, type WebhookAttemptSpan } from '../telemetry/hooks.ts'
import { attemptDelivery, type AttemptResult } from './attempt.ts'
import { nextAttemptAt } from './schedule.ts'
import { webhookHeaders } from './signature.ts'
import { checkWebhookUrl, URL_REFUSAL_MESSAGES, type Resolve } from './url-guard.ts'
import { disabledEvent } from './webhooks.view.ts'
import type { ClaimedDelivery, WebhookStore } from './webhooks.store.ts'

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
  /** How often the dispatcher looks for new events and due retries (WEBHOOK_POLL_MS, 250). */
  pollMs: number
}

/** An event's `data` as the API shows it (app.ts passes events/render.ts, so a delivery's data is the feed's). */
export type RenderEvent = (event: StoredEvent) => unknown

/** An endpoint failing for this long, every attempt, is disabled (issue 31: 5 days). */
export const DISABLE_AFTER_MS = 5 * 24 * 3_600_000
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
  /** Each attempt's outcome (metrics): succeeded, retrying (failed, another is due) or failed for good. */
  onOutcome?: (outcome: DeliveryOutcome) => void
  log?: { warn (fields: object, message: string): void }
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
}

export function createDispatcher (deps: DispatcherDeps): Dispatcher {
  const { store, clock, settings } = deps
  const render = deps.render ?? ((event: StoredEvent) => event.data)
  const leaseOwner = `${process.pid}-${randomUUID()}`
  const perEndpoint = new Map<string, number>()
  const attempts = new Set<Promise<void>>()
  let running: Promise<void> | null = null
  let again = false
  // The last claim took all the room it had (in all, or an endpoint's share): more may be due,
  // so each attempt that ends asks for the next round at once rather than a poll later (one
  // endpoint got at most its share per poll: 16 deliveries a second at the defaults).
  let saturated = false
  let stopping = false

  async function round (): Promise<void> {
    const fannedAt = clock.now()
    while (await store.fanOut(fannedAt, FAN_OUT_BATCH) === FAN_OUT_BATCH) { /* a backlog: read on */ }
    const room = settings.maxInFlight - attempts.size
    if (room <= 0) { saturated = true; return }
    // The claim's own time, not the round's: a fan-out can take seconds (the cursor's lock, a
    // backlog, a busy database), and a lease counted from before it would expire that much
    // before the attempt's deadline, letting another instance attempt the delivery too; what came
    // due meanwhile is claimed now rather than a round later.
    const now = clock.now()
    const inFlight = Object.fromEntries(perEndpoint)
    const claimed = await store.claimDue({
      now,
      leaseOwner,
      leaseUntil: now + settings.timeoutMs + LEASE_MARGIN_MS,
      limit: room,
      perEndpoint: settings.maxInFlightPerEndpoint,
      inFlight
    })
    for (const delivery of claimed) {
      start(delivery)
      inFlight[delivery.webhookId] = (inFlight[delivery.webhookId] ?? 0) + 1
    }
    // An endpoint at its share when the claim ran may have more due, whether this claim or an
    // earlier one filled it. Counted from what the claim saw, not from perEndpoint now: attempts
    // that ended during the claim lowered that, and a backlog would wait for the poll.
    saturated = claimed.length === room || Object.values(inFlight).some((n) => n >= settings.maxInFlightPerEndpoint)
  }

  function start (delivery: ClaimedDelivery): void {
    perEndpoint.set(delivery.webhookId, (perEndpoint.get(delivery.webhookId) ?? 0) + 1)
    const done = attempt(delivery)
      .catch((error: unknown) => { deps.log?.warn({ err: error, webhookId: delivery.webhookId }, 'a webhook attempt could not be recorded; its lease expires and it is retried') })
      .finally(() => {
        attempts.delete(done)
        const left = (perEndpoint.get(delivery.webhookId) ?? 1) - 1
        if (left === 0) perEndpoint.delete(delivery.webhookId)
        else perEndpoint.set(delivery.webhookId, left)
        if (stopping) return
        // Ended during a round: that round's claim did not count this room, so one more runs.
        if (running !== null) again = true
        else if (saturated) wake()
      })
    attempts.add(done)
  }

  async function attempt (delivery: ClaimedDelivery): Promise<void> {
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
          eventType: delivery.event.type,
          attempt: number
        })
    let result: AttemptResult
    try {
      result = await send(delivery, at, span)
    } catch (error) {
      span?.end({ outcome: 'failed', error: 'internal error' })
      throw error
    }
    span?.end(result)
    const next = result.outcome === 'succeeded' ? null : nextAttemptAt(number, at, settings.retryScheduleMs)
    await store.recordAttempt({
      deliveryId: delivery.id,
      webhookId: delivery.webhookId,
      leaseOwner,
      attempt: number,
      at,
      outcome: result.outcome,
      status: result.status ?? null,
      error: result.error ?? null,
      durationMs: result.durationMs,
      nextAttemptAt: next,
      disableIfFailingSince: at - DISABLE_AFTER_MS,
      disabledEvent: disabledEvent('failing')
    })
    deps.onOutcome?.(result.outcome === 'succeeded' ? 'succeeded' : next === null ? 'failed' : 'retrying')
  }

  /** The URL is checked again at every attempt, and the attempt connects to the address just checked. */
  async function send (
    delivery: ClaimedDelivery,
    at: number,
    span: WebhookAttemptSpan | undefined
  ): Promise<AttemptResult> {
    const check = await checkWebhookUrl(delivery.url, {
      allowedHosts: settings.allowedHosts,
      ...(deps.resolve !== undefined && { resolve: deps.resolve })
    })
    if (!check.ok) return { outcome: 'failed', error: URL_REFUSAL_MESSAGES[check.reason], durationMs: 0 }
    const address = check.addresses[0]!
    if (deps.mayConnect !== undefined && !deps.mayConnect(address.address)) return { outcome: 'failed', error: 'address not reachable from here', durationMs: 0 }
    const { event } = delivery
    const body = JSON.stringify({
      type: event.type,
      timestamp: new Date(event.createdAt).toISOString(),
      data: render(event)
    })
    const signed = webhookHeaders({ id: event.id, timestamp: Math.floor(at / 1000), body, secrets: delivery.secrets })
    if (span === undefined) {
      return await attemptDelivery({ url: check.url, address, headers: signed, body, timeoutMs: settings.timeoutMs })
    }
    // The receiver may join the attempt's trace; the header is not part of the signed content.
    const headers = { ...signed, traceparent: span.traceparent }
    return await span.run(() => attemptDelivery({
      url: check.url,
      address,
      headers,
      body,
      timeoutMs: settings.timeoutMs
    }))
  }

  function tick (): Promise<void> {
    if (running !== null) {
      again = true
      return running
    }
    const current = (async () => {
      try {
        do {
          again = false
          await round()
        } while (again)
      } finally {
        running = null
      }
    })()
    running = current
    return current
  }

  function wake (): void {
    const round = (): void => {
      tick().catch((error: unknown) => { deps.log?.warn({ err: error }, 'a webhook dispatch round failed; the next one retries') })
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
    inFlight: () => attempts.size
  }
}
