// KeyStore on SQLite.
import { DISPLAY_PREFIX_LENGTH, rotationRefusal } from '../../accounts/keys.rules.ts'
import type { KeyRecord, KeyStore, UsageBatch } from '../../accounts/keys.store.ts'
import { keyBanEvent, keyEvent } from '../../events/events.store.ts'
import type { EventType } from '../../events/catalogue.ts'
import { isComplete, noticeInstant, noticesOf, noticeTargets } from '../../events/usage-events.ts'
import type { IfMatch } from '../../shared/store.ts'
import { currentRow } from '../checks.ts'
import { transaction, type Db } from './database.ts'
import type { SqliteEventLog } from './events.ts'
import type { Writer } from './writer.ts'
import { keyFilterSql, keySearchName } from '../key-filters.ts'
import { scopesToText } from '../../accounts/scopes.ts'
import {
  BAN_COLUMNS,
  KEY_COLUMNS,
  toBan,
  toKey,
  toUsage,
  USAGE_COLUMNS,
  type BanRow,
  type KeyRow,
  type UsageRowSql,
  toDeprecatedCall,
  type DeprecatedCallSql
} from '../rows.ts'

/** A key_usage row with its other_4xx (read beside USAGE_COLUMNS). */
type Other4xxSql = UsageRowSql & { other_4xx: number }

/** The ids of every key sharing the quota identity of key `?` (its rotation chain). */
const SAME_IDENTITY = `SELECT k.id FROM api_keys k, (SELECT coalesce(quota_key_id, id) AS q FROM api_keys WHERE id = ?) i WHERE k.id = i.q OR k.quota_key_id = i.q`

