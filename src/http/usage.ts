// Usage per key (access/usage.ts) and near-limit counts, taken from each finished response under
// /v1: the status decides how a request counts, so this runs once the answer is known.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { NEAR_LIMIT_SHARE, usageOutcome, type UsageRecorder } from '../access/usage.ts'
import { viaMcp } from '../shared/channel.ts'
import type { Clock } from '../shared/clock.ts'

export interface UsageHookOptions {
  recorder: UsageRecorder
  clock: Clock
  /** An allowed request left less than NEAR_LIMIT_SHARE of a window (ratelimit_near_limit_total). */
  onNearLimit?: (window: 'minute' | 'day') => void
}

/** The usage step of the pipeline's response step (http/pipeline.ts). */
export function usageStep (options: UsageHookOptions): (request: FastifyRequest, reply: FastifyReply) => void {
  const { recorder, clock, onNearLimit } = options
  return (request, reply) => {
    const decision = request.rateLimit
    if (decision !== null) {
      const principal = request.principal
      // Only requests made with a valid key count for it (a 401 has no key to count for).
      // A tool call of the MCP endpoint is a request of its own, marked by the process's secret header.
      if (principal !== null) {
        const outcome = usageOutcome(reply.statusCode, decision, request.charged)
        recorder.record(principal.keyId, outcome, clock.now(), viaMcp(request.headers))
      }
      // A request answered from a peek (not charged) left the windows as they were.
      if (onNearLimit !== undefined && decision.allowed && request.charged) {
        if (decision.minute.remaining < decision.minute.limit * NEAR_LIMIT_SHARE) onNearLimit('minute')
        if (decision.day.remaining < decision.day.limit * NEAR_LIMIT_SHARE) onNearLimit('day')
      }
    }
  }
}
