// The partner portal's links and sessions on SQLite (portal/portal.store.ts): rows by the hash of
// their token. Writes go through the writer like every store's; a link is used by one conditional
// UPDATE, so two exchanges of one link cannot both find it unused.
import type { PortalLinkRecord, PortalSessionRecord, PortalStore } from '../../portal/portal.store.ts'
import type { Db } from './database.ts'
import type { Writer } from './writer.ts'

interface LinkRow { key_id: number; created_at: number; expires_at: number; used_at: number | null }
interface SessionRow { key_id: number; created_at: number; last_seen_at: number; expires_at: number }

const toLink = (row: LinkRow): PortalLinkRecord => ({
  keyId: Number(row.key_id), createdAt: Number(row.created_at), expiresAt: Number(row.expires_at),
  usedAt: row.used_at === null ? null : Number(row.used_at)
})
const toSession = (row: SessionRow): PortalSessionRecord => ({
  keyId: Number(row.key_id), createdAt: Number(row.created_at),
  lastSeenAt: Number(row.last_seen_at), expiresAt: Number(row.expires_at)
})

export function createSqlitePortalStore (db: Db, writer: Writer): PortalStore {
  const insertLink = db.prepare('INSERT INTO portal_links (hash, key_id, created_at, expires_at) VALUES (?, ?, ?, ?)')
  const findLink = db.prepare('SELECT key_id, created_at, expires_at, used_at FROM portal_links WHERE hash = ?')
  const markUsed = db.prepare('UPDATE portal_links SET used_at = ? WHERE hash = ? AND used_at IS NULL')
  const insertSession = db.prepare('INSERT INTO portal_sessions (hash, key_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)')
  const findSession = db.prepare('SELECT key_id, created_at, last_seen_at, expires_at FROM portal_sessions WHERE hash = ?')
  const touch = db.prepare('UPDATE portal_sessions SET last_seen_at = ? WHERE hash = ? AND last_seen_at < ?')
  const end = db.prepare('DELETE FROM portal_sessions WHERE hash = ?')
  const pruneSessions = db.prepare(`DELETE FROM portal_sessions WHERE hash IN (
    SELECT hash FROM portal_sessions WHERE expires_at <= ? OR last_seen_at <= ? LIMIT ?)`)
  const pruneLinks = db.prepare('DELETE FROM portal_links WHERE hash IN (SELECT hash FROM portal_links WHERE expires_at < ? LIMIT ?)')

  return {
    async createLink ({ hash, keyId, now, expiresAt }) {
      await writer.run(() => { insertLink.run(hash, keyId, now, expiresAt) })
    },
    async useLink (hash, now) {
      return await writer.run(() => {
        const row = findLink.get(hash) as LinkRow | undefined
        if (row === undefined) return null
        // One connection, one writer: the read and the mark are one step, so a link is used once.
        if (row.used_at === null) markUsed.run(now, hash)
        return toLink(row)
      })
    },
    async createSession ({ hash, keyId, now, expiresAt }) {
      await writer.run(() => { insertSession.run(hash, keyId, now, now, expiresAt) })
    },
    async findSession (hash) {
      const row = findSession.get(hash) as SessionRow | undefined
      return row === undefined ? null : toSession(row)
    },
    async touchSession (hash, now, before) {
      await writer.run(() => { touch.run(now, hash, before) })
    },
    async endSession (hash) {
      await writer.run(() => { end.run(hash) })
    },
    async prune ({ now, idleBefore, linksBefore, max }) {
      return await writer.run(() => {
        const sessions = Number(pruneSessions.run(now, idleBefore, max).changes)
        return sessions + Number(pruneLinks.run(linksBefore, Math.max(0, max - sessions)).changes)
      })
    }
  }
}
