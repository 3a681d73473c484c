// The events port on PostgreSQL, and the event log the other stores append to inside their
// transaction. Sequence values are handed out in one order and committed in another, so the feed
// is ordered by (tx, seq) and returns only rows whose transaction is below the oldest one still
// running (pg_snapshot_xmin): every such transaction has finished, so no row can ever appear
// behind a reader's position. A transaction left open holds the feed back (bounded by the
// pool's idle-in-transaction and statement timeouts), it never makes it skip.
import type { EventDraft, EventStore, StoredEvent } from '../../events/events.store.ts'
import { keyEvent, newEventId } from '../../events/events.store.ts'
import { eventFilterSql } from '../event-filters.ts'
import { BAN_COLUMNS, KEY_COLUMNS, toBan, toKey, type BanRow, type KeyRow } from '../rows.ts'
import { appendAudit } from './audit.ts'
import type { Db, Tx } from './database.ts'

interface EventRow {
  seq: string
  tx: string
  id: string
  type: string
  created_at: string
  audience: StoredEvent['audience']
  subject_key_id: string | null
  data: string
}

const COLUMNS = 'e.seq, e.tx::text AS tx, e.id, e.type, e.created_at, e.audience, e.subject_key_id, e.data'

function toEvent (row: EventRow): StoredEvent {
  return {
    id: row.id,
    type: row.type,
    createdAt: Number(row.created_at),
    audience: row.audience,
    subjectKeyId: row.subject_key_id === null ? null : Number(row.subject_key_id),
    data: JSON.parse(row.data),
    position: { tx: row.tx, seq: Number(row.seq) }
  }
}

/**
 * Appends the events in the caller's transaction, in one statement, and their audit entries
 * through the audit door (audit.ts), by the transaction's actor. `before`: the record an update
 * read before changing it, for its audit entry.
 */
export async function appendEvents (
  tx: Tx,
  drafts: readonly EventDraft[],
  now: number,
  before?: unknown
): Promise<void> {
  if (drafts.length === 0) return
  await tx.query(
    `INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[])`,
    [drafts.map(() => newEventId()), drafts.map((d) => d.type), drafts.map(() => now), drafts.map((d) => d.audience),
      drafts.map((d) => d.subjectKeyId), drafts.map((d) => JSON.stringify(d.data))])
  await appendAudit(tx, { events: drafts, before }, now)
}

export function createPostgresEventStore (db: Db): EventStore {
  return {
    async listEvents ({ visibility, types, after, limit }) {
      const params: unknown[] = []
      const param = (value: unknown): string => { params.push(value); return `$${params.length}` }
      const position = after === null ? '' : `(e.tx, e.seq) > (${param(after.tx)}::xid8, ${param(after.seq)}::bigint) AND `
      const sql = `SELECT ${COLUMNS} FROM events e
        WHERE ${position}e.tx < pg_snapshot_xmin(pg_current_snapshot()) AND ${eventFilterSql(visibility, types, param)}
        ORDER BY e.tx, e.seq LIMIT ${param(limit)}`
      return (await db.query<EventRow>(sql, params)).map(toEvent)
    },
    async getEvent (id, visibility) {
      const params: unknown[] = [id]
      const param = (value: unknown): string => { params.push(value); return `$${params.length}` }
      const row = await db.first<EventRow>(`SELECT ${COLUMNS} FROM events e WHERE e.id = $1 AND ${eventFilterSql(visibility, undefined, param)}`, params)
      return row === undefined ? null : toEvent(row)
    },
    async pruneEvents (before, max) {
      const rows = await db.query<{ n: string }>(
        'WITH gone AS (DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE created_at < $1 ORDER BY seq LIMIT $2) RETURNING 1) SELECT count(*) AS n FROM gone',
        [before, max])
      return Number(rows[0]?.n ?? 0)
    },
    async sendKeyNotices ({ notice, type, expiresAfter, expiresBy, now, max }) {
      return await db.transaction(async (tx) => {
        // Live keys (neither revoked nor rotated: a rotation's grace is no expiry to warn of) in
        // the window, without the notice yet. Two instances may both find a key: the primary key
        // of key_notices makes the second INSERT wait for the first transaction, then do nothing,
        // so only the rows this transaction inserted come back, and only they get an event.
        const rows = await tx.query<KeyRow>(
          `WITH due AS (
             SELECT k.id FROM api_keys k
             WHERE k.expires_at > $1 AND k.expires_at <= $2 AND k.revoked_at IS NULL AND k.replaced_by IS NULL
               AND NOT EXISTS (SELECT 1 FROM key_notices n WHERE n.key_id = k.id AND n.notice = $3)
             ORDER BY k.expires_at, k.id LIMIT $4),
           noted AS (
             INSERT INTO key_notices (key_id, notice, sent_at) SELECT id, $3, $5 FROM due
             ON CONFLICT DO NOTHING RETURNING key_id)
           SELECT ${KEY_COLUMNS} FROM api_keys WHERE id IN (SELECT key_id FROM noted) ORDER BY expires_at, id`,
          [expiresAfter, expiresBy, notice, max, now])
        const drafts: EventDraft[] = []
        for (const row of rows) {
          // The ban in force on the key's rotation chain, as the key store's own events carry it.
          const ban = await tx.first<BanRow>(
            `SELECT ${BAN_COLUMNS} FROM bans WHERE key_id IN (SELECT o.id FROM api_keys o, api_keys k
               WHERE k.id = $1 AND coalesce(o.quota_key_id, o.id) = coalesce(k.quota_key_id, k.id))
             AND lifted_at IS NULL AND ends_at > $2 ORDER BY ends_at DESC LIMIT 1`, [row.id, now])
          const record = toKey(row)
          const state = { record, ban: ban === undefined ? null : toBan(ban), lastUsedAt: record.lastUsedAt }
          drafts.push(keyEvent(type, state))
        }
        await appendEvents(tx, drafts, now)
        return drafts.length
      })
    }
  }
}
