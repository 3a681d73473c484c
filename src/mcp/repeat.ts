// The loop breaker (docs/api.md, "Agents"): the same tool with the same arguments, called more
// than `limit` times in one minute by one key, is refused before the limiter's escalation would
// ban the key. Bounded: at most MAX_ENTRIES calls are remembered in all (oldest dropped first),
// and an entry lives one fixed minute, so a flood of distinct calls costs a bounded map.
import { createHash } from 'node:crypto'
import type { Clock } from '../shared/clock.ts'

const MINUTE_MS = 60_000
const MAX_ENTRIES = 10_000

export interface RepeatGuard {
  /** Counts the call; null when it may go on, else how many there were and when the minute ends. */
  check (keyId: number, tool: string, canonicalArgs: string): { calls: number; retryAfter: number } | null
}

export function createRepeatGuard ({ limit, clock }: { limit: number; clock: Clock }): RepeatGuard {
  // Insertion order is age order: an entry is re-inserted when its minute starts again.
  const calls = new Map<string, { since: number; count: number }>()
  return {
    check (keyId, tool, canonicalArgs) {
      const now = clock.now()
      const id = `${keyId}\n${tool}\n${createHash('sha256').update(canonicalArgs).digest('base64url')}`
      let entry = calls.get(id)
      if (entry === undefined || now - entry.since >= MINUTE_MS) {
        calls.delete(id)
        entry = { since: now, count: 0 }
        calls.set(id, entry)
        if (calls.size > MAX_ENTRIES) calls.delete(calls.keys().next().value!)
      }
      entry.count += 1
      if (entry.count <= limit) return null
      return { calls: entry.count, retryAfter: Math.max(1, Math.ceil((entry.since + MINUTE_MS - now) / 1000)) }
    }
  }
}
