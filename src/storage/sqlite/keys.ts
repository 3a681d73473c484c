// KeyStore on SQLite.
import { notFound, preconditionFailed } from '../../errors.ts'
import type { KeyStore } from '../../keys/keys.store.ts'
import { matchesVersion } from '../../shared/store.ts'
import { transaction, type Db } from './database.ts'
import { BAN_COLUMNS, KEY_COLUMNS, toBan, toKey, type BanRow, type KeyRow } from '../rows.ts'

export function createSqliteKeyStore (db: Db): KeyStore {
  const insert = db.prepare(`INSERT INTO api_keys (name, role, plan, per_minute, per_day, key_hash, key_prefix, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${KEY_COLUMNS}`)
  const byHash = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = ?`)
  const byId = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`)
  const list = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id > ? ORDER BY id LIMIT ?`)
  const update = db.prepare(`UPDATE api_keys SET name = ?, role = ?, plan = ?, per_minute = ?, per_day = ?, version = version + 1 WHERE id = ? RETURNING ${KEY_COLUMNS}`)
  const revoke = db.prepare(`UPDATE api_keys SET revoked_at = ?, version = version + 1 WHERE id = ? RETURNING ${KEY_COLUMNS}`)
  const insertBan = db.prepare(`INSERT INTO bans (key_id, subject, started_at, ends_at, reason) VALUES (?, ?, ?, ?, ?) RETURNING ${BAN_COLUMNS}`)
  const activeBan = db.prepare(`SELECT ${BAN_COLUMNS} FROM bans WHERE key_id = ? AND lifted_at IS NULL AND ends_at > ? ORDER BY ends_at DESC LIMIT 1`)
  const lift = db.prepare('UPDATE bans SET lifted_at = ? WHERE key_id = ? AND lifted_at IS NULL AND ends_at > ?')
  const liftedSince = db.prepare(`SELECT ${BAN_COLUMNS} FROM bans WHERE lifted_at > ? ORDER BY lifted_at LIMIT 1000`)

  function current (id: number, ifMatch: readonly number[] | null): KeyRow {
    const row = byId.get(id) as KeyRow | undefined
    if (row === undefined) throw notFound(`key ${id}`)
    if (!matchesVersion(ifMatch, row.version)) throw preconditionFailed()
    return row
  }

  return {
    async createKey (k) {
      return toKey(insert.get(k.name, k.role, k.plan, k.perMinute, k.perDay, k.hash, k.prefix, k.now) as unknown as KeyRow)
    },
    async findKeyByHash (hash) {
      const row = byHash.get(hash) as KeyRow | undefined
      return row === undefined ? null : toKey(row)
    },
    async getKey (id) {
      const row = byId.get(id) as KeyRow | undefined
      return row === undefined ? null : toKey(row)
    },
    async listKeys (page) {
      return (list.all(page.afterId ?? 0, page.limit) as unknown as KeyRow[]).map(toKey)
    },
    async updateKey (id, changes, ifMatch) {
      return transaction(db, () => {
        const row = current(id, ifMatch)
        return toKey(update.get(
          changes.name ?? row.name, changes.role ?? row.role, changes.plan ?? row.plan,
          changes.perMinute === undefined ? row.per_minute : changes.perMinute,
          changes.perDay === undefined ? row.per_day : changes.perDay, id) as unknown as KeyRow)
      })
    },
    async revokeKey (id, now, ifMatch) {
      return transaction(db, () => {
        const row = current(id, ifMatch)
        if (row.revoked_at !== null) return toKey(row)
        return toKey(revoke.get(now, id) as unknown as KeyRow)
      })
    },
    async recordBan (b) {
      return toBan(insertBan.get(b.keyId, b.subject, b.startedAt, b.endsAt, b.reason) as unknown as BanRow)
    },
    async activeBan (keyId, now) {
      const row = activeBan.get(keyId, now) as BanRow | undefined
      return row === undefined ? null : toBan(row)
    },
    async liftBans (keyId, now) {
      return Number(lift.run(now, keyId, now).changes)
    },
    async bansLiftedSince (since) {
      return (liftedSince.all(since) as unknown as BanRow[]).map(toBan)
    }
  }
}
