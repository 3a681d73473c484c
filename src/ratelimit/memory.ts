// In-process back end: counters and bans of one instance (no REDIS_URL, or Redis unreachable).
// The state machine below mirrors the Lua script in redis.ts line for line; the contract suite
// runs against both so they cannot drift apart unnoticed.
import {
  BAN_ESCALATION_MS,
  BAN_STRIKES,
  DAY_MS,
  MINUTE_MS,
  banDurationMs,
  banLevelOf,
  buildDecision,
  checkQuota,
  nextBanLevel,
  quotaRetryAfterSeconds
} from './limiter.ts'
import type { Decision, Quota, RateLimiter, RawDecision, RestoredBan } from './limiter.ts'

export interface MemoryRateLimiterOptions {
  /** Epoch ms; injectable so tests never sleep. */
  now?: () => number
  /** The most subjects held at once (RATE_LIMIT_MAX_SUBJECTS); see maintain() below. */
  maxSubjects?: number
}

export const DEFAULT_MAX_SUBJECTS = 100_000

export interface MemoryRateLimiter extends RateLimiter {
  consume(subject: string, quota: Quota): Decision
  peek(subject: string, quota: Quota): Decision
  restoreBan(subject: string, ban: RestoredBan): void
  restoreDay(subject: string, day: { at: number; count: number }): void
  /** Subjects currently held; for tests and metrics. */
  size(): number
}

interface SubjectState {
  minuteIndex: number
  minuteCount: number
  dayIndex: number
  dayCount: number
  /** Retry instant of the wait period's first refusal; the period is open while now < periodUntil. */
  periodUntil: number
  /** Requests counted in the open period, the first refusal being 1. */
  strikes: number
  /** Start of the last ban, 0 if none; kept after the ban for escalation. */
  banStartedAt: number
  /** The ban is active while now < banUntil; unban sets it to now. */
  banUntil: number
  banLevel: number
  /** Set on every request, cleared when the sweep passes by: the CLOCK algorithm's second chance. */
  recent: boolean
}

// Stands in for a subject never seen, so that peek allocates nothing for it.
const EMPTY: Readonly<SubjectState> = Object.freeze({
  minuteIndex: -1,
  minuteCount: 0,
  dayIndex: -1,
  dayCount: 0,
  periodUntil: 0,
  strikes: 0,
  banStartedAt: 0,
  banUntil: 0,
  banLevel: 0,
  recent: false
})

// Memory is bounded in size as well as in time, and reclaimed without pauses. A cursor walks
// the subjects in insertion order, a few entries per consume: it drops the stale ones (nothing
// they hold can change a future answer), and while the map holds more than maxSubjects it also
// drops the ones not seen since its last pass (CLOCK, an approximation of least recently used)
// unless they hold an active ban or an open wait period, whose loss would pardon an abuser.
// Each consume adds at most one subject and examines up to EVICT_STEP, so the size comes back
// to the bound; a flood of subjects that are all banned or waiting is still capped at twice the
// bound. No step ever walks the whole map (the former once-a-minute full sweep stalled the
// event loop for 45 ms at 900,000 subjects).
const SWEEP_STEP = 2
const EVICT_STEP = 8

function raw (outcome: RawDecision['outcome'], minuteCount: number, dayCount: number,
  banStartedAt = 0, banUntil = 0, banLevel = 0): RawDecision {
  return { outcome, minuteCount, dayCount, banStartedAt, banUntil, banLevel }
}

/** One request against one subject's state; mutates `s` only when `charge` is true. */
function step (s: SubjectState, quota: Quota, now: number, charge: boolean): RawDecision {
  const minuteIndex = Math.floor(now / MINUTE_MS)
  const dayIndex = Math.floor(now / DAY_MS)
  const m = s.minuteIndex === minuteIndex ? s.minuteCount : 0
  const d = s.dayIndex === dayIndex ? s.dayCount : 0

  if (s.banUntil > now) return raw('banned', m, d, s.banStartedAt, s.banUntil, s.banLevel)

  const inPeriod = s.periodUntil > now
  if (inPeriod && s.strikes >= BAN_STRIKES) {
    const level = nextBanLevel(s.banStartedAt, s.banLevel, now)
    const until = now + banDurationMs(level)
    if (!charge) return raw('would_ban', m, d, now, until, level)
    s.banStartedAt = now
    s.banUntil = until
    s.banLevel = level
    s.periodUntil = 0
    s.strikes = 0
    return raw('ban_started', m, d, now, until, level)
  }

  if (m < quota.perMinute && d < quota.perDay) {
    if (!charge) return raw('allowed', m, d)
    s.minuteIndex = minuteIndex
    s.minuteCount = m + 1
    s.dayIndex = dayIndex
    s.dayCount = d + 1
    if (inPeriod) s.strikes++
    return raw('allowed', m + 1, d + 1)
  }

  if (charge) {
    if (inPeriod) {
      s.strikes++
    } else {
      s.periodUntil = now + quotaRetryAfterSeconds(m, d, quota, now) * 1000
      s.strikes = 1
    }
  }
  return raw('rate_limited', m, d)
}

