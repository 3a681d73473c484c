// The allowance of a banned key's free reads (docs/product.md 4.8 and 9.11; issue 48 finding 5).
// A banned key is still served `GET /rate_limit`, its own view and ban history (`GET /keys/me`,
// `/keys/me/bans`) and its request log (`GET /keys/me/requests`), uncharged, so that a client can
// always learn how long to wait and why. Free must not
// mean unbounded: a banned key once read its own record 28,862 times in 8 s, each a database
// read, and nothing it did could extend its ban. So such a read is served only while the key's
// identity (its rotation chain) and the client address both have some of this minute's allowance
// left; past it, the read gets the ban's 429, which counts no strike and moves no end
// (ratelimit/limiter.ts, decision 7). A key in good standing is not counted: its `GET /rate_limit`
// costs a look at the limiter and no database read.
//
// Counted in memory, per instance: what the allowance bounds is each instance's work (a database
// read per view), and a free read must not cost a round trip to Redis. An address has a larger
// allowance than a key, so that keys behind one NAT are not refused for a neighbour's reads.
import { MINUTE_MS } from '../ratelimit/limiter.ts'

/** Free reads a minute per key identity (a rotation chain shares them, as it shares its quota). */
export const FREE_READS_PER_KEY = 30
/** Free reads a minute per client address (an IPv6 address by its /64), whatever key they carry. */
export const FREE_READS_PER_ADDRESS = 120

/** How many subjects are remembered (the oldest is forgotten, and starts its minute afresh). */
const SUBJECTS_MAX = 10_000

export interface FreeReads {
  /**
   * Takes one free read from the key identity's allowance and the address's, or from neither
   * when either is spent for this minute: then the read is charged.
   */
  take (keySubject: string, addressSubject: string, now: number): boolean
}

interface Count { minute: number; used: number }

export function createFreeReads (
  perKey: number = FREE_READS_PER_KEY,
  perAddress: number = FREE_READS_PER_ADDRESS
): FreeReads {
  // Key subjects (`key:N`) and address subjects (`ip:…`, `ip6:…`) never collide: one map holds both.
  const counts = new Map<string, Count>()
  const usedNow = (subject: string, minute: number): number => {
    const count = counts.get(subject)
    return count !== undefined && count.minute === minute ? count.used : 0
  }
  const add = (subject: string, minute: number, used: number): void => {
    // Re-inserted, so that the map's order is the order of last use and the oldest goes first.
    counts.delete(subject)
    if (counts.size >= SUBJECTS_MAX) {
      const oldest = counts.keys().next()
      if (oldest.done !== true) counts.delete(oldest.value)
    }
    counts.set(subject, { minute, used: used + 1 })
  }
  return {
    take (keySubject, addressSubject, now) {
      // Minutes aligned to the epoch, as the limiter's windows (decision 1).
      const minute = Math.floor(now / MINUTE_MS)
      const byKey = usedNow(keySubject, minute)
      const byAddress = usedNow(addressSubject, minute)
      if (byKey >= perKey || byAddress >= perAddress) return false
      add(keySubject, minute, byKey)
      add(addressSubject, minute, byAddress)
      return true
    }
  }
}
