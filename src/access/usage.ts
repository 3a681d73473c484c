// Usage per key and UTC day, and each key's lastUsedAt, without a database write per request
// (docs/product.md section 9). Requests are counted in memory; a flush every
// USAGE_FLUSH_INTERVAL_MS (the usage-flush job, jobs/usage-flush.ts) adds the counts to the
// database in one transaction (a few statements, whatever the traffic). Counts are added, never
// set, so instances flush independently and the database holds the sum of them all.
//
// Calls of deprecated operations (the console's deprecation view) ride the same flush: counted
// per operation, key and UTC day in memory, written in the same transaction as the usage. So do
// the events the new counts announce (quota.threshold, deprecation.used: events/usage-events.ts),
// which the store appends in that transaction, once per quota identity and day.
//
// What may be lost: a graceful stop flushes (the job's run at stop), so nothing is lost then. A
// crash (SIGKILL, power loss) loses what this instance counted since its last flush: at most one
// interval's worth. A flush the database refuses keeps its counts for the next attempt.
import { DAY_MS, type Decision } from '../ratelimit/limiter.ts'
import { utcDay } from '../accounts/keys.rules.ts'
import type { DeprecatedCallRow, DeprecationFacts, KeyStore, UsageRow } from '../accounts/keys.store.ts'
import type { Clock } from '../shared/clock.ts'
import type { DeprecatedOperation } from '../shared/deprecation.ts'

/** Well within the 5 seconds the product allows before counts and lastUsedAt reach the database. */
export const USAGE_FLUSH_INTERVAL_MS = 2000

/**
 * allowed: charged to the key's windows (the limiter let it through), whatever the answer;
 * other4xx: allowed too, and answered 4xx (validation, not found, conflict, role, scope, sunset):
 * counted in both, so `allowed` stays what the windows charged and the portal's chart draws
 * allowed - other4xx, other4xx, limited and banned, each request in exactly one bar;
 * limited: 429 rate_limited; banned: 429 api_key_banned.
 */
export type UsageOutcome = 'allowed' | 'other4xx' | 'limited' | 'banned'

/**
 * How a finished request counts for its key; null: not counted, only a use. `allowed` is what the
 * limiter charged, so that a key's day of usage is its day window's `used` (the console shows
 * both side by side), the day count put back from it after the limiter lost its state
 * (day-seed.ts) is the one lost, and quota.threshold measures what the quota measures (issue 49:
 * "Allowed 54" beside "day window used 35"). So a request answered from a peek is not counted (a
 * free operation such as GET /rate_limit, a banned key's free reads of itself), and a charged one
 * is, a 5xx included (the windows do not give it back).
 */
export function usageOutcome (
  status: number, decision: Pick<Decision, 'code'> | null, charged: boolean
): UsageOutcome | null {
  if (status === 429) return decision?.code === 'api_key_banned' ? 'banned' : 'limited'
  if (!charged) return null
  // A free call answered 4xx stays uncounted, as every free call: the bars count what was charged.
  return status >= 400 && status < 500 ? 'other4xx' : 'allowed'
}

/** "Near the limit": fewer than 10% of the window's requests left after this one (ratelimit_near_limit_total). */
export const NEAR_LIMIT_SHARE = 0.1

export interface UsageRecorder {
  /**
   * One request made with the key at `now`: counted under `outcome` (other4xx: under allowed
   * too), or only marking the key as used when the outcome is null (a free call is none of them).
   * `viaMcp`: an agent made it through the MCP endpoint; it is counted in `mcp` too. Memory only;
   * never awaits.
   */
  record (keyId: number, outcome: UsageOutcome | null, now: number, viaMcp?: boolean): void
  /** One call of a deprecated operation (its operationId) with the key at `now`. Memory only. */
  recordDeprecated (operation: string, keyId: number, now: number): void
  /** The key's latest use counted here and not yet in the database, if any. */
  lastUsedAt (keyId: number): number | null
  /**
   * The deprecated operations as the routes declare them (the `deprecations` option; none
   * without it): a key holder's usage view names their successor and sunset from here.
   */
  deprecatedOperations (): readonly DeprecatedOperation[]
  /** Writes what is pending now (one store call); flushes never overlap. */
  flush (): Promise<void>
}

export interface UsageRecorderOptions {
  /**
   * The flush's instant dates the events it writes (quota.threshold, deprecation.used); without
   * it, the latest use in the batch does.
   */
  clock?: Clock
  /** The deprecated operations as the routes declare them: their sunset and successor go into deprecation.used. */
  deprecations?: () => readonly DeprecatedOperation[]
}

/** The facts deprecation.used names, by operationId, for the operations a flush carries calls of. */
function factsOf (
  operations: readonly DeprecatedOperation[],
  called: ReadonlySet<string>
): Record<string, DeprecationFacts> {
  const facts: Record<string, DeprecationFacts> = {}
  for (const op of operations) {
    if (!called.has(op.operationId)) continue
    facts[op.operationId] = {
      sunset: op.sunsetAt?.getTime() ?? null,
      successor: op.successor === undefined ? null : `${op.successor.method} ${op.successor.path}`
    }
  }
  return facts
}

