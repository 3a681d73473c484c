// The rate limiter's contract and the pure logic both back ends share (docs/product.md section 4).
//
// Decisions taken where the product text leaves room, each one tested by the contract suite
// (test/ratelimit/contract.ts) against every back end:
//
// 1. Windows are fixed and aligned to the epoch: the minute window is floor(now / 60 000), the
//    day window floor(now / 86 400 000), so days are UTC days. A window's counter is 0 at its
//    start and resetAt is the first millisecond of the next window.
// 2. All or nothing: a request is allowed only when both windows have room (count < limit), and
//    then both counters go up by one. A refused request is charged to neither window, so a
//    client hammering the minute limit does not burn its daily quota.
// 3. remaining = max(0, limit - count) after this request's charge (so the request that takes
//    the last unit answers remaining 0 and is still allowed).
// 4. Retry-After for a quota refusal: the client may retry once every window that refused it has
//    reset, so it is the latest resetAt among the exhausted windows, in whole seconds rounded up
//    (never 0: a client told "0" retries at once and is refused again). The day window always
//    resets at or after the minute window, so when both are exhausted the day decides.
// 5. Wait periods and bans: a subject's first refusal opens a wait period that lasts until that
//    refusal's retry instant (now + Retry-After * 1000). Every request that arrives inside the
//    period is counted, the first refusal being number 1; numbers 1 to 20 get their normal
//    answer, and number 21 is answered api_key_banned and starts the ban (banStarted is true on
//    that request only). We count every request in the period, not only refused ones, because
//    the product counts "requests that arrive before Retry-After has passed": the only ones that
//    can be allowed are those in the sub-second gap between a window's reset and the rounded-up
//    Retry-After. Once the retry instant passes, the period is over and counting restarts at the
//    next refusal.
// 6. A ban lasts 15 minutes at level 1. If the previous ban STARTED less than 24 hours before
//    the new one (strictly less), the new ban is one level higher and twice as long, capped at
//    24 hours: 15m, 30m, 1h, 2h, 4h, 8h, 16h, 24h. The level stops at 8 (the first 24 h level),
//    so level and duration stay in step. Since a ban must be over before the next one starts,
//    the ban after a 24 h ban starts at least 24 h after it and so starts again at 15 minutes,
//    unless the 24 h ban was lifted early by unban.
// 7. While banned, consume answers api_key_banned with Retry-After until the ban ends, charges no
//    window, counts no strike and does not extend the ban. From `until` on, the subject is served
//    normally (quota permitting).
// 8. peek answers what a consume would answer now (including api_key_banned for what would be
//    the 21st request of a period, with the Retry-After that ban would get, but ban: null since
//    none is active) and changes nothing: no charge, no strike, no ban.
// 9. unban ends the active ban now and closes the wait period (strike counting restarts), but
//    keeps the escalation history (the last ban's start and level): lifting a ban is a pardon,
//    not a reset, so a key that re-offends within 24 h of the lifted ban's start still escalates.
// 10. Headers: the X-RateLimit-* trio describes the binding window, the one with the fewest
//    requests left, the later-resetting one on a tie (so the client is told the longer wait).
//    X-RateLimit-Reset is Unix seconds (ceil of resetAt / 1000); the draft's `t` is seconds
//    from now, rounded up so that a client waiting t seconds finds the window reset, never < 0.
// 11. The clock is the caller's (`now` option, epoch ms), also for Redis: instances agree on
//    windows by epoch arithmetic, and tests never sleep.

export interface Quota {
  perMinute: number
  perDay: number
}

export interface WindowState {
  limit: number
  remaining: number
  /** Epoch ms at which this window resets (the first millisecond of the next window). */
  resetAt: number
}

export interface BanInfo {
  /** Epoch ms. */
  until: number
  reason: string
  /** Epoch ms. */
  startedAt: number
  /** 1 for a 15 minute ban, each escalation adds 1, up to BAN_MAX_LEVEL. */
  level: number
}

