// The one Idempotency-Key step of every create that runs its work in TypeScript: replay the first
// result, else do the work, then remember its result, all inside the create's transaction. Each
// engine keeps only its bookkeeping (storage/sqlite/idempotency.ts, storage/postgres/idempotency.ts).
// PostgreSQL's placing of orders does the same step inside SQL (place_order and place_orders in
// storage/postgres/migrations.ts), so an order is one round trip; every other create calls this.
import type { Created, IdempotencyClaim } from '../shared/store.ts'

/** SQLite's claims: synchronous, inside the writer's transaction. */
export interface SyncClaims {
  /** The first result as JSON if the claim was used before (24 h, same request), else null; 409 for another request. */
  replay (claim: IdempotencyClaim): string | null
  /** Remember the result of the first use. */
  remember (claim: IdempotencyClaim, record: unknown): void
}

/** PostgreSQL's claims: the same two steps, each a statement of the create's transaction. */
export interface AsyncClaims {
  replay (claim: IdempotencyClaim): Promise<string | null>
  remember (claim: IdempotencyClaim, record: unknown): Promise<void>
}

/**
 * Replay, work, remember. Without a claim (no Idempotency-Key) it only does the work. With
 * synchronous claims and work it stays synchronous (SQLite's writer runs a write in one call,
 * never awaiting inside a transaction); with asynchronous ones it returns a promise.
 */
export function idempotentCreate<T> (
  claim: IdempotencyClaim | null,
  work: () => T,
  claims: SyncClaims
): Created<T>
export function idempotentCreate<T> (
  claim: IdempotencyClaim | null,
  work: () => Promise<T>,
  claims: AsyncClaims
): Promise<Created<T>>
export function idempotentCreate<T> (
  claim: IdempotencyClaim | null,
  work: () => T | Promise<T>,
  claims: SyncClaims | AsyncClaims
): Created<T> | Promise<Created<T>> {
  const created = (record: T): Created<T> => ({ record, replayed: false })
  if (claim === null) return then(work(), created)
  return then(claims.replay(claim), (first): Created<T> | Promise<Created<T>> => {
    if (first !== null) return { record: JSON.parse(first) as T, replayed: true }
    return then(work(), (record) => then(claims.remember(claim, record), () => created(record)))
  })
}

/** next(value) now when value is plain, after it when it is a promise: one step for both kinds of engine. */
function then<A, B> (value: A | Promise<A>, next: (value: A) => B | Promise<B>): B | Promise<B> {
  return value instanceof Promise ? value.then(next) : next(value)
}
