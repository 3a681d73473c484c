// How often a refused client address may still have a key looked up (docs/product.md 4.11). A
// banned or exhausted address is answered from the limiter, whatever key it sends, so guessing
// from it costs no database read; but behind one NAT or CGNAT address, a valid key must not be
// locked out for its neighbour's guessing. So a key this instance has never resolved is looked
// up for such an address once per interval: a valid one is then served on its own quota (and
// known from then on), a wrong one is charged to the address like any other.
export const ADDRESS_LOOKUP_INTERVAL_MS = 1000

/** How many refused addresses are remembered (the oldest is forgotten, and gets its next lookup at once). */
const ADDRESSES_MAX = 10_000

export interface AddressLookups {
  /** Whether the refused address may have one key looked up now; taking it starts the next interval. */
  take (subject: string, now: number): boolean
}

export function createAddressLookups (intervalMs = ADDRESS_LOOKUP_INTERVAL_MS): AddressLookups {
  const nextAt = new Map<string, number>()
  return {
    take (subject, now) {
      const at = nextAt.get(subject)
      if (at !== undefined && at > now) return false
      nextAt.delete(subject)
      if (nextAt.size >= ADDRESSES_MAX) {
        const oldest = nextAt.keys().next()
        if (oldest.done !== true) nextAt.delete(oldest.value)
      }
      nextAt.set(subject, now + intervalMs)
      return true
    }
  }
}