export function createSqliteKeyStore (db: Db, events: SqliteEventLog, writer: Writer): KeyStore {
  const insert = db.prepare(`INSERT INTO api_keys (name, search_name, role, plan, per_minute, per_day, key_hash, key_prefix, created_at, expires_at, scopes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${KEY_COLUMNS}`)
  const insertSuccessor = db.prepare(`INSERT INTO api_keys (name, search_name, role, plan, per_minute, per_day, key_hash, key_prefix, created_at, replaces, quota_key_id, scopes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${KEY_COLUMNS}`)
  const markReplaced = db.prepare(`UPDATE api_keys SET expires_at = ?, replaced_by = ?, version = version + 1 WHERE id = ? RETURNING ${KEY_COLUMNS}`)
  const byHash = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = ?`)
  // The hashes as one JSON array parameter: one statement, whatever their number, on the unique index.
  const byHashes = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash IN (SELECT value FROM json_each(?))`)
  const legacyPrefixes = db.prepare('SELECT key_prefix FROM api_keys WHERE revoked_at IS NULL AND length(key_prefix) = ?')
  const byId = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`)
  const list = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id > ? ORDER BY id LIMIT ?`)
  const update = db.prepare(`UPDATE api_keys SET name = ?, search_name = ?, role = ?, plan = ?, per_minute = ?, per_day = ?, version = version + 1 WHERE id = ? RETURNING ${KEY_COLUMNS}`)
  const revoke = db.prepare(`UPDATE api_keys SET revoked_at = ?, version = version + 1 WHERE id = ? RETURNING ${KEY_COLUMNS}`)
  // One caller, one fate (docs/product.md 9.x): the other keys of the rotation chain that still
  // work are revoked with the key, and take its role, plan and quotas.
  const revokeSiblings = db.prepare(`UPDATE api_keys SET revoked_at = ?, version = version + 1 WHERE id IN (${SAME_IDENTITY}) AND id <> ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?) RETURNING ${KEY_COLUMNS}`)
  const updateSiblings = db.prepare(`UPDATE api_keys SET role = ?, plan = ?, per_minute = ?, per_day = ?, version = version + 1 WHERE id IN (${SAME_IDENTITY}) AND id <> ? AND (role <> ? OR plan <> ? OR per_minute IS NOT ? OR per_day IS NOT ?)`)
  const insertBan = db.prepare(`INSERT INTO bans (key_id, subject, started_at, ends_at, reason, strike) VALUES (?, ?, ?, ?, ?, ?) RETURNING ${BAN_COLUMNS}`)
  const banOf = db.prepare(`SELECT ${BAN_COLUMNS} FROM bans WHERE subject = ? AND started_at = ? AND ends_at = ? ORDER BY id LIMIT 1`)
  const quotaIdentity = db.prepare('SELECT coalesce(quota_key_id, id) AS q FROM api_keys WHERE id = ?')
  const activeBan = db.prepare(`SELECT ${BAN_COLUMNS} FROM bans WHERE key_id IN (${SAME_IDENTITY}) AND lifted_at IS NULL AND ends_at > ? ORDER BY ends_at DESC LIMIT 1`)
  const lift = db.prepare(`UPDATE bans SET lifted_at = ? WHERE key_id IN (${SAME_IDENTITY}) AND lifted_at IS NULL AND ends_at > ? RETURNING strike`)
  const inForce = db.prepare(`SELECT ${BAN_COLUMNS} FROM bans WHERE lifted_at IS NULL AND ends_at > ? ORDER BY ends_at DESC LIMIT ?`)
  const liftedSince = db.prepare(`SELECT ${BAN_COLUMNS} FROM bans WHERE lifted_at > ? AND ends_at > ? ORDER BY lifted_at, id LIMIT 10000`)
  const addUsage = db.prepare(`INSERT INTO key_usage (key_id, day, allowed, limited, banned, mcp, other_4xx) VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (key_id, day) DO UPDATE SET allowed = key_usage.allowed + excluded.allowed, limited = key_usage.limited + excluded.limited, banned = key_usage.banned + excluded.banned,
      mcp = key_usage.mcp + excluded.mcp, other_4xx = key_usage.other_4xx + excluded.other_4xx`)
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)')
  const usage = db.prepare(`SELECT ${USAGE_COLUMNS}, other_4xx FROM key_usage WHERE key_id = ? AND day >= ? ORDER BY day`)
  const addDeprecated = db.prepare(`INSERT INTO deprecated_calls (operation, key_id, day, calls, last_call_at) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (operation, key_id, day) DO UPDATE SET calls = deprecated_calls.calls + excluded.calls, last_call_at = max(deprecated_calls.last_call_at, excluded.last_call_at)`)
  const deprecatedSince = db.prepare('SELECT operation, key_id, day, calls, last_call_at FROM deprecated_calls WHERE day >= ? ORDER BY operation, key_id, day')
  // One key's (deprecated_calls_by_key): its holder's usage view reads its own rows only.
  const deprecatedOfKey = db.prepare('SELECT operation, key_id, day, calls, last_call_at FROM deprecated_calls WHERE key_id = ? AND day >= ? ORDER BY operation, day')
  // The usage events (events/usage-events.ts): the identity of a key, what its chain counts that
  // day, and what was announced already. One writer at a time: no row needs locking here.
  const identityOf = db.prepare('SELECT i.id, i.plan, i.per_minute, i.per_day FROM api_keys k JOIN api_keys i ON i.id = coalesce(k.quota_key_id, k.id) WHERE k.id = ?')
  const chainAllowed = db.prepare('SELECT coalesce(sum(u.allowed), 0) AS n FROM key_usage u JOIN api_keys c ON c.id = u.key_id WHERE u.day = ? AND (c.id = ? OR c.quota_key_id = ?)')
  const chainCalls = db.prepare('SELECT coalesce(sum(d.calls), 0) AS n FROM deprecated_calls d JOIN api_keys c ON c.id = d.key_id WHERE d.operation = ? AND d.day = ? AND (c.id = ? OR c.quota_key_id = ?)')
  const pruneNotices = db.prepare('DELETE FROM usage_notices WHERE rowid IN (SELECT rowid FROM usage_notices WHERE day < ? LIMIT ?)')
  const pruneUsage = db.prepare('DELETE FROM key_usage WHERE rowid IN (SELECT rowid FROM key_usage WHERE day < ? LIMIT ?)')
  const pruneDeprecated = db.prepare('DELETE FROM deprecated_calls WHERE rowid IN (SELECT rowid FROM deprecated_calls WHERE day < ? LIMIT ?)')
  const noticeLevel = db.prepare('SELECT level FROM usage_notices WHERE key_id = ? AND day = ? AND kind = ? AND operation = ?')
  const setNotice = db.prepare(`INSERT INTO usage_notices (key_id, day, kind, operation, level) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (key_id, day, kind, operation) DO UPDATE SET level = excluded.level`)
  const banHistory = db.prepare(`SELECT ${BAN_COLUMNS} FROM bans WHERE key_id IN (${SAME_IDENTITY}) ORDER BY started_at DESC, id DESC LIMIT ?`)

  /**
   * Inside recordUsage's transaction, after the counts: the quota.threshold and deprecation.used
   * events they announce.
   */
  const announce = (batch: UsageBatch): void => {
    const seen = new Set<string>()
    const now = noticeInstant(batch)
    for (const target of noticeTargets(batch)) {
      const identity = identityOf.get(target.keyId) as {
        id: number
        plan: KeyRow['plan']
        per_minute: number | null
        per_day: number | null
      } | undefined
      const id = `${identity?.id} ${target.day} ${target.kind} ${target.operation}`
      if (identity === undefined || seen.has(id)) continue
      seen.add(id)
      const level = (
        noticeLevel.get(identity.id, target.day, target.kind, target.operation) as { level: number } | undefined
      )?.level ?? 0
      if (isComplete(target.kind, level)) continue
      const counted = target.kind === 'quota'
        ? chainAllowed.get(target.day, identity.id, identity.id)
        : chainCalls.get(target.operation, target.day, identity.id, identity.id)
      const state = {
        keyId: identity.id,
        day: target.day,
        kind: target.kind,
        operation: target.operation,
        level,
        count: Number((counted as { n: number }).n),
        key: { plan: identity.plan, perMinute: identity.per_minute, perDay: identity.per_day }
      }
      const notices = noticesOf(state, batch.deprecations ?? {})
      if (notices.drafts.length === 0) continue
      setNotice.run(identity.id, target.day, target.kind, target.operation, notices.level)
      events.append(notices.drafts, now)
    }
  }

  const current = (id: number, ifMatch: IfMatch): KeyRow => currentRow(byId.get(id) as KeyRow | undefined, `key ${id}`, ifMatch)
  /** The key event of a change, in the change's transaction: the key's state, its ban in force at `now` included. */
  const appendKeyEvent = (type: EventType, record: KeyRecord, now: number, before?: KeyRecord): void => {
    const ban = activeBan.get(record.id, now) as BanRow | undefined
    const state = { record, ban: ban === undefined ? null : toBan(ban), lastUsedAt: record.lastUsedAt }
    events.append([keyEvent(type, state)], now, before)
  }

  return {
    async createKey (k) {
      // Even single statements go through transaction(): a lock held elsewhere is then a 503, not a 500.
      return transaction(db, () => {
        const created = toKey(insert.get(
          k.name,
          keySearchName(k.name),
          k.role,
          k.plan,
          k.perMinute,
          k.perDay,
          k.hash,
          k.prefix,
          k.now,
          k.expiresAt ?? null,
          scopesToText(k.scopes ?? null)
        ) as unknown as KeyRow)
        appendKeyEvent('key.created', created, k.now)
        return created
      })
    },
    async findKeyByHash (hash) {
      const row = byHash.get(hash) as KeyRow | undefined
      return row === undefined ? null : toKey(row)
    },
    async findKeysByHashes (hashes) {
      if (hashes.length === 0) return []
      return (byHashes.all(JSON.stringify(hashes)) as unknown as KeyRow[]).map(toKey)
    },
    async legacyKeyPrefixes () {
      const rows = legacyPrefixes.all(DISPLAY_PREFIX_LENGTH.legacy) as Array<{ key_prefix: string }>
      return rows.map((r) => r.key_prefix)
    },
    async getKey (id) {
      const row = byId.get(id) as KeyRow | undefined
      return row === undefined ? null : toKey(row)
    },
    async listKeys (page, filter) {
      if (filter === undefined) return (list.all(page.afterId ?? 0, page.limit) as unknown as KeyRow[]).map(toKey)
      const values: unknown[] = []
      const where = keyFilterSql(filter, (value) => { values.push(value); return '?' })
      const filtered = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys k WHERE k.id > ? AND ${where} ORDER BY k.id LIMIT ?`)
      return (filtered.all(page.afterId ?? 0, ...values as (string | number)[], page.limit) as unknown as KeyRow[])
        .map(toKey)
    },
    async updateKey (id, changes, ifMatch, now) {
      return transaction(db, () => {
        const row = current(id, ifMatch)
        const name = changes.name ?? row.name
        const updated = toKey(update.get(
          name, keySearchName(name), changes.role ?? row.role, changes.plan ?? row.plan,
          changes.perMinute === undefined ? row.per_minute : changes.perMinute,
          changes.perDay === undefined ? row.per_day : changes.perDay, id) as unknown as KeyRow)
        const { role, plan, perMinute, perDay } = updated
        updateSiblings.run(role, plan, perMinute, perDay, id, id, role, plan, perMinute, perDay)
        appendKeyEvent('key.updated', updated, now, toKey(row))
        return updated
      })
    },
    async revokeKey (id, now, ifMatch, reason = 'requested') {
      return transaction(db, () => {
        const row = current(id, ifMatch)
        const siblings = (revokeSiblings.all(now, id, id, now) as unknown as KeyRow[]).map(toKey)
        const revoked = row.revoked_at !== null ? null : toKey(revoke.get(now, id) as unknown as KeyRow)
        // appendKeyEvent's state, and why (the RevokedApiKey view, keys/keys.view.ts): one event
        // (and so one audit entry) per key revoked, the rotation partner included.
        const banRow = activeBan.get(id, now) as BanRow | undefined
        const ban = banRow === undefined ? null : toBan(banRow)
        const records = revoked === null ? siblings : [revoked, ...siblings]
        if (records.length > 0) {
          events.append(records.map((record) => {
            const state = { record, ban, lastUsedAt: record.lastUsedAt, reason }
            return keyEvent('key.revoked', state)
          }), now)
        }
        return revoked ?? toKey(row)
      })
    },
    async rotateKey (id, r) {
      return transaction(db, () => {
        const row = current(id, null)
        const refusal = rotationRefusal(toKey(row), r.now)
        if (refusal !== null) throw refusal
        const created = toKey(insertSuccessor.get(
          row.name,
          keySearchName(row.name),
          row.role,
          row.plan,
          row.per_minute,
          row.per_day,
          r.hash,
          r.prefix,
          r.now,
          row.id,
          row.quota_key_id ?? row.id,
          row.scopes
        ) as unknown as KeyRow)
        const expiresAt = row.expires_at === null ? r.graceEndsAt : Math.min(row.expires_at, r.graceEndsAt)
        const old = toKey(markReplaced.get(expiresAt, created.id, id) as unknown as KeyRow)
        // The successor, which names the key it replaces: the key its holder now uses.
        appendKeyEvent('key.rotated', created, r.now)
        return { old, created }
      })
    },
    async recordBan (b) {
      return transaction(db, () => {
        // Recorded already (a retry whose first attempt committed): no second record, no second event.
        const recorded = banOf.get(b.subject, b.startedAt, b.endsAt) as BanRow | undefined
        if (recorded !== undefined) return toBan(recorded)
        const ban = toBan(
          insertBan.get(b.keyId, b.subject, b.startedAt, b.endsAt, b.reason, b.strike ?? null) as unknown as BanRow
        )
        const identity = b.keyId === null ? undefined : quotaIdentity.get(b.keyId) as { q: number } | undefined
        if (identity !== undefined) {
          events.append(
            [keyBanEvent('key.banned', { quotaKeyId: identity.q, until: b.endsAt, strike: b.strike ?? 0 })],
            b.startedAt
          )
        }
        return ban
      })
    },
    async activeBan (keyId, now) {
      const row = activeBan.get(keyId, now) as BanRow | undefined
      return row === undefined ? null : toBan(row)
    },
    async activeBans (now, limit) {
      return (inForce.all(now, limit) as unknown as BanRow[]).map(toBan)
    },
    async liftBans (keyId, now) {
      return transaction(db, () => {
        const lifted = lift.all(now, keyId, now) as Array<{ strike: number | null }>
        const identity = lifted.length === 0 ? undefined : quotaIdentity.get(keyId) as { q: number } | undefined
        if (identity !== undefined) {
          const strike = Math.max(...lifted.map((b) => b.strike ?? 0))
          events.append([keyBanEvent('key.unbanned', { quotaKeyId: identity.q, until: now, strike })], now)
        }
        return lifted.length
      })
    },
    async bansLiftedSince (since, endingAfter = Number.MIN_SAFE_INTEGER) {
      return (liftedSince.all(since, endingAfter) as unknown as BanRow[]).map(toBan)
    },
    async recordUsage (batch) {
      if (batch.counts.length === 0 && batch.lastUsed.length === 0 && (batch.deprecated ?? []).length === 0) return
      // Through the writer, its fsync off the event loop: the flush runs every 2 s under load, and
      // a commit at synchronous=FULL waited for the disk on the event loop each time (the reads'
      // p99: docs/performance.md, "Stalls and memory").
      await writer.run(() => {
        for (const c of batch.counts) {
          addUsage.run(c.keyId, c.day, c.allowed, c.limited, c.banned, c.mcp ?? 0, c.other4xx ?? 0)
        }
        for (const u of batch.lastUsed) touch.run(u.at, u.keyId, u.at)
        for (const d of batch.deprecated ?? []) addDeprecated.run(d.operation, d.keyId, d.day, d.calls, d.lastCallAt)
        announce(batch)
      })
    },
    async usage (keyId, fromDay) {
      return (usage.all(keyId, fromDay) as unknown as Other4xxSql[])
        .map((r) => ({ ...toUsage(r), other4xx: r.other_4xx }))
    },
    async deprecatedCalls (fromDay, keyId) {
      const rows = keyId === undefined ? deprecatedSince.all(fromDay) : deprecatedOfKey.all(keyId, fromDay)
      return (rows as unknown as DeprecatedCallSql[]).map(toDeprecatedCall)
    },
    async banHistory (keyId, limit) {
      return (banHistory.all(keyId, limit) as unknown as BanRow[]).map(toBan)
    },
    async pruneUsageNotices (beforeDay, max) {
      return transaction(db, () => Number(pruneNotices.run(beforeDay, max).changes))
    },
    async pruneUsage (beforeDay, max) {
      return transaction(db, () => Number(pruneUsage.run(beforeDay, max).changes))
    },
    async pruneDeprecatedCalls (beforeDay, max) {
      return transaction(db, () => Number(pruneDeprecated.run(beforeDay, max).changes))
    }
  }
}
