// The audit log on SQLite (audit/audit.store.ts): the one append every audited change goes
// through (the event log's, events.ts, and the webhook store's endpoint changes), inside the
// writer's callback, and the port's reads. One connection and one writer serialize every append
// already; audit_head is still read and updated in the append's transaction, so a second process
// (the CLI) appending to the same file keeps the chain too.
import { auditDraftsOf, nextEntry, type AuditedChange } from '../../audit/audit.rules.ts'
import type { AuditHead, AuditStore } from '../../audit/audit.store.ts'
import type { ActorContext } from '../../shared/actor-context.ts'
import { auditFilterSql, toAuditEntry, AUDIT_COLUMNS, type AuditRow } from '../audit-rows.ts'
import type { Db } from './database.ts'

/**
 * The audit door: appends the entries of `change` (audit.rules.ts, auditDraftsOf), made by `by`
 * at `at`; call it in the change's transaction.
 */
export type SqliteAuditAppend = (change: AuditedChange, at: number, by: ActorContext) => void

export function createSqliteAuditAppend (db: Db): SqliteAuditAppend {
  const head = db.prepare('SELECT count, hash FROM audit_head WHERE id = 1')
  const insert = db.prepare(`INSERT INTO audit_log (id, at, actor_type, actor_key_id, actor_role, actor_user, actor_via, action, target_type, target_id, request_id, address, changes, hash)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  const move = db.prepare('UPDATE audit_head SET count = ?, hash = ? WHERE id = 1')
  return (change, at, by) => {
    const entries = auditDraftsOf(change, at, by)
    if (entries.length === 0) return
    let last = head.get() as unknown as AuditHead
    for (const draft of entries) {
      const entry = nextEntry({ count: Number(last.count), hash: last.hash }, draft)
      const { actor } = entry
      insert.run(
        entry.id,
        entry.at,
        actor.type,
        actor.type === 'key' ? actor.keyId : null,
        actor.type === 'key' ? actor.role : null,
        actor.type === 'cli' ? actor.user : null,
        actor.type === 'key' ? actor.via ?? null : null,
        entry.action,
        entry.target.type,
        entry.target.id,
        entry.requestId,
        entry.address,
        JSON.stringify(entry.changes),
        entry.hash
      )
      last = { count: entry.id, hash: entry.hash }
    }
    move.run(last.count, last.hash)
  }
}

export function createSqliteAuditStore (db: Db): AuditStore {
  const head = db.prepare('SELECT count, hash FROM audit_head WHERE id = 1')
  const walk = db.prepare(`SELECT ${AUDIT_COLUMNS} FROM audit_log ORDER BY id`)
  const readHead = (): AuditHead => {
    const row = head.get() as unknown as AuditHead
    return { count: Number(row.count), hash: row.hash }
  }
  return {
    async listAudit (filter, beforeId, limit) {
      const values: Array<string | number> = []
      const where = auditFilterSql(filter, beforeId, (value) => { values.push(value); return '?' })
      const rows = db.prepare(`SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE ${where} ORDER BY id DESC LIMIT ?`).all(...values, limit)
      return (rows as unknown as AuditRow[]).map(toAuditEntry)
    },
    async auditHead () {
      return readHead()
    },
    async walkAudit (visit) {
      // One read transaction: the rows and the head of one moment, whatever another process
      // appends meanwhile. Synchronous from BEGIN to COMMIT, so no write of this connection
      // can fall inside it.
      db.exec('BEGIN')
      try {
        for (const row of walk.iterate()) if (!visit(toAuditEntry(row as unknown as AuditRow))) break
        return readHead()
      } finally {
        db.exec('COMMIT')
      }
    }
  }
}
