// The events port on SQLite, and the event log the other stores append to inside the writer's
// callback (the same transaction as their change). One writer means commits follow seq, so the
// feed's position is seq alone (tx '0').
import type { EventDraft, EventStore, StoredEvent } from '../../events/events.store.ts'
import { keyEvent, newEventId } from '../../events/events.store.ts'
import type { ActorSource } from '../../shared/actor-context.ts'
import { eventFilterSql } from '../event-filters.ts'
import { BAN_COLUMNS, KEY_COLUMNS, toBan, toKey, type BanRow, type KeyRow } from '../rows.ts'
import type { SqliteAuditAppend } from './audit.ts'
import type { Db } from './database.ts'
import type { Writer } from './writer.ts'

export interface SqliteEventLog {
  /**
   * Appends the events, and their audit entries through the audit door (audit.ts), by the actor
   * of the write; call it only inside a writer callback (or a transaction), with the change they
   * report. `before`: the record an update read before changing it, for its audit entry.
   */
  append (drafts: readonly EventDraft[], now: number, before?: unknown): void
}

interface EventRow {
  seq: number
  id: string
  type: string
  created_at: number
  audience: StoredEvent['audience']
  subject_key_id: number | null
  data: string
}

const COLUMNS = 'e.seq, e.id, e.type, e.created_at, e.audience, e.subject_key_id, e.data'

function toEvent (row: EventRow): StoredEvent {
  return {
    id: row.id,
    type: row.type,
    createdAt: row.created_at,
    audience: row.audience,
    subjectKeyId: row.subject_key_id,
    data: JSON.parse(row.data),
    position: { tx: '0', seq: row.seq }
  }
}

/**
 * `audit`: the engine's audit door; `actor`: who makes the change (storage/stores.ts), read in the
 * writer's callback, which runs as the caller that queued it (index.ts).
 */
export function createSqliteEventLog (db: Db, audit: SqliteAuditAppend, actor: ActorSource): SqliteEventLog {
  const insert = db.prepare('INSERT INTO events (id, type, created_at, audience, subject_key_id, data) VALUES (?, ?, ?, ?, ?, ?)')
  return {
    append (drafts, now, before) {
      if (drafts.length === 0) return
      for (const draft of drafts) {
        insert.run(newEventId(), draft.type, now, draft.audience, draft.subjectKeyId, JSON.stringify(draft.data))
      }
      // Every change that reports events is recorded in the audit log here, in the same transaction.
      audit({ events: drafts, before }, now, actor())
    }
  }
}

export function createSqliteEventStore (db: Db, writer: Writer, log: SqliteEventLog): EventStore {
  const prune = db.prepare('DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE created_at < ? ORDER BY seq LIMIT ?)')
  // Key notices (sendKeyNotices): live keys (neither revoked nor rotated: a rotation's grace is
  // no expiry to warn of) in the window, without the notice yet; each one's ban in force on its
  // rotation chain, as the key store's own events carry it.
  const dueForNotice = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys k
    WHERE k.expires_at > ? AND k.expires_at <= ? AND k.revoked_at IS NULL AND k.replaced_by IS NULL
      AND NOT EXISTS (SELECT 1 FROM key_notices n WHERE n.key_id = k.id AND n.notice = ?)
    ORDER BY k.expires_at, k.id LIMIT ?`)
  const recordNotice = db.prepare('INSERT INTO key_notices (key_id, notice, sent_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')
  const chainBan = db.prepare(`SELECT ${BAN_COLUMNS} FROM bans WHERE key_id IN (SELECT o.id FROM api_keys o, api_keys k
      WHERE k.id = ? AND coalesce(o.quota_key_id, o.id) = coalesce(k.quota_key_id, k.id))
    AND lifted_at IS NULL AND ends_at > ? ORDER BY ends_at DESC LIMIT 1`)
  return {
    async listEvents ({ visibility, types, after, limit }) {
      const params: unknown[] = []
      const param = (value: unknown): string => { params.push(value); return '?' }
      const where = `e.seq > ${param(after?.seq ?? 0)} AND ${eventFilterSql(visibility, types, param)}`
      const sql = `SELECT ${COLUMNS} FROM events e WHERE ${where} ORDER BY e.seq LIMIT ${param(limit)}`
      return (db.prepare(sql).all(...(params as Array<string | number>)) as unknown as EventRow[]).map(toEvent)
    },
    async getEvent (id, visibility) {
      const params: unknown[] = [id]
      const param = (value: unknown): string => { params.push(value); return '?' }
      const row = db.prepare(`SELECT ${COLUMNS} FROM events e WHERE e.id = ? AND ${eventFilterSql(visibility, undefined, param)}`)
        .get(...(params as Array<string | number>)) as EventRow | undefined
      return row === undefined ? null : toEvent(row)
    },
    async pruneEvents (before, max) {
      return await writer.run(() => Number(prune.run(before, max).changes))
    },
    async sendKeyNotices ({ notice, type, expiresAfter, expiresBy, now, max }) {
      // In one writer callback: the search, the notices and their events commit together, and no
      // other write comes between (one writer per database).
      return await writer.run(() => {
        let sent = 0
        for (const row of dueForNotice.all(expiresAfter, expiresBy, notice, max) as unknown as KeyRow[]) {
          if (Number(recordNotice.run(row.id, notice, now).changes) === 0) continue
          const ban = chainBan.get(row.id, now) as BanRow | undefined
          const record = toKey(row)
          const state = { record, ban: ban === undefined ? null : toBan(ban), lastUsedAt: record.lastUsedAt }
          log.append([keyEvent(type, state)], now)
          sent++
        }
        return sent
      })
    }
  }
}
