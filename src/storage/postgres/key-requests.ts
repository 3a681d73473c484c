// The request log on PostgreSQL (key-requests/key-requests.store.ts). A batch is ONE statement
// whatever its size: the rows travel as one JSON array, unrolled in order (WITH ORDINALITY), so
// ids grow with time. JSON, not an array per column: pg writes each array as a literal in
// JavaScript, element by element, 2.9 ms of the API's CPU for 1,000 rows (a flooding key's flush
// each second) against 0.7 for JSON.stringify (docs/performance.md, "The request log").
import type { KeyRequestStore } from '../../key-requests/key-requests.store.ts'
import {
  KEY_REQUEST_COLUMNS, keyRequestFilterSql, keyRequestValues, toKeyRequest, type KeyRequestRow
} from '../key-request-rows.ts'
import type { Db } from './database.ts'

/** The columns of a batch, in keyRequestValues' order, with their types. */
const TYPES = ['bigint', 'bigint', 'text', 'text', 'text', 'text', 'integer', 'text', 'text', 'float8', 'text', 'text']

const APPEND_SQL = `INSERT INTO key_requests
  (key_id, at, method, route, operation_id, query, status, code, request_id, latency_ms, via, refusal)
  SELECT ${TYPES.map((type, i) => `(r ->> ${i})::${type}`).join(', ')}
  FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS batch(r, n) ORDER BY n`

export function createPostgresKeyRequestStore (db: Db): KeyRequestStore {
  return {
    async append (records) {
      if (records.length === 0) return
      await db.query(APPEND_SQL, [JSON.stringify(keyRequestValues(records))])
    },
    async list (keyId, filter, beforeId, limit) {
      const params: unknown[] = []
      const where = keyRequestFilterSql(keyId, filter, beforeId, (value) => {
        params.push(value)
        return `$${params.length}`
      })
      params.push(limit)
      return (await db.query<KeyRequestRow & Record<string, unknown>>(
        `SELECT ${KEY_REQUEST_COLUMNS} FROM key_requests WHERE ${where} ORDER BY id DESC LIMIT $${params.length}`,
        params
      )).map(toKeyRequest)
    },
    async prune (keyId, bound) {
      const rows = await db.query<{ n: string }>(`WITH gone AS (DELETE FROM key_requests WHERE key_id = $1
        AND id < coalesce((SELECT id FROM key_requests WHERE key_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2), 0)
        AND (refusal IS NULL OR at < $3 OR id < coalesce((SELECT id FROM key_requests
          WHERE key_id = $1 AND refusal IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET $4), 0))
        RETURNING 1) SELECT count(*) AS n FROM gone`, [keyId, bound.last - 1, bound.refusalsSince, bound.refusalsMax - 1])
      return Number(rows[0]?.n ?? 0)
    },
    async keysWithRefusalsBefore (before, max) {
      const rows = await db.query<{ key_id: string }>(
        'SELECT DISTINCT key_id FROM key_requests WHERE refusal IS NOT NULL AND at < $1 LIMIT $2', [before, max])
      return rows.map((r) => Number(r.key_id))
    }
  }
}
