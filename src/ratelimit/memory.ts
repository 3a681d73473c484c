// In-process back end: counters and bans of one instance (no REDIS_URL, or Redis unreachable).
// The state machine below mirrors the Lua script in redis.ts line for line; the contract suite
// runs against both so they cannot drift apart unnoticed.
import {
  BAN_ESCALATION_MS,
  BAN_STRIKES,
  DAY_MS,
  MINUTE_MS,
  banDurationMs,
  buildDecision,
  checkQuota,
  nextBanLevel,
  quotaRetryAfterSeconds
} from './limiter.ts'
import type { Decision, Quota, RateLimiter, RawDecision } from './limiter.ts'

export interface MemoryRateLimiterOptions {
  /** Epoch ms; injectable so tests never sleep. */
  now?: () => number
}

export interface MemoryRateLimiter extends RateLimiter {
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
  banLevel: 0
})

// A full sweep is O(subjects); once a minute keeps it far below the cost of the requests that
// created those subjects, and needs no timer to clear on close.
const SWEEP_INTERVAL_MS = MINUTE_MS

function raw(outcome: RawDecision['outcome'], minuteCount: number, dayCount: number,
  banStartedAt = 0, banUntil = 0, banLevel = 0): RawDecision {
  return { outcome, minuteCount, dayCount, banStartedAt, banUntil, banLevel }
}

/** One request against one subject's state; mutates `s` only when `charge` is true. */
function step(s: SubjectState, quota: Quota, now: number, charge: boolean): RawDecision {
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
function isStale(s: SubjectState, now: number): boolean {
  return s.minuteIndex !== Math.floor(now / MINUTE_MS) &&
    s.dayIndex !== Math.floor(now / DAY_MS) &&
    s.periodUntil <= now &&
    (s.banStartedAt === 0 || now >= s.banUntil + BAN_ESCALATION_MS)
}

export function createMemoryRateLimiter(options: MemoryRateLimiterOptions = {}): MemoryRateLimiter {
  const now = options.now ?? Date.now
  const subjects = new Map<string, SubjectState>()
  let lastSweep = now()

  function sweep(t: number): void {
    lastSweep = t
    for (const [subject, state] of subjects) {
      if (isStale(state, t)) subjects.delete(subject)
    }
  }

  return {
    async consume(subject: string, quota: Quota): Promise<Decision> {
      checkQuota(quota)
      const t = now()
      if (t - lastSweep >= SWEEP_INTERVAL_MS) sweep(t)
      let state = subjects.get(subject)
      if (state === undefined) {
        state = { ...EMPTY }
        subjects.set(subject, state)
      }
      return buildDecision(step(state, quota, t, true), quota, t)
    },

    async peek(subject: string, quota: Quota): Promise<Decision> {
      checkQuota(quota)
      const t = now()
      // step does not mutate when charge is false, so the frozen EMPTY is safe here.
      return buildDecision(step(subjects.get(subject) ?? EMPTY, quota, t, false), quota, t)
    },

    async unban(subject: string): Promise<void> {
      const state = subjects.get(subject)
      if (state === undefined) return
      const t = now()
      state.periodUntil = 0
      state.strikes = 0
      if (state.banUntil > t) state.banUntil = t
    },

    async close(): Promise<void> {
      subjects.clear()
    },

    size(): number {
      return subjects.size
    }
  }
}
