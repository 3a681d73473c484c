// Idempotency-Key bookkeeping for PostgreSQL, used inside a create's transaction by the one
// idempotency step (storage/idempotency.ts); placing an order does the same inside SQL (orders.ts).
//
// The claim row is inserted first, with INSERT ... ON CONFLICT DO NOTHING. A concurrent second
// use of the same key then blocks on the primary key until the first transaction ends: if it
// committed, the second finds its row and replays the result (or refuses another request);
// if it rolled back, the second's insert goes through and it does the work itself. So a key
// creates at most one record however many requests race with it.
import { IDEMPOTENCY_TTL_MS, type IdempotencyClaim } from '../../shared/store.ts'
import { claimExpired, replayOf } from '../checks.ts'
import type { AsyncClaims } from '../idempotency.ts'
import type { Db, Tx } from './database.ts'

export interface PostgresIdempotency {
  /**
   * The claims as seen from inside one create's transaction, for the idempotency step
   * (storage/idempotency.ts). replay: the first result as JSON when the claim was used before
   * (within 24 h, same fingerprint), else null and the claim is now this transaction's; throws
   * idempotency_key_reused for the same key with another request. remember: record the result
   * of the first use in the claim's row.
   */
  within (tx: Tx): AsyncClaims
  /** After the commit, now and then: drop expired claims. Never fails the request. */
  purge (now: number): Promise<void>
}

const PURGE_EVERY_MS = 60 * 60 * 1000

export function createPostgresIdempotency (db: Db): PostgresIdempotency {
  let lastPurge = 0

  async function claimIn (tx: Tx, claim: IdempotencyClaim): Promise<string | null> {
    // Twice at most: the row we conflicted with may vanish (purged) before we lock it.
    for (let attempt = 0; attempt < 2; attempt++) {
      const inserted = await tx.query(
        `INSERT INTO idempotency_keys (scope, key, fingerprint, response, created_at) VALUES ($1, $2, $3, '', $4)
         ON CONFLICT (scope, key) DO NOTHING RETURNING 1 AS claimed`,
        [claim.scope, claim.key, claim.fingerprint, claim.now])
      if (inserted.length === 1) return null
      const row = await tx.first<{ fingerprint: string; response: string; created_at: number }>(
        'SELECT fingerprint, response, created_at FROM idempotency_keys WHERE scope = $1 AND key = $2 FOR UPDATE',
        [claim.scope, claim.key])
      if (row === undefined) continue
      if (claimExpired(row, claim)) {
        // Expired: as if absent. The row is locked, so this transaction takes it over.
        await tx.query(
          `UPDATE idempotency_keys SET fingerprint = $3, response = '', created_at = $4 WHERE scope = $1 AND key = $2`,
          [claim.scope, claim.key, claim.fingerprint, claim.now])
        return null
      }
      return replayOf(row, claim)
    }
    throw new Error('idempotency claim kept vanishing') // not reachable in practice: a logged 500
  }

  return {
    within (tx) {
      return {
        replay: (claim) => claimIn(tx, claim),
        async remember (claim, record) {
          await tx.query('UPDATE idempotency_keys SET response = $3 WHERE scope = $1 AND key = $2', [claim.scope, claim.key, JSON.stringify(record)])
        }
      }
    },

    async purge (now) {
      // Expired claims are dropped now and then, on the write path, so the table stays small
      // without a timer; outside the create's transaction so it never holds up a request's locks.
      if (now - lastPurge <= PURGE_EVERY_MS) return
      lastPurge = now
      await db.query('DELETE FROM idempotency_keys WHERE created_at < $1', [now - IDEMPOTENCY_TTL_MS]).catch(() => {})
    }
  }
}
