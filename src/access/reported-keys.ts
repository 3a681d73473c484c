// What a leaked-key report costs per key sent (docs/product.md 3.7; issue 48 finding 6). The
// report needs no key, and one request may carry 100 keys: charged as one request, 20 reports
// once made 2,000 lookups. So besides the request itself (charged to the client address like any
// request without a valid key), every key sent counts one against the address's allowance of
// reported keys, in the limiter like the quotas (shared by the instances with Redis), under a
// subject of its own so that reporting never spends the address's requests.
//
// All or nothing, and before any key is read: a report that does not fit in what is left is
// refused whole (nothing revoked). The limiter charges one unit per call, so the report first
// peeks, then consumes once per key; a consume refused there (concurrent reports from the address
// took the room in between) refuses the report too, and counts toward the subject's wait period
// as any refusal does.
import { AppError } from '../errors.ts'
import type { Decision, Quota, RateLimiter } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import { subjectOfAddress } from './client-subject.ts'

/** Keys one client address may report: 100 a minute (one full report), 1,000 a day. */
export const REPORTED_KEYS_QUOTA: Quota = { perMinute: 100, perDay: 1000 }

/** The limiter subject of an address's reported keys: apart from its requests (`ip:…`). */
export const reportedKeysSubject = (address: string): string => `reported:${subjectOfAddress(address)}`

/** Charges `count` reported keys to the client address, or throws 429 rate_limited charging nothing more. */
export type ChargeReport = (address: string, count: number) => Promise<void>

export function reportedKeysCharge (limiter: Pick<RateLimiter, 'peek' | 'consume'>, clock: Clock): ChargeReport {
  return async (address, count) => {
    const subject = reportedKeysSubject(address)
    const room = await limiter.peek(subject, REPORTED_KEYS_QUOTA)
    if (!fits(room, count)) throw refusal(room, count, clock.now())
    const charge = (): Decision | Promise<Decision> => limiter.consume(subject, REPORTED_KEYS_QUOTA)
    const charges = await Promise.all(Array.from({ length: count }, charge))
    const refused = charges.find((d) => !d.allowed)
    if (refused !== undefined) throw refusal(refused, count, clock.now())
  }
}

const fits = (room: Decision, count: number): boolean =>
  room.ban === null && room.code !== 'api_key_banned' && Math.min(room.minute.remaining, room.day.remaining) >= count

/** 429 rate_limited, Retry-After the whole seconds until the report fits (the day's end when the day is short). */
function refusal (decision: Decision, count: number, now: number): AppError {
  const { minute, day } = decision
  const at = decision.ban !== null || decision.code === 'api_key_banned'
    ? now + decision.retryAfterSeconds * 1000
    : day.remaining < count ? day.resetAt : minute.resetAt
  const seconds = Math.max(1, Math.ceil((at - now) / 1000))
  const { perMinute, perDay } = REPORTED_KEYS_QUOTA
  return new AppError('rate_limited', `a client address may report ${perMinute} keys a minute and ${perDay} a day; this report of ${count} does not fit in what is left: retry in ${seconds} s`, {
    headers: { 'retry-after': String(seconds) }
  })
}
