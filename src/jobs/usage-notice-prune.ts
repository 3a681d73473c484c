// Retention of the usage notices (usage_notices: which quota thresholds and deprecations the usage
// flush announced, per key and UTC day, so each is announced once a day). Only today's rows
// decide anything, and a flush may still add to yesterday's counts for a moment after midnight;
// older days are deleted, in batches like the events' pruning, so the table holds about two days
// of rows per active key instead of growing with every day the shop is open.
import type { KeyStore } from '../accounts/keys.store.ts'
import { utcDay } from '../accounts/keys.rules.ts'
import { DAY_MS } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import { PRUNE_EVERY_MS, pruneInBatches } from './event-prune.ts'
import type { Job } from './runner.ts'

/** Deletes the notices of days before yesterday (UTC); returns how many. */
export async function pruneUsageNotices (deps: { keys: KeyStore; clock: Clock }): Promise<number> {
  const beforeDay = utcDay(deps.clock.now() - DAY_MS)
  return await pruneInBatches((max) => deps.keys.pruneUsageNotices(beforeDay, max))
}

export function usageNoticePruneJob (deps: { keys: KeyStore; clock: Clock }): Job {
  return {
    name: 'usage-notice-prune',
    everyMs: PRUNE_EVERY_MS,
    run: () => pruneUsageNotices(deps),
    failure: 'pruning old usage notices failed; the next run retries'
  }
}
