// The events the usage flush writes (docs/product.md, events): quota.threshold when a key's day
// count passes 80, 95 and 100% of its day quota, and deprecation.used the first time in a UTC day
// that a key calls a deprecated operation. Each is written once per quota identity and day (and
// operation), even across instances and restarts: the engines remember what was announced in
// `usage_notices` (level: the highest threshold written, or 1 once a deprecation was), in the
// transaction that adds the counts, and ask here what a new count announces.
import { quotaOf } from '../accounts/keys.rules.ts'
import type { DeprecationFacts, KeyRecord, UsageBatch } from '../accounts/keys.store.ts'
import { eventDraft, type EventDraft } from './catalogue.ts'

/** The shares of the day quota announced, in percent. */
export const QUOTA_THRESHOLDS = [80, 95, 100] as const

/** What one (quota identity, day[, operation]) stands at inside the flush's transaction. */
export interface NoticeState {
  /** The quota identity: the first key of the rotation chain. */
  keyId: number
  day: string
  /** 'quota', or 'deprecation' with the operation's id. */
  kind: 'quota' | 'deprecation'
  operation: string
  /** What was announced already: the highest threshold written (0: none), or 1 once deprecation.used was. */
  level: number
  /** The chain's count that day, this flush's included: allowed requests, or calls of the operation. */
  count: number
  /** The identity's plan and quotas (the chain shares them). */
  key: Pick<KeyRecord, 'plan' | 'perMinute' | 'perDay'>
}

/** The day quota events are measured against; null for an enterprise key without one (no quota.threshold). */
export function dayLimitOf (key: Pick<KeyRecord, 'plan' | 'perMinute' | 'perDay'>): number | null {
  if (key.plan === 'enterprise' && key.perDay === null) return null
  return quotaOf(key).perDay
}

/** The events a state announces now, and the level to remember (the same when nothing is new). */
export function noticesOf (
  state: NoticeState,
  deprecations: Readonly<Record<string, DeprecationFacts>>
): { level: number; drafts: EventDraft[] } {
  if (state.kind === 'deprecation') {
    if (state.level >= 1 || state.count < 1) return { level: state.level, drafts: [] }
    const facts = deprecations[state.operation]
    const data = {
      keyId: state.keyId,
      operationId: state.operation,
      sunset: facts === undefined || facts.sunset === null ? null : new Date(facts.sunset).toISOString(),
      successor: facts?.successor ?? null,
      calls: state.count,
      day: state.day
    }
    return { level: 1, drafts: [eventDraft('deprecation.used', state.keyId, data)] }
  }
  const limit = dayLimitOf(state.key)
  if (limit === null || limit <= 0) return { level: state.level, drafts: [] }
  // Integers only: used / limit >= p / 100 without rounding.
  const passed = QUOTA_THRESHOLDS.filter((p) => p > state.level && state.count * 100 >= p * limit)
  return {
    level: passed.at(-1) ?? state.level,
    drafts: passed.map((percent) =>
      eventDraft('quota.threshold', state.keyId, { keyId: state.keyId, window: 'day', limit, used: state.count, percent }))
  }
}

/**
 * What a flush may announce: each (key, day) whose allowed count grew, each deprecated call row;
 * by the key presented (the engine finds its identity).
 */
export function noticeTargets (batch: UsageBatch): Array<{ keyId: number; day: string; kind: 'quota' | 'deprecation'; operation: string }> {
  return [
    ...batch.counts
      .filter((c) => c.allowed > 0)
      .map((c) => ({ keyId: c.keyId, day: c.day, kind: 'quota' as const, operation: '' })),
    ...(batch.deprecated ?? [])
      .filter((d) => d.calls > 0)
      .map((d) => ({ keyId: d.keyId, day: d.day, kind: 'deprecation' as const, operation: d.operation }))
  ]
}

/** Whether nothing more can be announced at this level (100% written, or the deprecation announced). */
export const isComplete = (kind: 'quota' | 'deprecation', level: number): boolean => level >= (kind === 'quota' ? 100 : 1)

/** The date of the events of a flush: its instant, else the latest use it carries. */
export const noticeInstant = (batch: UsageBatch): number =>
  batch.now ?? Math.max(0, ...batch.lastUsed.map((u) => u.at), ...(batch.deprecated ?? []).map((d) => d.lastCallAt))
