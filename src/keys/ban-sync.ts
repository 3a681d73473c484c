// Lifting a ban happens in the database (admin API on any instance, or `petstore keys unban`
// with no server at all); each instance polls for lifts and drops them from its limiter, so a
// lift reaches every instance within one poll interval (2 s), with or without Redis.
import type { RateLimiter } from '../ratelimit/limiter.ts'
import type { KeyStore } from './keys.store.ts'

export const BAN_SYNC_INTERVAL_MS = 2000

export interface BanSync {
  /** One poll: applies the lifts recorded since the last one. */
  tick (): Promise<number>
  start (): void
  stop (): void
}

export function createBanSync (keys: KeyStore, limiter: RateLimiter, options: { onError?: (error: unknown) => void; startAt?: number } = {}): BanSync {
  // Lifted-at times come from whichever instance lifted the ban, so the cursor is the largest
  // lift time seen, not this instance's clock; ids already applied at that time are skipped.
  let since = options.startAt ?? 0
  let seenAtSince = new Set<number>()
  let timer: NodeJS.Timeout | null = null
  let running = false

  async function tick (): Promise<number> {
    const lifted = await keys.bansLiftedSince(since - 1)
    let applied = 0
    for (const ban of lifted) {
      if (ban.liftedAt === null || (ban.liftedAt === since && seenAtSince.has(ban.id))) continue
      const current = (await limiter.peek(ban.subject, { perMinute: 1, perDay: 1 })).ban
      // Only the ban that was lifted: a newer ban of the same subject stays.
      if (current !== null && current.startedAt <= ban.startedAt) {
        await limiter.unban(ban.subject)
        applied++
      }
      if (ban.liftedAt > since) { since = ban.liftedAt; seenAtSince = new Set() }
      seenAtSince.add(ban.id)
    }
    return applied
  }

  return {
    tick,
    start () {
      if (timer !== null) return
      timer = setInterval(() => {
        if (running) return
        running = true
        tick().catch((error: unknown) => options.onError?.(error)).finally(() => { running = false })
      }, BAN_SYNC_INTERVAL_MS)
      timer.unref()
    },
    stop () {
      if (timer !== null) clearInterval(timer)
      timer = null
    }
  }
}

/** The most bans a starting instance loads; the latest ending first. */
export const RESTORED_BANS_MAX = 100_000

/**
 * Loads the bans in force from the database into a limiter whose state lives in the process, so
 * a restart pardons no one. Returns how many were loaded; 0 for back ends that keep their own.
 */
export async function restoreBans (keys: KeyStore, limiter: RateLimiter, now: number): Promise<number> {
  const restore = limiter.restoreBan?.bind(limiter)
  if (restore === undefined) return 0
  const bans = await keys.activeBans(now, RESTORED_BANS_MAX)
  for (const ban of bans) restore(ban.subject, { startedAt: ban.startedAt, until: ban.endsAt })
  return bans.length
}
