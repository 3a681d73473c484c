// Idempotency-Key bookkeeping for SQLite, used inside a store method's transaction by the one
// idempotency step (storage/idempotency.ts: replay, work, remember).
import { IDEMPOTENCY_TTL_MS } from '../../shared/store.ts'
import { claimExpired, replayOf } from '../checks.ts'
import type { SyncClaims } from '../idempotency.ts'
import type { Db } from './database.ts'

/** Inside a writer transaction: replay a claim used before, remember a first use's result. */
export type SqliteIdempotency = SyncClaims

export function createSqliteIdempotency (db: Db): SqliteIdempotency {
  const find = db.prepare('SELECT fingerprint, response, created_at FROM idempotency_keys WHERE scope = ? AND key = ?')
  const forget = db.prepare('DELETE FROM idempotency_keys WHERE scope = ? AND key = ?')
  const insert = db.prepare('INSERT INTO idempotency_keys (scope, key, fingerprint, response, created_at) VALUES (?, ?, ?, ?, ?)')
  const purge = db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?')
  let lastPurge = 0

  return {
    replay (claim) {
      const row = find.get(claim.scope, claim.key) as {
        fingerprint: string
        response: string
        created_at: number
      } | undefined
      if (row === undefined) return null
      if (claimExpired(row, claim)) {
        forget.run(claim.scope, claim.key)
        return null
      }
      return replayOf(row, claim)
    },
    remember (claim, response) {
      insert.run(claim.scope, claim.key, claim.fingerprint, JSON.stringify(response), claim.now)
      // Expired claims are dropped now and then, on the write path, so the table stays small
      // without a timer.
      if (claim.now - lastPurge > 60 * 60 * 1000) {
        lastPurge = claim.now
        purge.run(claim.now - IDEMPOTENCY_TTL_MS)
      }
    }
  }
}
