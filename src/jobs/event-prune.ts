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

/** Deletes what is past retention, batch after batch, until a batch comes back short or the run's bound; returns how many. */
export async function pruneEvents (deps: { events: EventStore; clock: Clock; eventRetentionDays: number }): Promise<number> {
  const before = deps.clock.now() - deps.eventRetentionDays * DAY_MS
  let deleted = 0
  for (let batch = 0; batch < PRUNE_BATCHES_PER_RUN; batch++) {
    const n = await deps.events.pruneEvents(before, PRUNE_BATCH)
    deleted += n
    if (n < PRUNE_BATCH) break
  }
  return deleted
}

export function eventPruneJob (deps: { events: EventStore; clock: Clock; eventRetentionDays: number }): Job {
  return {
    name: 'event-prune',
    everyMs: PRUNE_EVERY_MS,
    run: () => pruneEvents(deps),
    failure: 'pruning old events failed; the next run retries'
  }
}