export interface Decision {
  allowed: boolean
  code: null | 'rate_limited' | 'api_key_banned'
  minute: WindowState
  day: WindowState
  /** 0 when allowed; whole seconds, rounded up, >= 1 when refused. */
  retryAfterSeconds: number
  /** The active ban, if any. */
  ban: BanInfo | null
  /** True only on the request that started a new ban (the caller records, logs and counts it). */
  banStarted: boolean
}

/** A ban as the database records it (access/ban-sync.ts puts them back). */
export interface RestoredBan {
  startedAt: number
  until: number
  liftedAt?: number | null
}

export interface RateLimiter {
  /**
   * Charges one request to both windows, or to neither when refused. The in-process back end
   * answers synchronously (a Decision, not a promise), so the access step of a request whose key
   * is cached costs no promise; callers handle both.
   */
  consume(subject: string, quota: Quota): Decision | Promise<Decision>
  /** Answers like consume would now, and changes nothing (no charge, no strike, no ban). */
  peek(subject: string, quota: Quota): Decision | Promise<Decision>
  /** Ends the active ban and the wait period; keeps the escalation history (decision 9). */
  unban(subject: string): Promise<void>
  /**
   * Puts a ban recorded in the database back (docs/product.md 4.12): in force when `until` is
   * ahead (and it ends later than the subject's own), else as history only, so that the
   * subject's next ban escalates from it (decision 6). `liftedAt`: the ban was lifted then, so it
   * is history whatever its `until`. History never replaces a later ban's, nor a ban in force.
   */
  restoreBan?(subject: string, ban: RestoredBan): void | Promise<void>
  /**
   * Puts back a day count recorded elsewhere (the usage in the database): the subject's count of
   * the UTC day of `at` becomes at least `count`; nothing when that day is over. For keys only.
   */
  restoreDay?(subject: string, day: { at: number; count: number }): void | Promise<void>
  /**
   * Changes whenever counts this limiter held may be lost (Redis flushed or restarted, a
   * fall-back to in-process counters and back): whoever restores day counts (restoreDay) does it
   * again for each subject. Absent: counts are lost only with the process.
   */
  generation?(): number
  /**
   * True when the store has lost the bans put in it (Redis flushed or restarted without
   * persistence, or the fall-back to in-process counters) or never had them: the caller then
   * puts the bans in force in the database back (access/ban-sync.ts). Claims the reload: the next
   * call answers false until the state is lost again. Back ends whose state cannot be lost
   * without the process omit it.
   */
  needsBans?(): Promise<boolean>
  close(): Promise<void>
}

export const MINUTE_MS = 60_000
export const DAY_MS = 86_400_000
/** Requests of a wait period that still get their normal answer; the next one is banned. */
export const BAN_STRIKES = 20
export const BAN_BASE_MS = 15 * MINUTE_MS
export const BAN_MAX_MS = DAY_MS
/** The first level whose duration reaches BAN_MAX_MS: 15m * 2^7 = 32h, capped to 24h. */
export const BAN_MAX_LEVEL = 8
/** A ban escalates when the previous one started less than this long before. */
export const BAN_ESCALATION_MS = DAY_MS
export const BAN_REASON = 'kept calling while rate limited: 21 requests before Retry-After had passed'

export function minuteResetAt (now: number): number {
  return (Math.floor(now / MINUTE_MS) + 1) * MINUTE_MS
}

export function dayResetAt (now: number): number {
  return (Math.floor(now / DAY_MS) + 1) * DAY_MS
}

export function banDurationMs (level: number): number {
  return Math.min(BAN_BASE_MS * 2 ** (level - 1), BAN_MAX_MS)
}

/** The level whose duration a ban had (a restored one), so that a new ban within 24 h escalates from it. */
export function banLevelOf (startedAt: number, until: number): number {
  let level = 1
  while (level < BAN_MAX_LEVEL && banDurationMs(level) < until - startedAt) level++
  return level
}

