// The request log on SQLite (key-requests/key-requests.store.ts). A batch is ONE statement
// whatever its size: the rows travel as one JSON array and json_each unrolls them, in order, so
// ids grow with time. Written on the connection directly, like the usage flush: the log is not
// the writer's kind of change (nothing is answered after it), and a batch is one short statement.
import type { KeyRequestStore } from '../../key-requests/key-requests.store.ts'
import {
  KEY_REQUEST_COLUMNS, keyRequestFilterSql, keyRequestValues, toKeyRequest, type KeyRequestRow
} from '../key-request-rows.ts'
import { transaction, type Db } from './database.ts'

export function createSqliteKeyRequestStore (db: Db): KeyRequestStore {
  const insert = db.prepare(`INSERT INTO key_requests
    (key_id, at, method, route, operation_id, query, status, code, request_id, latency_ms, via, refusal)
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7,
      value ->> 8, value ->> 9, value ->> 10, value ->> 11
    FROM json_each(?) ORDER BY key`)
  // Beyond the key's newest `last`, and either not a refusal, an old one, or one past the newest `refusalsMax`.
  const prune = db.prepare(`DELETE FROM key_requests WHERE key_id = :key
    AND id < coalesce((SELECT id FROM key_requests WHERE key_id = :key ORDER BY id DESC LIMIT 1 OFFSET :last), 0)
    AND (refusal IS NULL OR at < :since OR id < coalesce((SELECT id FROM key_requests
      WHERE key_id = :key AND refusal IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET :refusals), 0))`)
  const stale = db.prepare(`SELECT DISTINCT key_id FROM key_requests
    WHERE refusal IS NOT NULL AND at < ? LIMIT ?`)
  return {
    async append (records) {
      if (records.length === 0) return
      const rows = JSON.stringify(keyRequestValues(records))
      transaction(db, () => { insert.run(rows) })
    },
    async list (keyId, filter, beforeId, limit) {
      const values: Array<string | number> = []
      const where = keyRequestFilterSql(keyId, filter, beforeId, (value) => { values.push(value); return '?' })
      const rows = db.prepare(`SELECT ${KEY_REQUEST_COLUMNS} FROM key_requests WHERE ${where} ORDER BY id DESC LIMIT ?`)
        .all(...values, limit)
      return (rows as unknown as KeyRequestRow[]).map(toKeyRequest)
    },
    async prune (keyId, bound) {
      return transaction(db, () => Number(prune.run({
        key: keyId, last: bound.last - 1, since: bound.refusalsSince, refusals: bound.refusalsMax - 1
      }).changes))
    },
    async keysWithRefusalsBefore (before, max) {
      return (stale.all(before, max) as Array<{ key_id: number }>).map((r) => Number(r.key_id))
    }
  }
}
