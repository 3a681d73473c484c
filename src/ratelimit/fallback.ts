// Keeps the API serving when the shared store (Redis) is unreachable (docs/product.md section 4):
// each instance then answers from its own counters, says so, and returns to the shared store by
// itself. Limits are per instance while degraded (N instances allow up to N times the quota);
// that is the product's choice over refusing every request.
//
// For a dead Redis to cost no latency, its ioredis client must fail fast instead of queueing:
// create it with redisClientOptions() from redis.ts (no offline queue, no per-request retries, a
// short command timeout). Then a refused connection rejects at once, and a Redis that hangs
// costs one commandTimeout, at most once per RETRY_INTERVAL_MS.
import type { Decision, Quota, RateLimiter, RestoredBan } from './limiter.ts'

export type FallbackStatus = 'ok' | 'degraded'

export interface FallbackRateLimiterOptions {
  primary: RateLimiter
  fallback: RateLimiter
  /** Called on each change of status only (once when the primary fails, once when it is back). */
  onStateChange?: (state: FallbackStatus, reason?: string) => void
  /** Epoch ms; injectable so tests can pass the retry interval without sleeping. */
  now?: () => number
  /**
   * A cheap round trip to the primary's store (Redis PING), used by check() so that the state
   * follows the store even when no request comes: an idle instance notices an outage, and
   * returns to the primary when the store is back, by itself.
   */
  probe?: () => Promise<unknown>
}

export interface FallbackRateLimiter extends RateLimiter {
  state(): { status: FallbackStatus; reason?: string }
  /**
   * The state after probing the primary (readiness calls this): while ok, on every call; while
   * degraded, at most once per RETRY_INTERVAL_MS, like requests. A successful probe sends the
   * next requests to the primary again. Without a probe option, the same as state().
   */
  check(): Promise<{ status: FallbackStatus; reason?: string }>
}

/** While degraded, the primary is tried again at most this often. */
export const RETRY_INTERVAL_MS = 1000

const REASON_MAX_LENGTH = 120

/**
 * A short reason fit for /readyz, logs and metrics. Error messages may quote a connection URL
 * (and with it a password) when some layer wraps the error, so any word that looks like a URL
 * or a user@host is dropped; the error's code, when it has one (ECONNREFUSED), comes first.
 */
export function describeFailure (err: unknown): string {
  const code = typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : ''
  const message = err instanceof Error ? err.message : String(err)
  const words = message.split(' ').filter((w) => !w.includes('://') && !w.includes('@'))
  let text = words.join(' ').trim()
  if (code !== '' && !text.includes(code)) text = text === '' ? code : `${code}: ${text}`
  if (text === '') text = err instanceof Error ? err.name : 'unknown error'
  const reason = `rate limit store unavailable: ${text}`
  return reason.length > REASON_MAX_LENGTH ? `${reason.slice(0, REASON_MAX_LENGTH - 1)}…` : reason
}