export function createUsageRecorder (keys: KeyStore, options: UsageRecorderOptions = {}): UsageRecorder {
  // Pending counts by UTC day, then key id: a request costs two map lookups, no string built.
  let counts = new Map<string, Map<number, UsageRow>>()
  let lastUsed = new Map<number, number>()
  // Deprecated calls by operation, key and day: three lookups, no string built per call (a
  // deprecated operation is called on every request of its clients: docs/performance.md).
  let deprecated = new Map<string, Map<number, Map<string, DeprecatedCallRow>>>()
  // The day of the last deprecated call: one Date per UTC day, not per call.
  let deprecatedDayIndex = -1
  let deprecatedDayText = ''
  // Taken by the flush in progress: still reported by lastUsedAt until it is written.
  let writing = new Map<number, number>()
  let queue: Promise<void> = Promise.resolve()
  // The last day seen and its map: one Date per UTC day, not per request.
  let dayIndex = -1
  let dayText = ''
  let today: Map<number, UsageRow> | null = null

  function rowOf (day: string, keyId: number): UsageRow {
    let byKey = counts.get(day)
    if (byKey === undefined) { byKey = new Map(); counts.set(day, byKey) }
    let row = byKey.get(keyId)
    if (row === undefined) { row = { keyId, day, allowed: 0, limited: 0, banned: 0 }; byKey.set(keyId, row) }
    return row
  }

  function addDeprecated (operation: string, keyId: number, day: string, calls: number, at: number): void {
    let byKey = deprecated.get(operation)
    if (byKey === undefined) deprecated.set(operation, byKey = new Map())
    let byDay = byKey.get(keyId)
    if (byDay === undefined) byKey.set(keyId, byDay = new Map())
    const row = byDay.get(day)
    if (row === undefined) byDay.set(day, { operation, keyId, day, calls, lastCallAt: at })
    else {
      row.calls += calls
      if (row.lastCallAt < at) row.lastCallAt = at
    }
  }

  async function write (): Promise<void> {
    if (counts.size === 0 && lastUsed.size === 0 && deprecated.size === 0) return
    const batch = counts
    const calls = [...deprecated.values()]
      .flatMap((byKey) => [...byKey.values()].flatMap((byDay) => [...byDay.values()]))
    writing = lastUsed
    counts = new Map()
    lastUsed = new Map()
    deprecated = new Map()
    today = null
    dayIndex = -1
    const rows = [...batch.values()].flatMap((byKey) => [...byKey.values()])
    try {
      const deprecations = calls.length === 0
        ? {}
        : factsOf(options.deprecations?.() ?? [], new Set(calls.map((c) => c.operation)))
      await keys.recordUsage({
        counts: rows,
        lastUsed: [...writing].map(([keyId, at]) => ({ keyId, at })),
        ...(options.clock !== undefined && { now: options.clock.now() }),
        ...(calls.length > 0 && { deprecated: calls, deprecations })
      })
    } catch (error) {
      // Nothing of the batch was written (one transaction): keep it for the next flush.
      for (const r of rows) {
        const row = rowOf(r.day, r.keyId)
        row.allowed += r.allowed; row.limited += r.limited; row.banned += r.banned
        if (r.mcp !== undefined) row.mcp = (row.mcp ?? 0) + r.mcp
        if (r.other4xx !== undefined) row.other4xx = (row.other4xx ?? 0) + r.other4xx
      }
      for (const [keyId, at] of writing) if ((lastUsed.get(keyId) ?? -Infinity) < at) lastUsed.set(keyId, at)
      for (const c of calls) addDeprecated(c.operation, c.keyId, c.day, c.calls, c.lastCallAt)
      throw error
    } finally {
      writing = new Map()
    }
  }

  function flush (): Promise<void> {
    const next = queue.then(write)
    queue = next.catch(() => {})
    return next
  }

  return {
    record (keyId, outcome, now, viaMcp = false) {
      if ((lastUsed.get(keyId) ?? -Infinity) < now) lastUsed.set(keyId, now)
      if (outcome === null) return
      const index = Math.floor(now / DAY_MS)
      if (index !== dayIndex || today === null) {
        dayIndex = index
        dayText = utcDay(now)
        today = counts.get(dayText) ?? new Map()
        counts.set(dayText, today)
      }
      let row = today.get(keyId)
      if (row === undefined) {
        row = { keyId, day: dayText, allowed: 0, limited: 0, banned: 0 }
        today.set(keyId, row)
      }
      if (outcome === 'other4xx') {
        row.allowed++
        row.other4xx = (row.other4xx ?? 0) + 1
      } else row[outcome]++
      if (viaMcp) row.mcp = (row.mcp ?? 0) + 1
    },
    recordDeprecated (operation, keyId, now) {
      const index = Math.floor(now / DAY_MS)
      if (index !== deprecatedDayIndex) {
        deprecatedDayIndex = index
        deprecatedDayText = utcDay(now)
      }
      addDeprecated(operation, keyId, deprecatedDayText, 1, now)
    },
    lastUsedAt (keyId) {
      const pending = lastUsed.get(keyId)
      const inFlight = writing.get(keyId)
      if (pending === undefined) return inFlight ?? null
      return inFlight === undefined || pending > inFlight ? pending : inFlight
    },
    deprecatedOperations: () => options.deprecations?.() ?? [],
    flush
  }
}
