// key.expiring (issue 31): every KEY_EXPIRING_EVERY_MS, a notice to the holders of the keys that
// expire soon, 7 days and 1 day before their expiresAt, once each. A key is in exactly one
// notice's window at a time, the most urgent that applies: 7 days is (1 day, 7 days] before its
// expiry, 1 day is (0, 1 day]. So a key made with less than a day left, or whose 7-day window
// passed while no instance ran, gets the 1-day notice only, and one made with 3 days left gets
// both. Revoked keys and rotated keys get none: the expiresAt a rotation sets is the end of its
// grace, which the holder asked for, not an expiry to warn of (the successor, which the holder
// now uses, has its own). The data is the key's view, like key.created's; the event schema has
// no field for which notice it is, and the key's expiresAt says how near it is.
//
// Every instance runs it: the store records each notice with its event in one transaction, on a
// key_notices row unique per key and notice, so two instances never send one twice.
import { EXPIRING_WITHIN_MS } from '../accounts/keys.status.ts'
import type { EventStore } from '../events/events.store.ts'
import { DAY_MS } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import type { Job } from './runner.ts'

export const KEY_EXPIRING_EVERY_MS = 60_000
/** Keys per store call, and calls per notice in a run: a backlog is worked off over the next runs. */
export const KEY_NOTICE_BATCH = 100
export const KEY_NOTICE_BATCHES_PER_RUN = 10

/** The notices, each with how long before the expiry its window opens; the window closes where the next one's opens. */
export const KEY_NOTICES = [
  { notice: '7d', beforeMs: EXPIRING_WITHIN_MS },
  { notice: '1d', beforeMs: DAY_MS }
] as const

/** Sends the notices due at the clock's now; returns how many events it wrote. */
export async function sendKeyExpiringNotices (deps: { events: EventStore; clock: Clock }): Promise<number> {
  const now = deps.clock.now()
  let sent = 0
  for (const [i, { notice, beforeMs }] of KEY_NOTICES.entries()) {
    const next = KEY_NOTICES[i + 1]
    const window = {
      notice,
      type: 'key.expiring' as const,
      expiresAfter: now + (next?.beforeMs ?? 0),
      expiresBy: now + beforeMs,
      now,
      max: KEY_NOTICE_BATCH
    }
    for (let batch = 0; batch < KEY_NOTICE_BATCHES_PER_RUN; batch++) {
      const n = await deps.events.sendKeyNotices(window)
      sent += n
      if (n < KEY_NOTICE_BATCH) break
    }
  }
  return sent
}

export function keyExpiringJob (deps: { events: EventStore; clock: Clock }): Job {
  return {
    name: 'key-expiring',
    everyMs: KEY_EXPIRING_EVERY_MS,
    run: () => sendKeyExpiringNotices(deps),
    failure: 'sending key.expiring notices failed; the next run retries'
  }
}