/** True when dropping the state changes no future answer (same horizon as the Redis key TTLs). */
function isStale (s: SubjectState, now: number): boolean {
  return s.minuteIndex !== Math.floor(now / MINUTE_MS)
    && s.dayIndex !== Math.floor(now / DAY_MS)
    && s.periodUntil <= now
    && (s.banStartedAt === 0 || now >= s.banUntil + BAN_ESCALATION_MS)
}

export function createMemoryRateLimiter (options: MemoryRateLimiterOptions = {}): MemoryRateLimiter {
  const now = options.now ?? Date.now
  const maxSubjects = options.maxSubjects ?? DEFAULT_MAX_SUBJECTS
  const subjects = new Map<string, SubjectState>()
  // Keys, not entries: an entry is an array made for each step (a tenth of a read's garbage).
  let cursor = subjects.keys()

  function maintain (t: number): void {
    const over = subjects.size > maxSubjects
    for (let i = over ? EVICT_STEP : SWEEP_STEP; i > 0; i--) {
      let next = cursor.next()
      if (next.done === true) {
        cursor = subjects.keys()
        next = cursor.next()
        if (next.done === true) return
      }
      const subject = next.value
      const state = subjects.get(subject)!
      if (isStale(state, t)) {
        subjects.delete(subject)
      } else if (over) {
        const holds = state.banUntil > t || state.periodUntil > t
        if ((!state.recent && !holds) || subjects.size > 2 * maxSubjects) subjects.delete(subject)
        else state.recent = false
      }
    }
  }

  return {
    consume (subject: string, quota: Quota): Decision {
      checkQuota(quota)
      const t = now()
      maintain(t)
      let state = subjects.get(subject)
      if (state === undefined) {
        // A newcomer is not "recent" until it comes back: a scan of one-off subjects (rotating
        // addresses) then evicts its own kind first, not the regular callers.
        state = { ...EMPTY }
        subjects.set(subject, state)
      } else {
        state.recent = true
      }
      return buildDecision(step(state, quota, t, true), quota, t)
    },

    peek (subject: string, quota: Quota): Decision {
      checkQuota(quota)
      const t = now()
      // step does not mutate when charge is false, so the frozen EMPTY is safe here.
      return buildDecision(step(subjects.get(subject) ?? EMPTY, quota, t, false), quota, t)
    },

    async unban (subject: string): Promise<void> {
      const state = subjects.get(subject)
      if (state === undefined) return
      const t = now()
      state.periodUntil = 0
      state.strikes = 0
      if (state.banUntil > t) state.banUntil = t
    },

    restoreBan (subject: string, ban: RestoredBan): void {
      const t = now()
      const end = ban.liftedAt == null ? ban.until : Math.min(ban.until, ban.liftedAt)
      const inForce = end > t
      // History older than the escalation horizon changes no answer.
      if (!inForce && end + BAN_ESCALATION_MS <= t) return
      const held = subjects.get(subject)
      const alreadyHeld = inForce
        ? (held?.banUntil ?? 0) >= end
        : held !== undefined && (held.banUntil > t || held.banStartedAt >= ban.startedAt)
      if (alreadyHeld) return
      const state = held ?? { ...EMPTY }
      if (held === undefined) subjects.set(subject, state)
      state.banStartedAt = ban.startedAt
      state.banUntil = end
      state.banLevel = banLevelOf(ban.startedAt, ban.until)
    },

    restoreDay (subject: string, day: { at: number; count: number }): void {
      const t = now()
      const dayIndex = Math.floor(t / DAY_MS)
      if (Math.floor(day.at / DAY_MS) !== dayIndex) return
      const held = subjects.get(subject)
      if ((held !== undefined && held.dayIndex === dayIndex ? held.dayCount : 0) >= day.count) return
      const state = held ?? { ...EMPTY }
      if (held === undefined) subjects.set(subject, state)
      state.dayIndex = dayIndex
      state.dayCount = day.count
    },

    async close (): Promise<void> {
      subjects.clear()
      cursor = subjects.keys()
    },

    size (): number {
      return subjects.size
    }
  }
}
