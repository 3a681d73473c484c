// The audit log on PostgreSQL (audit/audit.store.ts): the one append every audited change goes
// through (appendEvents's, events.ts, and the webhook store's endpoint changes) in the change's
// transaction, and the port's reads. Appends from every connection of every instance are
// serialized by the lock on the one audit_head row (FOR UPDATE), taken at the end of the
// change's transaction and held to its commit: each entry is numbered and hashed after the one
// committed before it, so the chain never forks.
import { auditDraftsOf, nextEntry, type AuditedChange } from '../../audit/audit.rules.ts'
import type { AuditHead, AuditStore } from '../../audit/audit.store.ts'
import { auditFilterSql, toAuditEntry, AUDIT_COLUMNS, type AuditRow } from '../audit-rows.ts'
import type { Db, Tx } from './database.ts'

/** The walk reads the log in pages of this many entries. */
const WALK_PAGE = 1000

/**
 * The audit door: appends the entries of `change` (audit.rules.ts, auditDraftsOf) in `tx`, the
 * change's transaction, made by its actor (`tx.actor`) at `at`.
 */
export async function appendAudit (tx: Tx, change: AuditedChange, at: number): Promise<void> {
  const entries = auditDraftsOf(change, at, tx.actor)
  if (entries.length === 0) return
  const row = await tx.first<{ count: string; hash: string }>('SELECT count, hash FROM audit_head WHERE id = 1 FOR UPDATE')
  let head: AuditHead = { count: Number(row?.count ?? 0), hash: row?.hash ?? '' }
  const made = entries.map((draft) => {
    const entry = nextEntry(head, draft)
    head = { count: entry.id, hash: entry.hash }
    return entry
  })
  const column = <T>(pick: (entry: typeof made[number]) => T): T[] => made.map(pick)
  const keyActor = (entry: typeof made[number]) => entry.actor.type === 'key' ? entry.actor : null
  await tx.query(
    `WITH moved AS (UPDATE audit_head SET count = $14, hash = $15 WHERE id = 1)
     INSERT INTO audit_log (id, at, actor_type, actor_key_id, actor_role, actor_user, action, target_type, target_id, request_id, address, changes, hash, actor_via)
     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $16::text[])`,
    [
      column((e) => e.id),
      column((e) => e.at),
      column((e) => e.actor.type),
      column((e) => keyActor(e)?.keyId ?? null),
      column((e) => keyActor(e)?.role ?? null),
      column((e) => e.actor.type === 'cli' ? e.actor.user : null),
      column((e) => e.action),
      column((e) => e.target.type),
      column((e) => e.target.id),
      column((e) => e.requestId),
      column((e) => e.address),
      column((e) => JSON.stringify(e.changes)),
      column((e) => e.hash),
      head.count,
      head.hash,
      column((e) => keyActor(e)?.via ?? null)
    ])
}

export function createPostgresAuditStore (db: Db): AuditStore {
  const readHead = async (tx: Pick<Db, 'first'>): Promise<AuditHead> => {
    const row = await tx.first<{ count: string; hash: string }>('SELECT count, hash FROM audit_head WHERE id = 1')
    return { count: Number(row?.count ?? 0), hash: row?.hash ?? '' }
  }
  return {
    async listAudit (filter, beforeId, limit) {
      const params: unknown[] = []
      const where = auditFilterSql(filter, beforeId, (value) => { params.push(value); return `$${params.length}` })
      params.push(limit)
      return (await db.query<AuditRow & Record<string, unknown>>(
        `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE ${where} ORDER BY id DESC LIMIT $${params.length}`,
        params
      )).map(toAuditEntry)
    },
    async auditHead () {
      return readHead(db)
    },
    async walkAudit (visit) {
      // One snapshot for the pages and the head (REPEATABLE READ): appends committed meanwhile
      // are simply not part of this walk.
      return db.transaction(async (tx) => {
        await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
        let after = 0
        for (;;) {
          const rows = await tx.query<AuditRow & Record<string, unknown>>(`SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE id > $1 ORDER BY id LIMIT ${WALK_PAGE}`, [after])
          let going = true
          for (const row of rows) {
            going = visit(toAuditEntry(row))
            if (!going) break
          }
          if (!going || rows.length < WALK_PAGE) break
          after = Number(rows.at(-1)!.id)
        }
        return readHead(tx)
      })
    }
  }
}
