// The clock is injected everywhere time matters (windows, bans, sunsets, idempotency expiry),
// so tests move time instead of waiting for it.
export interface Clock { now (): number }

export const systemClock: Clock = { now: () => Date.now() }

/** A clock a test sets by hand. */
export function manualClock (
  start: number | Date
): Clock & { set (t: number | Date): void; advance (ms: number): void } {
  let t = typeof start === 'number' ? start : start.getTime()
  return {
    now: () => t,
    set (value) { t = typeof value === 'number' ? value : value.getTime() },
    advance (ms) { t += ms }
  }
}
