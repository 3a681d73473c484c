// The gate every request of one client passes before it is sent. It keeps the service's
// rate-limit contract (docs/product.md section 4) on the caller's behalf:
// - at most `maxConcurrency` requests in flight;
// - the requests in flight count against the last known `remaining`: when nothing is left, new
//   requests wait for the window to reset instead of being sent, so a burst of queued calls
//   never reaches the server as a burst of 429s (which would get the key banned);
// - after a 429 every request of the client is held until `Retry-After` has passed;
// - a wait longer than `maxWaitMs` is not waited: every queued request rejects at once with the
//   error `tooLong` makes (a spent day quota would otherwise hold them until the next UTC day).
// Only one waiter sleeps at a time (the pump), so an injected sleep that moves a test clock
// moves it once per wait, not once per queued request.

export interface GateOptions {
  maxConcurrency: number
  now: () => number
  sleep: (ms: number) => Promise<void>
  random: () => number
  /** The longest wait (reset or hold, before jitter) the gate sleeps through. */
  maxWaitMs: number
  /** The error of each request refused because the wait is longer than maxWaitMs. */
  tooLong: (waitMs: number) => Error
}

/** Spread of the extra wait after a reset or Retry-After, so many clients do not return at once. */
export const JITTER_MS = 1000

// Resets read from the relative `RateLimit` field are whole seconds: two answers of one window
// may place its reset up to a second apart, while windows are a minute apart at least.
const SAME_WINDOW_MS = 2000

export interface Gate {
  /**
   * Resolves when the caller may send one request (call release() when its response is read);
   * rejects when the wait would exceed maxWaitMs.
   */
  acquire (): Promise<void>
  release (): void
  /** What a response said about the binding window: requests left, and when it resets (client clock, ms). */
  observe (remaining: number, resetAt: number): void
  /** A response without rate-limit headers: nothing to count against. */
  unmetered (): void
  /** Holds every request until `until` (client clock, ms), plus jitter. */
  hold (until: number): void
}

export function createGate (options: GateOptions): Gate {
  const { maxConcurrency, now, sleep, random, maxWaitMs, tooLong } = options
  let inFlight = 0
  let holdUntil = 0
  // The binding window as last seen; null when unknown. While `probing`, the window is expected
  // to exist but its count is unknown (at start, after a reset): one request at a time finds out.
  let window: { remaining: number; resetAt: number } | null = null
  let probing = true
  const waiting: { resolve: () => void; reject: (error: Error) => void }[] = []
  let pumping = false

  /** waitMs: how long until a request may go (before jitter); null when a release() will tell. */
  type Decision = { go: true } | { go: false; waitMs: number | null }

  function decide (): Decision {
    const t = now()
    if (holdUntil > t) return { go: false, waitMs: holdUntil - t }
    if (inFlight >= maxConcurrency) return { go: false, waitMs: null }
    if (window !== null && window.resetAt <= t) {
      window = null
      probing = true
    }
    if (window === null) return probing && inFlight > 0 ? { go: false, waitMs: null } : { go: true }
    if (window.remaining - inFlight > 0) return { go: true }
    // Nothing left. Responses still in flight will say more; with none, wait for the reset.
    if (inFlight > 0) return { go: false, waitMs: null }
    return { go: false, waitMs: window.resetAt - t }
  }

  async function pump (): Promise<void> {
    if (pumping) return
    pumping = true
    try {
      while (waiting.length > 0) {
        const decision = decide()
        if (!decision.go) {
          if (decision.waitMs === null) return // a release() pumps again
          if (decision.waitMs > maxWaitMs) {
            for (const waiter of waiting.splice(0)) waiter.reject(tooLong(decision.waitMs))
            return
          }
          // Jitter, so that many clients do not all come back at the same instant.
          await sleep(decision.waitMs + Math.floor(random() * JITTER_MS))
          continue
        }
        inFlight++
        waiting.shift()!.resolve()
      }
    } finally {
      pumping = false
    }
  }

  return {
    acquire () {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ resolve, reject })
        void pump()
      })
    },
    release () {
      inFlight--
      void pump()
    },
    observe (remaining, resetAt) {
      probing = false
      if (resetAt <= now()) return // a late answer from a window that has already ended
      // Answers of one window can arrive out of order: the smallest count is the latest.
      if (window !== null && Math.abs(window.resetAt - resetAt) < SAME_WINDOW_MS) {
        window.remaining = Math.min(window.remaining, remaining)
      } else {
        window = { remaining, resetAt }
      }
    },
    unmetered () {
      probing = false
    },
    hold (until) {
      holdUntil = Math.max(holdUntil, until)
    }
  }
}
