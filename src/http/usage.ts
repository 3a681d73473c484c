// Usage per key (access/usage.ts) and near-limit counts, taken from each finished response under
// /v1: the status decides how a request counts, so this runs once the answer is known.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { UsageOutcome, UsageRecorder } from '../access/usage.ts'
import type { Decision } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import { routeConfigOf } from './route-config.ts'

export interface UsageHookOptions {
  recorder: UsageRecorder
  clock: Clock
  /** An allowed request left less than NEAR_LIMIT_SHARE of a window (ratelimit_near_limit_total). */
  onNearLimit?: (window: 'minute' | 'day') => void
}

/** "Near the limit": fewer than 10% of the window's requests left after this one. */
export const NEAR_LIMIT_SHARE = 0.1

/** How a finished request counts for its key; null: not counted (a 5xx), only a use. */
export function usageOutcome (status: number, decision: Pick<Decision, 'code'> | null): UsageOutcome | null {
  if (status === 429) return decision?.code === 'api_key_banned' ? 'banned' : 'limited'
  return status < 500 ? 'allowed' : null
}

export function installUsageRecording (app: FastifyInstance, options: UsageHookOptions): void {
  const { recorder, clock, onNearLimit } = options
  app.addHook('onResponse', (request, reply, done) => {
    const decision = request.rateLimit
    if (decision !== null) {
      const principal = request.principal
      // Only requests made with a valid key count for it (a 401 has no key to count for).
      if (principal !== null) recorder.record(principal.keyId, usageOutcome(reply.statusCode, decision), clock.now())
      if (onNearLimit !== undefined && decision.allowed && charged(request)) {
        if (decision.minute.remaining < decision.minute.limit * NEAR_LIMIT_SHARE) onNearLimit('minute')
        if (decision.day.remaining < decision.day.limit * NEAR_LIMIT_SHARE) onNearLimit('day')
      }
    }
    done()
  })
}

/**
 * Preflights, and GET /rate_limit with a valid key, are answered from a peek: they left the
 * windows as they were (the same rule as access/access.service.ts).
 */
const charged = (request: FastifyRequest): boolean => {
  const config = routeConfigOf(request)
  return !(request.method === 'OPTIONS' && config.role === undefined) && (config.quota !== 'free' || request.principal === null)
}
