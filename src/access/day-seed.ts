// Day counts that outlive the limiter's store (docs/product.md 4.14). The limiter's day windows
// live in Redis or in the process; when that state is lost (a FLUSHDB, a Redis restart, a
// fall-back to in-process counters, a restart of an instance without Redis), a key's day count
// continues from the usage the database recorded (key_usage, access/usage.ts), instead of
// starting again at 0.
//
// Off the request path: the first request of a key's quota identity on this instance, each UTC
// day and each time the limiter's generation moves (it lost counts), starts one read of the
// usage, and the count is put back (a floor: a store that holds more keeps it) when the read
// answers. That request and those made before the read answers are decided on what the limiter
// holds. What is missing is what the database has not been told yet: at most one usage flush
// interval's worth per instance (USAGE_FLUSH_INTERVAL_MS), plus, after a Redis flush, what is
// counted before the ban poll notices the loss (BAN_SYNC_INTERVAL_MS).
import { utcDay } from '../accounts/keys.rules.ts'
import type { KeyStore } from '../accounts/keys.store.ts'
import { DAY_MS, type RateLimiter } from '../ratelimit/limiter.ts'
import type { Principal } from './principal.ts'

/** How many quota identities are remembered as seeded (the oldest is forgotten, and seeded again if it comes back). */
const SEEDED_MAX = 10_000

export interface DaySeeder {
  /** Starts putting back the day count of the principal's identity, if not done yet for this day and generation. */
  check (principal: Principal, now: number): void
}

export function createDaySeeder (keys: KeyStore, limiter: RateLimiter): DaySeeder {
  const seeded = new Map<string, { day: number; generation: number }>()
  const restore = limiter.restoreDay?.bind(limiter)
  if (restore === undefined) return { check () {} }

  /** The day's requests of the key presented and of its quota identity (the first of a rotation chain). */
  async function recorded (principal: Principal, day: string): Promise<number> {
    const ids = principal.keyId === principal.caller.keyId
      ? [principal.keyId]
      : [principal.keyId, principal.caller.keyId]
    const rows = (await Promise.all(ids.map((id) => keys.usage(id, day)))).flat()
    return rows.reduce((sum, row) => row.day === day ? sum + row.allowed : sum, 0)
  }

  async function seed (principal: Principal, at: number): Promise<void> {
    const count = await recorded(principal, utcDay(at))
    if (count > 0) await restore!(principal.caller.subject, { at, count })
  }

  return {
    check (principal, now) {
      // Either the day or the generation moving means the count may be missing.
      const day = Math.floor(now / DAY_MS)
      const generation = limiter.generation?.() ?? 0
      const subject = principal.caller.subject
      const last = seeded.get(subject)
      if (last !== undefined && last.day === day && last.generation === generation) return
      const stamp = { day, generation }
      seeded.delete(subject)
      if (seeded.size >= SEEDED_MAX) {
        const oldest = seeded.keys().next()
        if (oldest.done !== true) seeded.delete(oldest.value)
      }
      seeded.set(subject, stamp)
      // A failed read (the database is out) is tried again on the identity's next request.
      seed(principal, now).catch(() => { if (seeded.get(subject) === stamp) seeded.delete(subject) })
    }
  }
}
