// The poll for bans lifted elsewhere (access/ban-sync.ts), every BAN_SYNC_INTERVAL_MS. It has no
// run at start: server.ts restores the bans in force before the app is ready (restoreBans), and
// a start that cannot read them fails.
import { createBanSync } from '../access/ban-sync.ts'
import type { KeyStore } from '../accounts/keys.store.ts'
import type { RateLimiter } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import type { Job } from './runner.ts'

/**
 * banSyncMs: server.ts gives BAN_SYNC_INTERVAL_MS; absent or 0, no poll (an app built alone
 * restored no bans: tests).
 */
export function banSyncJob (deps: { keys: KeyStore; limiter: RateLimiter; clock: Clock; banSyncMs?: number }): Job {
  const sync = createBanSync(deps.keys, deps.limiter, { now: deps.clock.now })
  return { name: 'ban-sync', everyMs: deps.banSyncMs ?? 0, run: () => sync.tick(), failure: 'ban sync failed' }
}
