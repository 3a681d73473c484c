// KeyStore on PostgreSQL. Updates lock the key row first (SELECT ... FOR UPDATE).
import { notFound, preconditionFailed } from '../../errors.ts'
import type { KeyStore } from '../../keys/keys.store.ts'
import { matchesVersion, type IfMatch } from '../../shared/store.ts'
import type { Db, Tx } from './database.ts'
import { BAN_COLUMNS, KEY_COLUMNS, toBan, toKey, type BanRow, type KeyRow } from '../rows.ts'

async function lockCurrent (tx: Tx, id: number, ifMatch: IfMatch): Promise<KeyRow> {
  const row = await tx.first<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE`, [id])
  if (row === undefined) throw notFound(`key ${id}`)
  if (!matchesVersion(ifMatch, row.version)) throw preconditionFailed()
  return row
}

export function createPostgresKeyStore (db: Db): KeyStore {
  return {
    async createKey (k) {
      const row = await db.first<KeyRow>(
        `INSERT INTO api_keys (name, role, plan, per_minute, per_day, key_hash, key_prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${KEY_COLUMNS}`,
        [k.name, k.role, k.plan, k.perMinute, k.perDay, k.hash, k.prefix, k.now])
      return toKey(row!)
    },
    async findKeyByHash (hash) {
      const row = await db.first<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = $1`, [hash])
      return row === undefined ? null : toKey(row)
    },
    async getKey (id) {
      const row = await db.first<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1`, [id])
      return row === undefined ? null : toKey(row)
    },
    async listKeys (page) {
      return (await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id > $1 ORDER BY id LIMIT $2`, [page.afterId ?? 0, page.limit])).map(toKey)
    },
    async updateKey (id, changes, ifMatch) {
      return db.transaction(async (tx) => {
        const row = await lockCurrent(tx, id, ifMatch)
        const updated = await tx.first<KeyRow>(
          `UPDATE api_keys SET name = $1, role = $2, plan = $3, per_minute = $4, per_day = $5, version = version + 1 WHERE id = $6 RETURNING ${KEY_COLUMNS}`,
          [changes.name ?? row.name, changes.role ?? row.role, changes.plan ?? row.plan,
            changes.perMinute === undefined ? row.per_minute : changes.perMinute,
            changes.perDay === undefined ? row.per_day : changes.perDay, id])
        return toKey(updated!)
      })
    },
    async revokeKey (id, now, ifMatch) {
      return db.transaction(async (tx) => {
        const row = await lockCurrent(tx, id, ifMatch)
        if (row.revoked_at !== null) return toKey(row)
        const revoked = await tx.first<KeyRow>(`UPDATE api_keys SET revoked_at = $1, version = version + 1 WHERE id = $2 RETURNING ${KEY_COLUMNS}`, [now, id])
        return toKey(revoked!)
      })
    },
    async recordBan (b) {
      const row = await db.first<BanRow>(
        `INSERT INTO bans (key_id, subject, started_at, ends_at, reason) VALUES ($1, $2, $3, $4, $5) RETURNING ${BAN_COLUMNS}`,
        [b.keyId, b.subject, b.startedAt, b.endsAt, b.reason])
      return toBan(row!)
    },
    async activeBan (keyId, now) {
      const row = await db.first<BanRow>(
        `SELECT ${BAN_COLUMNS} FROM bans WHERE key_id = $1 AND lifted_at IS NULL AND ends_at > $2 ORDER BY ends_at DESC LIMIT 1`, [keyId, now])
      return row === undefined ? null : toBan(row)
    },
    async liftBans (keyId, now) {
      const lifted = await db.query('UPDATE bans SET lifted_at = $1 WHERE key_id = $2 AND lifted_at IS NULL AND ends_at > $1 RETURNING id', [now, keyId])
      return lifted.length
    },
    async bansLiftedSince (since) {
      return (await db.query<BanRow>(`SELECT ${BAN_COLUMNS} FROM bans WHERE lifted_at > $1 ORDER BY lifted_at LIMIT 1000`, [since])).map(toBan)
    }
  }
}
