// The retry schedule of webhook deliveries (WEBHOOK_RETRY_SCHEDULE). The first attempt goes at
// once; the schedule lists the waits before each retry, as Standard Webhooks suggests, so the
// default makes 8 attempts over about 28 hours.

export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h'

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const
// One wait longer than a day is almost surely a typo (5000h for 5000ms), and the schedule's end
// must come well before events are pruned (EVENT_RETENTION_DAYS, 30 by default).
const MAX_DELAY_MS = 24 * 3_600_000
const MAX_RETRIES = 20
const ITEM = /^(\d{1,9})(ms|s|m|h)$/

export type ScheduleParse = { ok: true; delaysMs: number[] } | { ok: false; error: string }

/**
 * Parses a comma-separated list of durations (`500ms`, `5s`, `5m`, `2h`); every problem is named,
 * none is guessed around.
 */
export function parseRetrySchedule (text: string): ScheduleParse {
  const items = text.split(',').map((item) => item.trim())
  if (items.length > MAX_RETRIES) return { ok: false, error: `at most ${MAX_RETRIES} retries, not ${items.length}` }
  const delaysMs: number[] = []
  for (const [index, item] of items.entries()) {
    const match = ITEM.exec(item)
    if (match === null) return { ok: false, error: `item ${index + 1} ("${item}") is not a whole number followed by ms, s, m or h` }
    const delay = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]
    // Zero would retry at once, hammering a receiver that has just failed.
    if (delay === 0) return { ok: false, error: `item ${index + 1} ("${item}") is zero` }
    if (delay > MAX_DELAY_MS) return { ok: false, error: `item ${index + 1} ("${item}") is longer than 24h` }
    delaysMs.push(delay)
  }
  return { ok: true, delaysMs }
}

/**
 * When the attempt after the given one is due: `attempt` counts from 1 (the immediate first
 * attempt), `lastAttemptAt` is when it was made (epoch ms). Null when it was the last one the
 * schedule allows: the delivery is then failed for good (until replayed).
 */
export function nextAttemptAt (attempt: number, lastAttemptAt: number, delaysMs: readonly number[]): number | null {
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new RangeError('attempts count from 1')
  const delay = delaysMs[attempt - 1]
  return delay === undefined ? null : lastAttemptAt + delay
}
