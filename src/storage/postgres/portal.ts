// The partner portal's links and sessions on PostgreSQL (portal/portal.store.ts): rows by the hash
// of their token, shared by every instance, so a session opened on one is served by all. A link is
// used under its row's lock, so two exchanges of one link on two instances cannot both find it unused.
import type { PortalLinkRecord, PortalSessionRecord, PortalStore } from '../../portal/portal.store.ts'
import type { Db } from './database.ts'

interface LinkRow { key_id: string; created_at: string; expires_at: string; used_at: string | null }
interface SessionRow { key_id: string; created_at: string; last_seen_at: string; expires_at: string }

const toLink = (row: LinkRow): PortalLinkRecord => ({
  keyId: Number(row.key_id), createdAt: Number(row.created_at), expiresAt: Number(row.expires_at),
  usedAt: row.used_at === null ? null : Number(row.used_at)
})
const toSession = (row: SessionRow): PortalSessionRecord => ({
  keyId: Number(row.key_id), createdAt: Number(row.created_at),
  lastSeenAt: Number(row.last_seen_at), expiresAt: Number(row.expires_at)
})

export function createPostgresPortalStore (db: Db): PortalStore {
  return {
    async createLink ({ hash, keyId, now, expiresAt }) {
      await db.query('INSERT INTO portal_links (hash, key_id, created_at, expires_at) VALUES ($1, $2, $3, $4)', [hash, keyId, now, expiresAt])
    },
    async useLink (hash, now) {
      return await db.transaction(async (tx) => {
        const row = await tx.first<LinkRow & Record<string, unknown>>(
          'SELECT key_id, created_at, expires_at, used_at FROM portal_links WHERE hash = $1 FOR UPDATE', [hash])
        if (row === undefined) return null
        if (row.used_at === null) await tx.query('UPDATE portal_links SET used_at = $1 WHERE hash = $2', [now, hash])
        return toLink(row)
      })
    },
    async createSession ({ hash, keyId, now, expiresAt }) {
      await db.query('INSERT INTO portal_sessions (hash, key_id, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $3, $4)', [hash, keyId, now, expiresAt])
    },
    async findSession (hash) {
      const row = await db.first<SessionRow & Record<string, unknown>>(
        'SELECT key_id, created_at, last_seen_at, expires_at FROM portal_sessions WHERE hash = $1', [hash])
      return row === undefined ? null : toSession(row)
    },
    async touchSession (hash, now, before) {
      await db.query('UPDATE portal_sessions SET last_seen_at = $1 WHERE hash = $2 AND last_seen_at < $3', [now, hash, before])
    },
    async endSession (hash) {
      await db.query('DELETE FROM portal_sessions WHERE hash = $1', [hash])
    },
    async prune ({ now, idleBefore, linksBefore, max }) {
      const sessions = await db.query(`DELETE FROM portal_sessions WHERE hash IN (
        SELECT hash FROM portal_sessions WHERE expires_at <= $1 OR last_seen_at <= $2 LIMIT $3) RETURNING 1`, [now, idleBefore, max])
      const links = await db.query(`DELETE FROM portal_links WHERE hash IN (
        SELECT hash FROM portal_links WHERE expires_at < $1 LIMIT $2) RETURNING 1`, [linksBefore, Math.max(0, max - sessions.length)])
      return sessions.length + links.length
    }
  }
}
