// Webhooks as app.ts registers them: the dispatcher that delivers the event feed to the endpoints,
// the endpoint service (a test or a replay it queues wakes the dispatcher), and the routes. The
// dispatcher is handed on to the webhook-dispatch job (jobs/webhook-dispatch.ts), which runs it.
import type { StoredEvent } from '../events/events.store.ts'
import { renderEvent } from '../events/render.ts'
import type { Feature } from '../routing/feature.ts'
import type { Clock } from '../shared/clock.ts'
import { createDispatcher, type Dispatcher, type DispatcherDeps, type RenderEvent, type WebhookSettings } from './dispatcher.ts'
import type { Resolve } from './url-guard.ts'
import { webhookRoutes } from './webhooks.routes.ts'
import { createWebhookService } from './webhooks.service.ts'
import type { WebhookStore } from './webhooks.store.ts'

/** What webhooks report to the metrics (ops/metrics.ts): each attempt's outcome, and the backlog at each scrape. */
export interface WebhookMetrics extends NonNullable<DispatcherDeps['metrics']> {
  trackWebhooks (stats: () => Promise<{ pending: number; oldestCreatedAt: number | null }>, clock: Clock): void
}

export interface WebhooksShared {
  clock: Clock
  /** WEBHOOK_* (config.ts). */
  settings: WebhookSettings
  log: NonNullable<DispatcherDeps['log']>
  metrics: WebhookMetrics
  /** The resolver URLs are checked with, at creation and at every attempt; the system's when absent (tests stub it). */
  resolve?: Resolve | undefined
  /** Which addresses an attempt may connect to; all when absent (tests allow loopback only). */
  mayConnect?: ((address: string) => boolean) | undefined
  /** An event's data as a delivery shows it; the feed's when absent. */
  render?: RenderEvent | undefined
}

/** A delivery's data is the feed's: what GET /v1/events shows of the event (events/render.ts). */
const feedData: RenderEvent = (event: StoredEvent) => renderEvent(event).data

export function webhooksFeature (store: WebhookStore, shared: WebhooksShared): Feature & { dispatcher: Dispatcher } {
  const { clock, settings, metrics } = shared
  const resolve = shared.resolve === undefined ? {} : { resolve: shared.resolve }
  const mayConnect = shared.mayConnect === undefined ? {} : { mayConnect: shared.mayConnect }
  const dispatcher = createDispatcher({
    store, clock, settings, log: shared.log, metrics, render: shared.render ?? feedData, ...resolve, ...mayConnect
  })
  const webhooks = createWebhookService(store, clock, {
    allowedHosts: settings.allowedHosts,
    onQueued: () => { dispatcher.wake() },
    log: shared.log,
    ...resolve
  })
  metrics.trackWebhooks(() => store.pendingStats(), clock)
  return { dispatcher, routes: async (v1) => { await v1.register(webhookRoutes, { webhooks }) } }
}