/** lastStartedAt is 0 when the subject has no ban history. */
export function nextBanLevel (lastStartedAt: number, lastLevel: number, now: number): number {
  if (lastStartedAt > 0 && now - lastStartedAt < BAN_ESCALATION_MS) {
    return Math.min(lastLevel + 1, BAN_MAX_LEVEL)
  }
  return 1
}

function secondsUntil (at: number, now: number): number {
  return Math.max(0, Math.ceil((at - now) / 1000))
}

/** Decision 4; counts are the current ones (a refusal charges nothing). */
export function quotaRetryAfterSeconds (minuteCount: number, dayCount: number, quota: Quota, now: number): number {
  let retryAt = 0
  if (minuteCount >= quota.perMinute) retryAt = minuteResetAt(now)
  if (dayCount >= quota.perDay) retryAt = Math.max(retryAt, dayResetAt(now))
  return Math.max(1, secondsUntil(retryAt, now))
}

/** Quotas reach Redis as script arguments and array lengths in tests: refuse nonsense early. */
export function checkQuota (quota: Quota): void {
  if (!Number.isSafeInteger(quota.perMinute) || quota.perMinute < 0
    || !Number.isSafeInteger(quota.perDay) || quota.perDay < 0) {
    throw new RangeError(`quota must be whole numbers >= 0, got ${quota.perMinute}/min and ${quota.perDay}/day`)
  }
}

/**
 * What a back end's state machine concluded, before it is dressed as a Decision. The memory back
 * end builds it in TypeScript, the Redis one gets it as the Lua script's reply; both then go
 * through buildDecision, so the answer's shape and arithmetic exist once.
 */
export type Outcome = 'allowed' | 'rate_limited' | 'banned' | 'ban_started' | 'would_ban'

export interface RawDecision {
  outcome: Outcome
  /** Counts after this request's charge (only an allowed consume charges). */
  minuteCount: number
  dayCount: number
  /** The active, just started or (would_ban) hypothetical ban; 0 otherwise. */
  banStartedAt: number
  banUntil: number
  banLevel: number
}

/** Outcome codes as the Lua script returns them, in this order. */
export const OUTCOMES: readonly Outcome[] = ['allowed', 'rate_limited', 'banned', 'ban_started', 'would_ban']

export function buildDecision (raw: RawDecision, quota: Quota, now: number): Decision {
  const minute: WindowState = {
    limit: quota.perMinute,
    remaining: Math.max(0, quota.perMinute - raw.minuteCount),
    resetAt: minuteResetAt(now)
  }
  const day: WindowState = {
    limit: quota.perDay,
    remaining: Math.max(0, quota.perDay - raw.dayCount),
    resetAt: dayResetAt(now)
  }
  switch (raw.outcome) {
    case 'allowed':
      return { allowed: true, code: null, minute, day, retryAfterSeconds: 0, ban: null, banStarted: false }
    case 'rate_limited':
      return {
        allowed: false,
        code: 'rate_limited',
        minute,
        day,
        retryAfterSeconds: quotaRetryAfterSeconds(raw.minuteCount, raw.dayCount, quota, now),
        ban: null,
        banStarted: false
      }
    case 'banned':
    case 'ban_started':
    case 'would_ban': {
      const ban: BanInfo | null = raw.outcome === 'would_ban'
        ? null
        : { until: raw.banUntil, reason: BAN_REASON, startedAt: raw.banStartedAt, level: raw.banLevel }
      return {
        allowed: false,
        code: 'api_key_banned',
        minute,
        day,
        retryAfterSeconds: Math.max(1, secondsUntil(raw.banUntil, now)),
        ban,
        banStarted: raw.outcome === 'ban_started'
      }
    }
  }
}

/** Decision 10: the window with the fewest requests left; on a tie, the one that resets later. */
export function bindingWindow (decision: Decision): WindowState {
  const { minute, day } = decision
  if (minute.remaining !== day.remaining) return minute.remaining < day.remaining ? minute : day
  return day.resetAt >= minute.resetAt ? day : minute
}
