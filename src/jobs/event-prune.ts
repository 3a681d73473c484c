// Retention of events (EVENT_RETENTION_DAYS): every PRUNE_EVERY_MS, delete the events older than
// the retention, in batches of PRUNE_BATCH, at most PRUNE_BATCHES_PER_RUN a run, so one run never
// holds the writer (SQLite) or a long transaction (PostgreSQL): a backlog is worked off over the
// next runs. Every instance prunes; each event is deleted once (the database decides).
import type { EventStore } from '../events/events.store.ts'
import { DAY_MS } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import type { Job } from './runner.ts'

export const PRUNE_EVERY_MS = 10 * 60_000
export const PRUNE_BATCH = 1000
export const PRUNE_BATCHES_PER_RUN = 20

/**
 * Runs `batch` (deleting at most PRUNE_BATCH) until one comes back short or the run's bound;
 * returns how many it deleted.
 */
export async function pruneInBatches (batch: (max: number) => Promise<number>): Promise<number> {
  let deleted = 0
  for (let i = 0; i < PRUNE_BATCHES_PER_RUN; i++) {
    const n = await batch(PRUNE_BATCH)
    deleted += n
    if (n < PRUNE_BATCH) break
  }
  return deleted
}

/** Deletes the events past retention; returns how many. */
export async function pruneEvents (
  deps: { events: EventStore; clock: Clock; eventRetentionDays: number }
): Promise<number> {
  const before = deps.clock.now() - deps.eventRetentionDays * DAY_MS
  return await pruneInBatches((max) => deps.events.pruneEvents(before, max))
}

export function eventPruneJob (deps: { events: EventStore; clock: Clock; eventRetentionDays: number }): Job {
  return {
    name: 'event-prune',
    everyMs: PRUNE_EVERY_MS,
    run: () => pruneEvents(deps),
    failure: 'pruning old events failed; the next run retries'
  }
}
