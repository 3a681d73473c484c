// Types shared by the store ports. Every engine (storage/sqlite, storage/postgres) implements
// the ports with its own SQL; services depend on the ports only.

/**
 * A record as stored: the public fields plus `version`, which grows by one on every change of
 * the row and is the ETag. Versions make If-Match one conditional UPDATE in every engine.
 */
export type Versioned<T> = T & { version: number }

/** Keyset pagination: `afterId` is the last id of the previous page; lists run in id order. */
export interface PageRequest { afterId: number | null; limit: number }

/**
 * An Idempotency-Key use (Stripe's semantics). `scope` is the caller's API key id, so two
 * callers never see each other's keys; `fingerprint` hashes the operation and the body, so the
 * same key with another request is refused. Claims live 24 hours.
 */
export interface IdempotencyClaim {
  scope: string
  key: string
  fingerprint: string
  /** epoch ms of the request, from the app's clock */
  now: number
}

/** Result of a create that honours Idempotency-Key: `replayed` when the first result is returned again. */
export interface Created<T> { record: T; replayed: boolean }

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/**
 * An If-Match precondition: null when the request had none (or `*`, which only asks that the
 * record exists), else the versions its strong ETags name. An empty list (only weak or
 * unparseable tags) matches nothing, as RFC 9110's strong comparison requires.
 */
export type IfMatch = readonly number[] | null

export function matchesVersion (ifMatch: IfMatch, version: number): boolean {
  return ifMatch === null || ifMatch.includes(version)
}
