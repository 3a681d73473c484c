// Retention of the usage counts: key_usage (each key's requests per UTC day, the usage views and
// the day seed) and deprecated_calls (calls of deprecated operations per key and day, the
// deprecations view). Nothing reads a day older than the longest view, USAGE_DAYS_MAX (90) days
// for usage and DEPRECATION_DAYS (30) for deprecated calls, today included; older days are
// deleted in batches like the events' pruning, so both tables hold a bounded number of days per
// key instead of growing with every day the shop is open.
import type { KeyStore } from '../accounts/keys.store.ts'
import { utcDay } from '../accounts/keys.rules.ts'
import { DEPRECATION_DAYS, USAGE_DAYS_MAX } from '../keys/keys.schema.ts'
import { DAY_MS } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import { PRUNE_EVERY_MS, pruneInBatches } from './event-prune.ts'
import type { Job } from './runner.ts'

/** The first UTC day a view of `days` days (today included) shows at `now`: days before it are pruned. */
export function firstDayKept (now: number, days: number): string {
  return utcDay(now - (days - 1) * DAY_MS)
}

/** Deletes the usage rows and deprecated calls no view shows any more; returns how many rows. */
export async function pruneUsage (deps: { keys: KeyStore; clock: Clock }): Promise<number> {
  const now = deps.clock.now()
  const usage = await pruneInBatches((max) => deps.keys.pruneUsage(firstDayKept(now, USAGE_DAYS_MAX), max))
  const deprecated = await pruneInBatches((max) =>
    deps.keys.pruneDeprecatedCalls(firstDayKept(now, DEPRECATION_DAYS), max))
  return usage + deprecated
}

export function usagePruneJob (deps: { keys: KeyStore; clock: Clock }): Job {
  return {
    name: 'usage-prune',
    everyMs: PRUNE_EVERY_MS,
    run: () => pruneUsage(deps),
    failure: 'pruning old usage counts failed; the next run retries'
  }
}
