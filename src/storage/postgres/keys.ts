// KeyStore on PostgreSQL. Updates lock the key row first (SELECT ... FOR UPDATE).
import { DISPLAY_PREFIX_LENGTH, rotationRefusal } from '../../accounts/keys.rules.ts'
import type { KeyRecord, KeyStore, UsageBatch } from '../../accounts/keys.store.ts'
import { keyBanEvent, keyEvent } from '../../events/events.store.ts'
import type { EventType } from '../../events/catalogue.ts'
import { isComplete, noticeInstant, noticesOf, noticeTargets } from '../../events/usage-events.ts'
import type { IfMatch } from '../../shared/store.ts'
import { currentRow } from '../checks.ts'
import type { Db, Tx } from './database.ts'
import { appendEvents } from './events.ts'
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

/** The ids of every key sharing the quota identity of key $n (its rotation chain). */
const sameIdentity = (n: number): string =>
  `SELECT k.id FROM api_keys k, (SELECT coalesce(quota_key_id, id) AS q FROM api_keys WHERE id = $${n}) i WHERE k.id = i.q OR k.quota_key_id = i.q`

async function lockCurrent (tx: Tx, id: number, ifMatch: IfMatch): Promise<KeyRow> {
  return currentRow(await tx.first<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE`, [id]), `key ${id}`, ifMatch)
}

/** The key event of a change, in the change's transaction: the key's state, its ban in force at `now` included. */
async function appendKeyEvent (
  tx: Tx,
  type: EventType,
  record: KeyRecord,
  now: number,
  before?: KeyRecord
): Promise<void> {
  const ban = await tx.first<BanRow>(
    `SELECT ${BAN_COLUMNS} FROM bans WHERE key_id IN (${sameIdentity(1)}) AND lifted_at IS NULL AND ends_at > $2 ORDER BY ends_at DESC LIMIT 1`, [record.id, now])
  const state = { record, ban: ban === undefined ? null : toBan(ban), lastUsedAt: record.lastUsedAt }
  await appendEvents(tx, [keyEvent(type, state)], now, before)
}

interface NoticeRow { key_id: number; day: string; kind: 'quota' | 'deprecation'; operation: string; level: number }

const noticeArrays = (rows: ReadonlyArray<Pick<NoticeRow, 'key_id' | 'day' | 'kind' | 'operation'>>): unknown[] =>
  [rows.map((r) => r.key_id), rows.map((r) => r.day), rows.map((r) => r.kind), rows.map((r) => r.operation)]

/**
 * Inside recordUsage's transaction, after the counts: the quota.threshold and deprecation.used
 * events they announce (events/usage-events.ts). Each quota identity's notice row is locked
 * first (made when new), all in one order; the counts are read after, by a statement of their
 * own, so two instances flushing one chain at once take turns and the second one reads the
 * first one's counts: a threshold is written once, by whichever passes it.
 */
async function announce (tx: Tx, batch: UsageBatch): Promise<void> {
  const targets = noticeTargets(batch).map((t) => ({
    key_id: t.keyId,
    day: t.day,
    kind: t.kind,
    operation: t.operation
  }))
  if (targets.length === 0) return
  const locked = await tx.query<NoticeRow>(
    `INSERT INTO usage_notices (key_id, day, kind, operation)
     SELECT DISTINCT coalesce(k.quota_key_id, k.id), t.day, t.kind, t.operation
       FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS t (key_id, day, kind, operation) JOIN api_keys k ON k.id = t.key_id
       ORDER BY 1, 2, 3, 4
     ON CONFLICT (key_id, day, kind, operation) DO UPDATE SET level = usage_notices.level
     RETURNING key_id, day, kind, operation, level`, noticeArrays(targets))
  const open = locked.filter((r) => !isComplete(r.kind, r.level))
  if (open.length === 0) return
  const counted = await tx.query<NoticeRow & {
    plan: KeyRow['plan']
    per_minute: number | null
    per_day: number | null
    n: string
  }>(
    `SELECT t.key_id, t.day, t.kind, t.operation, i.plan, i.per_minute, i.per_day,
       CASE WHEN t.kind = 'quota'
         THEN (SELECT coalesce(sum(u.allowed), 0) FROM key_usage u JOIN api_keys c ON c.id = u.key_id WHERE u.day = t.day AND (c.id = t.key_id OR c.quota_key_id = t.key_id))
         ELSE (SELECT coalesce(sum(d.calls), 0) FROM deprecated_calls d JOIN api_keys c ON c.id = d.key_id WHERE d.operation = t.operation AND d.day = t.day AND (c.id = t.key_id OR c.quota_key_id = t.key_id))
       END AS n
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS t (key_id, day, kind, operation) JOIN api_keys i ON i.id = t.key_id`,
    noticeArrays(open))
  const levels = new Map(open.map((r) => [`${r.key_id} ${r.day} ${r.kind} ${r.operation}`, r.level]))
  const changed: NoticeRow[] = []
  const drafts = counted.flatMap((r) => {
    const level = levels.get(`${r.key_id} ${r.day} ${r.kind} ${r.operation}`) ?? 0
    const state = {
      keyId: r.key_id,
      day: r.day,
      kind: r.kind,
      operation: r.operation,
      level,
      count: Number(r.n),
      key: { plan: r.plan, perMinute: r.per_minute, perDay: r.per_day }
    }
    const notices = noticesOf(state, batch.deprecations ?? {})
    if (notices.drafts.length > 0) {
      changed.push({ key_id: r.key_id, day: r.day, kind: r.kind, operation: r.operation, level: notices.level })
    }
    return notices.drafts
  })
  if (changed.length === 0) return
  await tx.query(
    `UPDATE usage_notices n SET level = c.level FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::integer[]) AS c (key_id, day, kind, operation, level)
     WHERE n.key_id = c.key_id AND n.day = c.day AND n.kind = c.kind AND n.operation = c.operation`,
    [...noticeArrays(changed), changed.map((r) => r.level)])
  await appendEvents(tx, drafts, noticeInstant(batch))
}

export function createPostgresKeyStore (db: Db): KeyStore {
  return {
    async createKey (k) {
      // A transaction, so the key and its key.created event commit together.
      return db.transaction(async (tx) => {
        const row = await tx.first<KeyRow>(
          `INSERT INTO api_keys (name, search_name, role, plan, per_minute, per_day, key_hash, key_prefix, created_at, expires_at, scopes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING ${KEY_COLUMNS}`,
          [
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
          ])
        const created = toKey(row!)
        await appendKeyEvent(tx, 'key.created', created, k.now)
        return created
      })
    },
    async findKeyByHash (hash) {
      const row = await db.first<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = $1`, [hash])
      return row === undefined ? null : toKey(row)
    },
    async findKeysByHashes (hashes) {
      if (hashes.length === 0) return []
      // One array parameter: one statement, whatever the number of hashes, on the unique index.
      const rows = await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = ANY($1::text[])`, [hashes])
      return rows.map(toKey)
    },
    async legacyKeyPrefixes () {
      const rows = await db.query<{ key_prefix: string }>(
        'SELECT key_prefix FROM api_keys WHERE revoked_at IS NULL AND length(key_prefix) = $1',
        [DISPLAY_PREFIX_LENGTH.legacy]
      )
      return rows.map((r) => r.key_prefix)
    },
    async getKey (id) {
      const row = await db.first<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1`, [id])
      return row === undefined ? null : toKey(row)
    },
    async listKeys (page, filter) {
      const values: unknown[] = [page.afterId ?? 0, page.limit]
      const where = keyFilterSql(filter, (value) => { values.push(value); return `$${values.length}` })
      return (await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys k WHERE k.id > $1 AND ${where} ORDER BY k.id LIMIT $2`, values)).map(toKey)
    },
    async updateKey (id, changes, ifMatch, now) {
      return db.transaction(async (tx) => {
        const row = await lockCurrent(tx, id, ifMatch)
        const name = changes.name ?? row.name
        const updated = toKey((await tx.first<KeyRow>(
          `UPDATE api_keys SET name = $1, search_name = $7, role = $2, plan = $3, per_minute = $4, per_day = $5, version = version + 1 WHERE id = $6 RETURNING ${KEY_COLUMNS}`,
          [name, changes.role ?? row.role, changes.plan ?? row.plan,
            changes.perMinute === undefined ? row.per_minute : changes.perMinute,
            changes.perDay === undefined ? row.per_day : changes.perDay, id, keySearchName(name)]))!)
        // One caller, one fate: the other keys of the rotation chain take the role, plan and quotas.
        await tx.query(
          `UPDATE api_keys SET role = $2, plan = $3, per_minute = $4, per_day = $5, version = version + 1 WHERE id IN (${sameIdentity(1)}) AND id <> $1
             AND (role <> $2 OR plan <> $3 OR per_minute IS DISTINCT FROM $4 OR per_day IS DISTINCT FROM $5)`,
          [id, updated.role, updated.plan, updated.perMinute, updated.perDay])
        await appendKeyEvent(tx, 'key.updated', updated, now, toKey(row))
        return updated
      })
    },
    async revokeKey (id, now, ifMatch, reason = 'requested') {
      return db.transaction(async (tx) => {
        const row = await lockCurrent(tx, id, ifMatch)
        // One caller, one fate: the other keys of the rotation chain that still work are revoked too.
        const siblings = (await tx.query<KeyRow>(
          `UPDATE api_keys SET revoked_at = $2, version = version + 1 WHERE id IN (${sameIdentity(1)}) AND id <> $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2) RETURNING ${KEY_COLUMNS}`,
          [id, now])).map(toKey)
        const revoked = row.revoked_at !== null ? null : toKey((await tx.first<KeyRow>(`UPDATE api_keys SET revoked_at = $1, version = version + 1 WHERE id = $2 RETURNING ${KEY_COLUMNS}`, [now, id]))!)
        const records = revoked === null ? siblings : [revoked, ...siblings]
        // appendKeyEvent's state, and why (the RevokedApiKey view, keys/keys.view.ts): one event
        // (and so one audit entry) per key revoked, the rotation partner included.
        if (records.length > 0) {
          const banRow = await tx.first<BanRow>(
            `SELECT ${BAN_COLUMNS} FROM bans WHERE key_id IN (${sameIdentity(1)}) AND lifted_at IS NULL AND ends_at > $2 ORDER BY ends_at DESC LIMIT 1`, [id, now])
          const ban = banRow === undefined ? null : toBan(banRow)
          await appendEvents(tx, records.map((record) => {
            const state = { record, ban, lastUsedAt: record.lastUsedAt, reason }
            return keyEvent('key.revoked', state)
          }), now)
        }
        return revoked ?? toKey(row)
      })
    },
    async rotateKey (id, r) {
      return db.transaction(async (tx) => {
        const row = await lockCurrent(tx, id, null)
        const refusal = rotationRefusal(toKey(row), r.now)
        if (refusal !== null) throw refusal
        const created = toKey((await tx.first<KeyRow>(
          `INSERT INTO api_keys (name, search_name, role, plan, per_minute, per_day, key_hash, key_prefix, created_at, replaces, quota_key_id, scopes) VALUES ($1, $11, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12) RETURNING ${KEY_COLUMNS}`,
          [
            row.name,
            row.role,
            row.plan,
            row.per_minute,
            row.per_day,
            r.hash,
            r.prefix,
            r.now,
            row.id,
            row.quota_key_id ?? row.id,
            keySearchName(row.name),
            row.scopes
          ]))!)
        const expiresAt = row.expires_at === null ? r.graceEndsAt : Math.min(row.expires_at, r.graceEndsAt)
        const old = toKey((await tx.first<KeyRow>(
          `UPDATE api_keys SET expires_at = $1, replaced_by = $2, version = version + 1 WHERE id = $3 RETURNING ${KEY_COLUMNS}`, [expiresAt, created.id, id]))!)
        // The successor, which names the key it replaces: the key its holder now uses.
        await appendKeyEvent(tx, 'key.rotated', created, r.now)
        return { old, created }
      })
    },
    async recordBan (b) {
      return db.transaction(async (tx) => {
        // Recorded already (a retry whose first attempt committed): no second record, no second event.
        const recorded = await tx.first<BanRow>(`SELECT ${BAN_COLUMNS} FROM bans WHERE subject = $1 AND started_at = $2 AND ends_at = $3 ORDER BY id LIMIT 1`, [b.subject, b.startedAt, b.endsAt])
        if (recorded !== undefined) return toBan(recorded)
        const row = await tx.first<BanRow>(
          `INSERT INTO bans (key_id, subject, started_at, ends_at, reason, strike) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${BAN_COLUMNS}`,
          [b.keyId, b.subject, b.startedAt, b.endsAt, b.reason, b.strike ?? null])
        const identity = b.keyId === null ? undefined : await tx.first<{ q: number }>('SELECT coalesce(quota_key_id, id) AS q FROM api_keys WHERE id = $1', [b.keyId])
        if (identity !== undefined) {
          await appendEvents(
            tx,
            [keyBanEvent('key.banned', { quotaKeyId: identity.q, until: b.endsAt, strike: b.strike ?? 0 })],
            b.startedAt
          )
        }
        return toBan(row!)
      })
    },
    async activeBan (keyId, now) {
      const row = await db.first<BanRow>(
        `SELECT ${BAN_COLUMNS} FROM bans WHERE key_id IN (${sameIdentity(1)}) AND lifted_at IS NULL AND ends_at > $2 ORDER BY ends_at DESC LIMIT 1`, [keyId, now])
      return row === undefined ? null : toBan(row)
    },
    async activeBans (now, limit) {
      return (await db.query<BanRow>(`SELECT ${BAN_COLUMNS} FROM bans WHERE lifted_at IS NULL AND ends_at > $1 ORDER BY ends_at DESC LIMIT $2`, [now, limit])).map(toBan)
    },
    async liftBans (keyId, now) {
      return db.transaction(async (tx) => {
        const lifted = await tx.query<{ strike: number | null }>(`UPDATE bans SET lifted_at = $1 WHERE key_id IN (${sameIdentity(2)}) AND lifted_at IS NULL AND ends_at > $1 RETURNING strike`, [now, keyId])
        const identity = lifted.length === 0 ? undefined : await tx.first<{ q: number }>('SELECT coalesce(quota_key_id, id) AS q FROM api_keys WHERE id = $1', [keyId])
        if (identity !== undefined) {
          await appendEvents(tx, [keyBanEvent('key.unbanned', {
            quotaKeyId: identity.q,
            until: now,
            strike: Math.max(...lifted.map((b) => b.strike ?? 0))
          })], now)
        }
        return lifted.length
      })
    },
    async bansLiftedSince (since, endingAfter = Number.MIN_SAFE_INTEGER) {
      return (await db.query<BanRow>(`SELECT ${BAN_COLUMNS} FROM bans WHERE lifted_at > $1 AND ends_at > $2 ORDER BY lifted_at, id LIMIT 10000`, [since, endingAfter])).map(toBan)
    },
    async recordUsage (batch) {
      const deprecated = [...batch.deprecated ?? []].sort((a, b) => a.keyId - b.keyId)
      if (batch.counts.length === 0 && batch.lastUsed.length === 0 && deprecated.length === 0) return
      // Two statements whatever the batch size (arrays, unnest). Rows are taken in key order so
      // that two instances flushing at once lock them in the same order; a deadlock would still
      // only retry the whole transaction (database.ts), never count twice.
      const counts = [...batch.counts].sort((a, b) => a.keyId - b.keyId || (a.day < b.day ? -1 : a.day > b.day ? 1 : 0))
      const lastUsed = [...batch.lastUsed].sort((a, b) => a.keyId - b.keyId)
      await db.transaction(async (tx) => {
        if (counts.length > 0) {
          await tx.query(
            `INSERT INTO key_usage (key_id, day, allowed, limited, banned, mcp, other_4xx)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
             ON CONFLICT (key_id, day) DO UPDATE SET allowed = key_usage.allowed + excluded.allowed, limited = key_usage.limited + excluded.limited, banned = key_usage.banned + excluded.banned,
               mcp = key_usage.mcp + excluded.mcp, other_4xx = key_usage.other_4xx + excluded.other_4xx`,
            [
              counts.map((c) => c.keyId),
              counts.map((c) => c.day),
              counts.map((c) => c.allowed),
              counts.map((c) => c.limited),
              counts.map((c) => c.banned),
              counts.map((c) => c.mcp ?? 0),
              counts.map((c) => c.other4xx ?? 0)
            ])
        }
        if (lastUsed.length > 0) {
          await tx.query(
            `UPDATE api_keys k SET last_used_at = u.at FROM unnest($1::bigint[], $2::bigint[]) AS u (id, at)
             WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`,
            [lastUsed.map((u) => u.keyId), lastUsed.map((u) => u.at)])
        }
        if (deprecated.length > 0) {
          await tx.query(
            `INSERT INTO deprecated_calls (operation, key_id, day, calls, last_call_at)
             SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[])
             ON CONFLICT (operation, key_id, day) DO UPDATE SET calls = deprecated_calls.calls + excluded.calls, last_call_at = greatest(deprecated_calls.last_call_at, excluded.last_call_at)`,
            [
              deprecated.map((d) => d.operation),
              deprecated.map((d) => d.keyId),
              deprecated.map((d) => d.day),
              deprecated.map((d) => d.calls),
              deprecated.map((d) => d.lastCallAt)
            ])
        }
        await announce(tx, batch)
      })
    },
    async usage (keyId, fromDay) {
      return (await db.query<Other4xxSql>(`SELECT ${USAGE_COLUMNS}, other_4xx FROM key_usage WHERE key_id = $1 AND day >= $2 ORDER BY day`, [keyId, fromDay]))
        .map((r) => ({ ...toUsage(r), other4xx: r.other_4xx }))
    },
    async deprecatedCalls (fromDay, keyId) {
      // One key's rows (deprecated_calls_by_key) for its holder's usage view; every key's for the admin's.
      const rows = keyId === undefined
        ? await db.query<DeprecatedCallSql>('SELECT operation, key_id, day, calls, last_call_at FROM deprecated_calls WHERE day >= $1 ORDER BY operation, key_id, day', [fromDay])
        : await db.query<DeprecatedCallSql>('SELECT operation, key_id, day, calls, last_call_at FROM deprecated_calls WHERE key_id = $1 AND day >= $2 ORDER BY operation, day', [keyId, fromDay])
      return rows.map(toDeprecatedCall)
    },
    async banHistory (keyId, limit) {
      return (await db.query<BanRow>(`SELECT ${BAN_COLUMNS} FROM bans WHERE key_id IN (${sameIdentity(1)}) ORDER BY started_at DESC, id DESC LIMIT $2`, [keyId, limit])).map(toBan)
    },
    async pruneUsageNotices (beforeDay, max) {
      const rows = await db.query<{ n: string }>(`WITH gone AS (DELETE FROM usage_notices WHERE (key_id, day, kind, operation) IN
          (SELECT key_id, day, kind, operation FROM usage_notices WHERE day < $1 LIMIT $2) RETURNING 1) SELECT count(*) AS n FROM gone`, [beforeDay, max])
      return Number(rows[0]?.n ?? 0)
    },
    async pruneUsage (beforeDay, max) {
      const rows = await db.query<{ n: string }>(`WITH gone AS (DELETE FROM key_usage WHERE (key_id, day) IN
          (SELECT key_id, day FROM key_usage WHERE day < $1 LIMIT $2) RETURNING 1) SELECT count(*) AS n FROM gone`, [beforeDay, max])
      return Number(rows[0]?.n ?? 0)
    },
    async pruneDeprecatedCalls (beforeDay, max) {
      const rows = await db.query<{ n: string }>(`WITH gone AS (DELETE FROM deprecated_calls WHERE (operation, key_id, day) IN
          (SELECT operation, key_id, day FROM deprecated_calls WHERE day < $1 LIMIT $2) RETURNING 1) SELECT count(*) AS n FROM gone`, [beforeDay, max])
      return Number(rows[0]?.n ?? 0)
    }
  }
}
