// Retention of what webhook attempts sent and got (issue 50, docs/product.md 13.9): every
// PRUNE_EVERY_MS, the request (URL, headers, body) and the response (headers, the first 4 KiB of
// its body) of the attempts made more than ATTEMPT_DETAILS_KEPT_DAYS ago are removed, in the event
// prune's bounded batches. The attempt's line (time, kind, status, error, duration) stays until
// its event is pruned (EVENT_RETENTION_DAYS), which takes the deliveries and attempts with it.
// Every instance prunes; a row is changed once (the database decides).
import type { Clock } from '../shared/clock.ts'
import { ATTEMPT_DETAILS_KEPT_MS } from '../webhooks/attempt.ts'
import type { Dispatcher } from '../webhooks/dispatcher.ts'
import { PRUNE_EVERY_MS, pruneInBatches } from './event-prune.ts'
import type { Job } from './runner.ts'

export interface AttemptPruneDeps {
  dispatcher: Pick<Dispatcher, 'pruneAttemptDetails'>
  clock: Clock
}

/** Removes the details of the attempts past ATTEMPT_DETAILS_KEPT_DAYS; returns how many rows it changed. */
export async function pruneAttemptDetails (deps: AttemptPruneDeps): Promise<number> {
  const before = deps.clock.now() - ATTEMPT_DETAILS_KEPT_MS
  return await pruneInBatches((max) => deps.dispatcher.pruneAttemptDetails(before, max))
}

export function attemptPruneJob (deps: AttemptPruneDeps): Job {
  return {
    name: 'webhook-attempt-prune',
    everyMs: PRUNE_EVERY_MS,
    run: () => pruneAttemptDetails(deps),
    failure: 'pruning old webhook attempt details failed; the next run retries'
  }
}
