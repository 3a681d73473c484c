// The ban sync (access/ban-sync.ts), two jobs. At start, the bans in force are loaded from the
// database into the limiter (restoreBans): with in-process counters a restart would otherwise
// pardon every banned caller. The runner waits for it before the app is ready, so before the
// first request, and a start that cannot read them fails rather than serve. Then, every
// BAN_SYNC_INTERVAL_MS, the poll drops the bans lifted elsewhere. Only an app given banSyncMs
// (server.ts) does either: an app built alone (tests) restores no bans and polls for no lifts.
import { createBanSync, restoreBans } from '../access/ban-sync.ts'
import type { KeyStore } from '../accounts/keys.store.ts'
import type { RateLimiter } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import type { Job } from './runner.ts'

export interface BanSyncDeps {
  keys: KeyStore
  limiter: RateLimiter
  clock: Clock
  /** server.ts gives BAN_SYNC_INTERVAL_MS; absent or 0: no restore and no poll. */
  banSyncMs?: number | undefined
  log?: { info (fields: object, message: string): void }
}

/** The load of the bans in force, once, as the app becomes ready. */
export function banRestoreJob (deps: BanSyncDeps): Job {
  const { keys, limiter, clock } = deps
  return {
    name: 'ban-restore',
    everyMs: 0,
    atStart: (deps.banSyncMs ?? 0) > 0,
    failStartOnError: true,
    run: async () => {
      const bans = await restoreBans(keys, limiter, clock.now())
      if (bans > 0) deps.log?.info({ bans }, 'bans in force restored from the database')
    },
    failure: 'the bans in force could not be restored from the database; the start fails'
  }
}

/** The poll for lifts; its first run comes an interval after the restore started. */
export function banSyncJob (deps: BanSyncDeps): Job {
  const sync = createBanSync(deps.keys, deps.limiter, { now: deps.clock.now })
  return { name: 'ban-sync', everyMs: deps.banSyncMs ?? 0, run: () => sync.tick(), failure: 'ban sync failed' }
}
