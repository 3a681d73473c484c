// The app's background jobs, declared in one list like the installation steps of app.ts: each
// job's module says its name, its interval and what it needs, and takes it from JobDeps. Adding
// a job is its module and one line below. They start when the app is ready and stop when it
// closes (runner.ts), so a test app built by buildApp runs them as the server does.
import type { FastifyInstance } from 'fastify'
import type { UsageRecorder } from '../access/usage.ts'
import type { KeyStore } from '../accounts/keys.store.ts'
import type { EventStore } from '../events/events.store.ts'
import type { OrderService } from '../orders/orders.service.ts'
import type { RateLimiter } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import { banRestoreJob, banSyncJob } from './ban-sync.ts'
import { eventPruneJob } from './event-prune.ts'
import { keyExpiringJob } from './key-expiring.ts'
import { keyRequestJobs, type KeyRequestJobDeps } from './key-requests-prune.ts'
import { orderSweepJob } from './order-sweep.ts'
import { portalSessionsPruneJob, type PortalSessionsPruneDeps } from './portal-sessions-prune.ts'
import { createJobRunner, type Job, type JobEvents, type JobTimers } from './runner.ts'
import { usageFlushJob } from './usage-flush.ts'
import { usageNoticePruneJob } from './usage-notice-prune.ts'
import { usagePruneJob } from './usage-prune.ts'
import { webhookJobs } from './webhook-dispatch.ts'
import type { Dispatcher } from '../webhooks/dispatcher.ts'

/** Everything a job may need, built by buildApp; each job's module picks its part. */
export interface JobDeps {
  keys: KeyStore
  limiter: RateLimiter
  clock: Clock
  usage: UsageRecorder
  orders: OrderService
  events: EventStore
  /** How long events are kept (EVENT_RETENTION_DAYS, in days). */
  eventRetentionDays: number
  /** How often the ban sync polls, after restoring the bans at start (AppDeps.banSyncMs); neither when absent. */
  banSyncMs?: number | undefined
  /** How often usage is flushed (AppDeps.usageFlushMs); 0: at close only. */
  usageFlushMs?: number | undefined
  /** Webhook deliveries (webhooks/dispatcher.ts) and how often it looks for work (WEBHOOK_POLL_MS). */
  dispatcher: Dispatcher
  webhookPollMs: number
  /** The app's logger: what a job reports besides its failures (the bans restored). */
  log: { info (fields: object, message: string): void }
  /** The request log's recorder (null: REQUEST_LOG=off), its store and flush interval (key-requests-prune.ts). */
  requestLog: KeyRequestJobDeps['requestLog']
  keyRequests: KeyRequestJobDeps['keyRequests']
  requestLogFlushMs?: number | undefined
  /** The partner portal's sessions and links (portal-sessions-prune.ts). */
  portalSessions: PortalSessionsPruneDeps['portalSessions']
}

export function backgroundJobs (deps: JobDeps): Job[] {
  return [
    banRestoreJob(deps),
    banSyncJob(deps),
    usageFlushJob(deps),
    orderSweepJob(deps),
    eventPruneJob(deps),
    keyExpiringJob(deps),
    usageNoticePruneJob(deps),
    usagePruneJob(deps),
    ...webhookJobs(deps),
    ...keyRequestJobs(deps),
    portalSessionsPruneJob(deps)
  ]
}

/**
 * Runs `jobs` from the app's ready (before it listens: the order sweep's first run is done before
 * the first request) to its close (before server.ts closes the stores: the usage flush at stop
 * reaches the database). Failures are logged through the app's logger and counted by `events`.
 */
export function installJobs (
  app: FastifyInstance,
  jobs: readonly Job[],
  options: { events?: JobEvents; timers?: JobTimers } = {}
): void {
  const runner = createJobRunner(jobs, { log: app.log, ...options })
  app.addHook('onReady', async () => { await runner.start() })
  app.addHook('onClose', async () => { await runner.stop() })
}
