// The request log on SQLite (key-requests/key-requests.store.ts). A batch is one transaction of
// multi-row INSERTs, ROWS_PER_INSERT rows each, bound as parameters, in order, so ids grow with
// time. One statement through json_each cost 3.5 times as much: each `value ->> n` parses its
// row's JSON text again (11.5 against 3.2 ms of CPU for 1,000 rows, the flush of one key under a
// flood: docs/performance.md, "The request log"). Written through the writer (writer.ts), its
// commit's fsync off the event loop: committed on the connection directly, with
// synchronous=FULL, each flush and each prune waited for the disk on the event loop, every
// second, and that wait was most of the reads' p99 above bare's (docs/performance.md).
import type { SQLInputValue, StatementSync } from 'node:sqlite'
import type { KeyRequestStore } from '../../key-requests/key-requests.store.ts'
import {
  KEY_REQUEST_COLUMNS, keyRequestFilterSql, keyRequestValues, toKeyRequest, type KeyRequestRow
} from '../key-request-rows.ts'
import type { Db } from './database.ts'
import type { Writer } from './writer.ts'

/** Rows bound by one INSERT: 12 parameters each, 600 in all (SQLite allows 32,766). */
const ROWS_PER_INSERT = 50
/** Rows one prune statement deletes at most; the prune repeats it until fewer are left. */
export const PRUNE_ROWS = 1000

export function createSqliteKeyRequestStore (db: Db, writer: Writer): KeyRequestStore {
  // One statement per number of rows (1 to ROWS_PER_INSERT), prepared when first needed.
  const inserts = new Map<number, StatementSync>()
  const insertOf = (rows: number): StatementSync => {
    let statement = inserts.get(rows)
    if (statement === undefined) {
      statement = db.prepare(`INSERT INTO key_requests
        (key_id, at, method, route, operation_id, query, status, code, request_id, latency_ms, via, refusal)
        VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`)
      inserts.set(rows, statement)
    }
    return statement
  }
  // Beyond the key's newest `last`, and either not a refusal, an old one, or one past the newest
  // `refusalsMax`: the oldest PRUNE_ROWS of them, one writer's run each (a flooding key's 10,000
  // rows of ten seconds in one DELETE held the event loop 12 ms).
  const prune = db.prepare(`DELETE FROM key_requests WHERE id IN (SELECT id FROM key_requests WHERE key_id = :key
    AND id < coalesce((SELECT id FROM key_requests WHERE key_id = :key ORDER BY id DESC LIMIT 1 OFFSET :last), 0)
    AND (refusal IS NULL OR at < :since OR id < coalesce((SELECT id FROM key_requests
      WHERE key_id = :key AND refusal IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET :refusals), 0))
    ORDER BY id LIMIT :rows)`)
  const stale = db.prepare(`SELECT DISTINCT key_id FROM key_requests
    WHERE refusal IS NOT NULL AND at < ? LIMIT ?`)
  return {
    async append (records) {
      if (records.length === 0) return
      const rows = keyRequestValues(records)
      await writer.run(() => {
        for (let from = 0; from < rows.length; from += ROWS_PER_INSERT) {
          const chunk = rows.slice(from, from + ROWS_PER_INSERT)
          insertOf(chunk.length).run(...chunk.flat() as SQLInputValue[])
        }
      })
    },
    async list (keyId, filter, beforeId, limit) {
      const values: Array<string | number> = []
      const where = keyRequestFilterSql(keyId, filter, beforeId, (value) => { values.push(value); return '?' })
      const rows = db.prepare(`SELECT ${KEY_REQUEST_COLUMNS} FROM key_requests WHERE ${where} ORDER BY id DESC LIMIT ?`)
        .all(...values, limit)
      return (rows as unknown as KeyRequestRow[]).map(toKeyRequest)
    },
    async prune (keyId, bound) {
      const bind = {
        key: keyId, last: bound.last - 1, since: bound.refusalsSince, refusals: bound.refusalsMax - 1, rows: PRUNE_ROWS
      }
      let deleted = 0
      for (;;) {
        const part = await writer.run(() => Number(prune.run(bind).changes))
        deleted += part
        if (part < PRUNE_ROWS) return deleted
      }
    },
    async keysWithRefusalsBefore (before, max) {
      return (stale.all(before, max) as Array<{ key_id: number }>).map((r) => Number(r.key_id))
    }
  }
}
