// Lifting a ban happens in the database (admin API on any instance, or `petstore keys unban`
// with no server at all); each instance polls for lifts and drops them from its limiter, so a
// lift reaches every instance within one poll interval (2 s), with or without Redis. The poll
// runs as the ban-sync job (jobs/ban-sync.ts).
//
// The poll keeps no cursor on lift times: a lift time comes from the clock of whichever process
// lifted the ban, and a lift may commit after a later one, so a cursor moved to the largest time
// seen would skip a lift that commits late or comes from a slower clock. Each poll reads again
// every lift whose ban would still be running (ends_at after now, lifted within the longest ban
// plus a margin for clocks that disagree), and skips the ones it applied already (by id). The set
// read is bounded by the bans lifted in the last 25 hours.
import type { RateLimiter } from '../ratelimit/limiter.ts'
import { BAN_ESCALATION_MS, BAN_MAX_MS } from '../ratelimit/limiter.ts'
import type { KeyStore } from '../accounts/keys.store.ts'

export const BAN_SYNC_INTERVAL_MS = 2000
/** How far back a poll looks at lift times: the longest ban, plus this margin for clocks that disagree. */
export const LIFT_LOOKBACK_MS = BAN_MAX_MS + 60 * 60_000

export interface BanSync {
  /** One poll: applies the lifts not applied yet; resolves to how many bans it dropped from the limiter. */
  tick (): Promise<number>
}

export interface BanSyncOptions {
  /** Epoch ms (the limiter's clock); Date.now by default. */
  now?: () => number
  /** Ignored (the poll keeps no cursor, see above); accepted so callers need not change. */
  startAt?: number
}

export function createBanSync (keys: KeyStore, limiter: RateLimiter, options: BanSyncOptions = {}): BanSync {
  const now = options.now ?? Date.now
  /** The lifts applied already, by ban id, with the ban's end (dropped once it has passed). */
  const applied = new Map<number, number>()

  async function tick (): Promise<number> {
    const t = now()
    // Bans in force wherever the limiter is: after Redis lost its state, or a fall-back to
    // in-process counters, the bans in the database are put back (and every lift is checked again).
    if (limiter.needsBans !== undefined && await limiter.needsBans()) {
      await loadBans(keys, limiter, t)
      applied.clear()
    }
    for (const [id, endsAt] of applied) if (endsAt <= t) applied.delete(id)
    const lifted = await keys.bansLiftedSince(t - LIFT_LOOKBACK_MS, t)
    let dropped = 0
    // The store should give lifted bans that end after t only (KeyStore.bansLiftedSince); a store
    // that breaks that contract (a lifted_at read as null, a filter dropped in a query) must not
    // make this poll end a ban nobody lifted: each ban is checked again here.
    for (const ban of lifted) {
      if (ban.liftedAt === null || ban.endsAt <= t || applied.has(ban.id)) continue
      const current = (await limiter.peek(ban.subject, { perMinute: 1, perDay: 1 })).ban
      // Only the ban that was lifted: a newer ban of the same subject stays.
      if (current !== null && current.startedAt <= ban.startedAt) {
        await limiter.unban(ban.subject)
        dropped++
      }
      applied.set(ban.id, ban.endsAt)
    }
    return dropped
  }

  return { tick }
}

/** The most bans a starting instance loads; the latest ending first. */
export const RESTORED_BANS_MAX = 100_000

/**
 * Loads the bans in force from the database into the limiter (memory, and Redis too), so a
 * restart pardons no one. Returns how many were loaded; 0 for a limiter that cannot take them.
 */
export async function restoreBans (keys: KeyStore, limiter: RateLimiter, now: number): Promise<number> {
  // Claims the load (the Redis sentinel), so that the first poll does not load them again; a
  // failure to claim it only means that poll loads them again.
  await limiter.needsBans?.().catch(() => {})
  return loadBans(keys, limiter, now)
}

/**
 * Puts back the bans in force, and the history of the last 24 hours (bans ended or lifted), from
 * which a subject's next ban escalates (limiter.ts decision 6): a limiter that lost its state
 * must neither pardon a ban nor restart its escalation at 15 minutes. Oldest start first, so the
 * latest ban of a subject is the one it keeps. Returns how many bans are in force.
 */
async function loadBans (keys: KeyStore, limiter: RateLimiter, now: number): Promise<number> {
  const restore = limiter.restoreBan?.bind(limiter)
  if (restore === undefined) return 0
  const since = now - BAN_ESCALATION_MS
  // Not lifted and ending after `since` (in force, or history), and lifted ones ending after it.
  const [kept, lifted] = await Promise.all([
    keys.activeBans(since, RESTORED_BANS_MAX),
    keys.bansLiftedSince(since - LIFT_LOOKBACK_MS, since)
  ])
  const bans = [...kept, ...lifted].sort((a, b) => a.startedAt - b.startedAt)
  let inForce = 0
  for (const ban of bans) {
    await restore(ban.subject, { startedAt: ban.startedAt, until: ban.endsAt, liftedAt: ban.liftedAt })
    if (ban.liftedAt === null && ban.endsAt > now) inForce++
  }
  return inForce
}
