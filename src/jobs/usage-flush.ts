// The usage flush (access/usage.ts): the counts per key and day, and each key's last use, written
// every USAGE_FLUSH_INTERVAL_MS, and once more at close, before server.ts closes the stores.
import { USAGE_FLUSH_INTERVAL_MS, type UsageRecorder } from '../access/usage.ts'
import type { Job } from './runner.ts'

/** usageFlushMs: 0 for no timer (tests flush on demand and at close). */
export function usageFlushJob (deps: { usage: UsageRecorder; usageFlushMs?: number | undefined }): Job {
  return {
    name: 'usage-flush',
    everyMs: deps.usageFlushMs ?? USAGE_FLUSH_INTERVAL_MS,
    run: () => deps.usage.flush(),
    atStop: true,
    // A failed flush keeps its counts (access/usage.ts).
    failure: 'usage flush failed; its counts are kept for the next one'
  }
}