export function createFallbackRateLimiter (options: FallbackRateLimiterOptions): FallbackRateLimiter {
  const { primary, fallback, onStateChange, probe } = options
  const now = options.now ?? Date.now
  let status: FallbackStatus = 'ok'
  let reason: string | undefined
  let nextProbeAt = 0
  // Whether the fallback holds the bans in force since the last fall-back (needsBans), and
  // whether a ban failed to reach the primary during a reload (the next needsBans reloads).
  let fallbackLoaded = false
  let primaryMissesBans = false
  // Each change of status changes where counts are kept: the fallback starts from nothing, and
  // the primary missed what the fallback counted meanwhile. Day counts are put back after each.
  let switches = 0

  // A failing observer (a logger, a metric) must not turn a rate limit answer into an error.
  function notify (state: FallbackStatus, why?: string): void {
    try {
      onStateChange?.(state, why)
    } catch {
      // deliberately ignored, see above
    }
  }

  function primaryFailed (err: unknown): void {
    const why = describeFailure(err)
    nextProbeAt = now() + RETRY_INTERVAL_MS
    reason = why
    if (status === 'ok') {
      status = 'degraded'
      switches++
      fallbackLoaded = false
      notify('degraded', why)
    }
  }

  function primaryAnswered (): void {
    if (status === 'degraded') {
      status = 'ok'
      switches++
      reason = undefined
      notify('ok')
    }
  }

  function state (): { status: FallbackStatus; reason?: string } {
    return reason === undefined ? { status } : { status, reason }
  }

  async function route (call: (limiter: RateLimiter) => Decision | Promise<Decision>): Promise<Decision> {
    if (status === 'degraded') {
      const t = now()
      if (t < nextProbeAt) return call(fallback)
      // Claimed before awaiting, so requests arriving during the probe go to the fallback
      // instead of all waiting on a primary that may still be down.
      nextProbeAt = t + RETRY_INTERVAL_MS
    }
    let decision: Decision
    try {
      decision = await call(primary)
    } catch (err) {
      primaryFailed(err)
      return call(fallback)
    }
    primaryAnswered()
    return decision
  }

  // Bans in force wherever the limiter is: every ban the primary reports is kept in the fallback
  // too (so a fall-back keeps it at once), and a ban the fallback holds but the primary no longer
  // does (Redis lost its state) is still answered, until the ban sync puts it back in the primary.
  async function routeSubject (
    subject: string,
    quota: Quota,
    call: (limiter: RateLimiter) => Decision | Promise<Decision>
  ): Promise<Decision> {
    const decision = await route(call)
    if (status !== 'ok') return decision
    if (decision.ban !== null) {
      await fallback.restoreBan?.(subject, { startedAt: decision.ban.startedAt, until: decision.ban.until })
      return decision
    }
    if (decision.code === 'api_key_banned') return decision
    const held = await fallback.peek(subject, quota)
    return held.ban !== null ? held : decision
  }

  return {
    consume: (subject: string, quota: Quota) => routeSubject(subject, quota, (l) => l.consume(subject, quota)),
    peek: (subject: string, quota: Quota) => routeSubject(subject, quota, (l) => l.peek(subject, quota)),

    // Into both: the fallback always holds the bans loaded, and the primary when it answers (a
    // failure makes the next needsBans reload).
    async restoreBan (subject: string, ban: RestoredBan): Promise<void> {
      await fallback.restoreBan?.(subject, ban)
      if (primary.restoreBan === undefined) return
      if (status !== 'ok') {
        primaryMissesBans = true
        return
      }
      try {
        await primary.restoreBan(subject, ban)
      } catch (err) {
        primaryMissesBans = true
        primaryFailed(err)
      }
    },

    // Into both, like bans: a day count is a floor, so a store that already holds more keeps it.
    async restoreDay (subject: string, day: { at: number; count: number }): Promise<void> {
      await fallback.restoreDay?.(subject, day)
      if (status !== 'ok' || primary.restoreDay === undefined) return
      try {
        await primary.restoreDay(subject, day)
      } catch (err) {
        primaryFailed(err)
      }
    },

    generation: () => switches + (primary.generation?.() ?? 0) + (fallback.generation?.() ?? 0),

    async needsBans (): Promise<boolean> {
      if (status === 'ok') {
        try {
          const lost = await (primary.needsBans?.() ?? Promise.resolve(false))
          primaryAnswered()
          if (lost || primaryMissesBans) {
            primaryMissesBans = false
            fallbackLoaded = true
            return true
          }
        } catch (err) {
          primaryFailed(err)
        }
      }
      if (status === 'degraded' && !fallbackLoaded) {
        fallbackLoaded = true
        return true
      }
      return false
    },

    // A ban may live in either store (the fallback makes its own while degraded), so both are
    // lifted. The primary is tried even while degraded, and its failure is rethrown: a lift that
    // did not reach the shared store would come back with it, so the caller must retry.
    async unban (subject: string): Promise<void> {
      await fallback.unban(subject)
      try {
        await primary.unban(subject)
      } catch (err) {
        primaryFailed(err)
        throw err
      }
      primaryAnswered()
    },

    async close (): Promise<void> {
      await Promise.all([primary.close(), fallback.close()])
    },

    state,

    async check () {
      if (probe !== undefined) {
        const t = now()
        if (status === 'ok' || t >= nextProbeAt) {
          if (status === 'degraded') nextProbeAt = t + RETRY_INTERVAL_MS
          try {
            await probe()
            primaryAnswered()
          } catch (err) {
            primaryFailed(err)
          }
        }
      }
      return state()
    }
  }
}
