// WebhookStore on SQLite. Every change runs in the writer, so the fan-out's read of the feed,
// its deliveries and its cursor move are one transaction, and a claim (an UPDATE … RETURNING per
// endpoint with room) is one writer callback that no other write can interleave with. An
// endpoint created, changed, rotated, deleted or replayed writes no event: its audit entry is
// appended here, in the writer's callback, by the actor taken before the write was queued.
import type { StatementSync } from 'node:sqlite'
import type { WebhookChange } from '../../audit/audit.rules.ts'
import { webhookLimitReached } from '../../errors.ts'
import type { StoredEvent } from '../../events/events.store.ts'
import type { Role } from '../../accounts/plans.ts'
import { typeFilterOf } from '../../webhooks/event-types.ts'
import type { ClaimedDelivery, ReplayResult, WebhookRecord, WebhookStore } from '../../webhooks/webhooks.store.ts'
import { eventFilterSql } from '../event-filters.ts'
import {
  ATTEMPT_COLUMNS,
  ATTEMPT_DETAIL_COLUMNS,
  attemptDetailValues,
  deliveryEntries,
  fanOutPairs,
  hourOf,
  kindOf,
  liveOwnerSql,
  liveSecrets,
  PENDING_COLUMNS,
  replayRoom,
  toAttemptDetail,
  toWebhook,
  WEBHOOK_COLUMNS,
  type AttemptDetailRow,
  type AttemptRow,
  type EndpointOwner,
  type Origin,
  type PendingRow,
  type WebhookRow
} from '../webhook-rows.ts'
import type { ActorContext, ActorSource } from '../../shared/actor-context.ts'
import type { SqliteAuditAppend } from './audit.ts'
import type { Db } from './database.ts'
import type { SqliteEventLog } from './events.ts'
import type { Writer } from './writer.ts'

interface EventRow {
  seq: number
  id: string
  type: string
  created_at: number
  audience: StoredEvent['audience']
  subject_key_id: number | null
  data: string
}
const EVENT_COLUMNS = 'e.seq, e.id, e.type, e.created_at, e.audience, e.subject_key_id, e.data'
const toEvent = (row: EventRow): StoredEvent => ({
  id: row.id, type: row.type, createdAt: row.created_at, audience: row.audience, subjectKeyId: row.subject_key_id,
  data: JSON.parse(row.data), position: { tx: '0', seq: row.seq }
})

type SqlValue = string | number | null

interface ClaimRow extends EventRow {
  delivery_id: number
  attempts: number
  test_type: string | null
  origin: Origin
  replay_due: number
  request_body: string | null
  webhook_id: string
  owner_key_id: number
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_until: number | null
}

// These two are exported for their plan test (test/storage/sqlite/stores.test.ts): each must read
// webhook_deliveries_claim in its order, so its cost follows the rows it returns, not an
// endpoint's backlog.
/**
 * An endpoint's pending deliveries, latest due first: the index read backwards. The list shows a
 * pending one at the time it is due (deliveryEntries sorts by it), so these are the ones it can show.
 */
export const PENDING_SQL = `SELECT ${PENDING_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
  WHERE d.webhook_id = ? AND d.status = 'pending' ORDER BY d.next_attempt_at DESC, d.id DESC LIMIT ?`
/**
 * One endpoint's claim: at most LIMIT of its due deliveries, from webhook_deliveries_claim in
 * claim order (next_attempt_at, id), skipping those another lease still holds. A window over every
 * pending delivery did this before, at a cost in proportion to the backlog, inside the writer.
 */
export const CLAIM_SQL = `UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ? WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE webhook_id = ? AND status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)
    ORDER BY next_attempt_at, id LIMIT ?)
  RETURNING id`

/**
 * The dispatcher's own writes (fan-out, leases, attempt records) answer at the commit, not after
 * its fsync (writer.ts, RunOptions): what a power loss could undo is redone (the fan-out reads
 * the feed again, an attempt is made again: at-least-once), and each round and attempt waited
 * for an fsync twice, which held one endpoint to about 1,700 deliveries a second.
 */
const BOOKKEEPING = { durable: false }
/** The claimed deliveries' reads kept prepared: one per claim size up to the default WEBHOOK_MAX_IN_FLIGHT. */
const CLAIM_READS_KEPT = 64
/** Deliveries of a deleted endpoint removed per write (with their attempts): about 3 ms each. */
const PURGE_BATCH = 1000

/**
 * `events`: the event log (webhook.test, webhook.disabled); `auditLog`: the audit door, through
 * which an endpoint's change (which writes no event) is recorded; `actor`: who makes the change.
 */
/**
 * A success settles the event's other deliveries to the endpoint that wait. Found by the event's
 * index: `+webhook_id` keeps the planner off the claim index, whose (webhook_id) prefix would walk
 * every pending delivery of the endpoint on each success (with a backlog of 30,000, deliveries
 * fell to 200 a second in the bench's webhooks row). Exported for the test of its plan.
 */
export const SETTLE_OTHERS_SQL = `UPDATE webhook_deliveries SET status = 'succeeded', next_attempt_at = NULL,
  lease_owner = NULL, lease_until = NULL, updated_at = ?2
  WHERE event_id = (SELECT event_id FROM webhook_deliveries WHERE id = ?1) AND +webhook_id = ?3 AND status = 'pending'
  AND id <> ?1`

export function createSqliteWebhookStore (
  db: Db,
  writer: Writer,
  events: SqliteEventLog,
  auditLog: SqliteAuditAppend,
  actor: ActorSource
): WebhookStore {
  /** The audit entry of `change`, by `by` (the actor of the caller, taken when it queued the write). */
  const audit = (change: WebhookChange, now: number, by: ActorContext): void => {
    auditLog({ webhook: change }, now, by)
  }
  const byId = db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = ?`)
  const countByOwner = db.prepare('SELECT count(*) AS n FROM webhooks WHERE owner_key_id = ?')
  const insert = db.prepare(`INSERT INTO webhooks (id, owner_key_id, url, types, description, status, secret, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, 'enabled', ?, ?, ?) RETURNING ${WEBHOOK_COLUMNS}`)
  const update = db.prepare(`UPDATE webhooks SET url = ?, types = ?, description = ?, status = ?, updated_at = ?,
    failing_since = CASE WHEN ? = 'enabled' AND status = 'disabled' THEN NULL ELSE failing_since END,
    disabled_reason = CASE WHEN ?6 = 'enabled' THEN NULL WHEN status = 'enabled' THEN 'manual' ELSE disabled_reason END, version = version + 1
    WHERE id = ? RETURNING ${WEBHOOK_COLUMNS}`)
  const remove = db.prepare('DELETE FROM webhooks WHERE id = ?')
  const purge = db.prepare('DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = ? LIMIT ?)')
  const rotate = db.prepare(`UPDATE webhooks SET previous_secret = secret, previous_secret_until = ?, secret = ?, updated_at = ?, version = version + 1
    WHERE id = ? RETURNING ${WEBHOOK_COLUMNS}`)
  const lastEvent = db.prepare('SELECT id FROM events WHERE seq = last_insert_rowid()')
  const insertDelivery = db.prepare(`INSERT INTO webhook_deliveries (webhook_id, event_id, origin, status, next_attempt_at, created_at, updated_at, test_type)
    VALUES (?, ?, ?, 'pending', ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
  const cursor = db.prepare("SELECT seq FROM event_cursors WHERE name = 'webhooks'")
  const moveCursor = db.prepare("UPDATE event_cursors SET seq = ? WHERE name = 'webhooks'")
  // The fan-out's read: an event's head, not its data (fanOutPairs decides without it).
  const feed = db.prepare('SELECT seq, id, type, created_at, audience, subject_key_id FROM events WHERE seq > ? ORDER BY seq LIMIT ?')
  const endpoints = db.prepare(`SELECT w.id, w.types, w.owner_key_id, k.role, w.created_at FROM webhooks w JOIN api_keys k ON k.id = w.owner_key_id
    WHERE w.status = 'enabled' AND ${liveOwnerSql('?1')}`)
  const attempts = db.prepare(`SELECT ${ATTEMPT_COLUMNS}
    FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
    WHERE a.webhook_id = ? ORDER BY a.id DESC LIMIT ?`)
  const pending = db.prepare(PENDING_SQL)
  const claimable = db.prepare(`SELECT w.id, w.seq, w.owner_key_id FROM webhooks w WHERE w.status = 'enabled' AND ${liveOwnerSql('?1')}
    ORDER BY w.seq`)
  const claim = db.prepare(CLAIM_SQL)
  // The creation order (seq) from which the next claim starts: see claimDue.
  let turnFrom = 0
  // The claimed deliveries' read, prepared once per number of ids (a refill claims one): prepared
  // at each claim, its parsing was half of the read's time (docs/performance-history.md,
  // "Session 27"). At most CLAIM_READS_KEPT kept; a larger claim prepares its own.
  const claimReads = new Map<number, StatementSync>()
  const claimRead = (n: number): StatementSync => {
    let read = claimReads.get(n)
    if (read === undefined) {
      read = db.prepare(`SELECT d.id AS delivery_id, d.attempts, d.test_type, d.origin, d.replay_due, d.request_body, w.id AS webhook_id, w.owner_key_id, w.url, w.secret,
      w.previous_secret, w.previous_secret_until, ${EVENT_COLUMNS}
      FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id
      WHERE d.id IN (${Array.from({ length: n }, () => '?').join(', ')}) ORDER BY d.next_attempt_at, d.id`)
      if (n <= CLAIM_READS_KEPT) claimReads.set(n, read)
    }
    return read
  }
  const claimed = (ids: number[], now: number): ClaimedDelivery[] => {
    if (ids.length === 0) return []
    const rows = claimRead(ids.length).all(...ids) as unknown as ClaimRow[]
    return rows.map((row) => ({
      id: row.delivery_id,
      webhookId: row.webhook_id,
      ownerKeyId: row.owner_key_id,
      url: row.url,
      attempts: row.attempts,
      event: toEvent(row),
      testType: row.test_type,
      kind: kindOf(row.attempts + 1, row.origin, row.replay_due === 1),
      requestBody: row.request_body,
      secrets: liveSecrets({
        secret: row.secret,
        previousSecret: row.previous_secret,
        previousSecretUntil: row.previous_secret_until
      }, now)
    }))
  }
  // Not when the delivery is gone (its endpoint deleted while the attempt was in flight).
  const insertAttempt = db.prepare(`INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, kind, at, outcome, status, error, duration_ms,
    request_url, request_headers, response_headers, response_body, response_truncated)
    SELECT ?1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = ?1)`)
  // The body is kept once per delivery, by its first attempt that sent one (every later attempt
  // sends it again: ClaimedDelivery.requestBody).
  const settle = db.prepare(`UPDATE webhook_deliveries SET attempts = ?, status = ?, next_attempt_at = ?, lease_owner = NULL, lease_until = NULL,
    last_status = ?, last_error = ?, updated_at = ?, replay_due = 0, request_body = coalesce(request_body, ?) WHERE id = ? AND lease_owner = ?`)
  // The same WHERE as the attempts' list, and the endpoint: an attempt of another endpoint does not exist here.
  const attemptById = db.prepare(`SELECT ${ATTEMPT_DETAIL_COLUMNS}
    FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
    WHERE a.id = ? AND a.webhook_id = ?`)
  // A batch of attempts past retention (webhook_attempts_details): first the bodies of their
  // deliveries that no longer wait and whose last change is as old, then the attempts' details.
  // Both in one writer callback, so they read the same batch.
  const PRUNE_BATCH_SQL = 'SELECT id FROM webhook_attempts WHERE request_headers IS NOT NULL AND at < ?1 ORDER BY at LIMIT ?2'
  const pruneBodies = db.prepare(`UPDATE webhook_deliveries SET request_body = NULL
    WHERE id IN (SELECT delivery_id FROM webhook_attempts WHERE id IN (${PRUNE_BATCH_SQL}))
    AND request_body IS NOT NULL AND status <> 'pending' AND updated_at < ?1`)
  const pruneAttempts = db.prepare(`UPDATE webhook_attempts SET request_url = NULL, request_headers = NULL, response_headers = NULL,
    response_body = NULL, response_truncated = NULL WHERE id IN (${PRUNE_BATCH_SQL})`)
  // A success settles the event's other deliveries to the endpoint that wait (a retry beside a
  // replay): the receiver has it, so none is sent again, and none counts as pending. One leased
  // by an attempt in flight loses its lease, so that attempt's record leaves it settled.
  // (SETTLE_OTHERS_SQL)
  const settleOthers = db.prepare(SETTLE_OTHERS_SQL)
  const succeeded = db.prepare('UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL')
  const failed = db.prepare('UPDATE webhooks SET failing_since = coalesce(failing_since, ?) WHERE id = ? RETURNING failing_since, status')
  const disable = db.prepare(`UPDATE webhooks SET status = 'disabled', disabled_reason = ?, updated_at = ?, version = version + 1
    WHERE id = ? AND status = 'enabled' RETURNING ${WEBHOOK_COLUMNS}`)
  const inactive = db.prepare(`SELECT w.id FROM webhooks w WHERE w.status = 'enabled' AND NOT ${liveOwnerSql('?1')}`)
  const roleOf = db.prepare('SELECT k.role FROM webhooks w JOIN api_keys k ON k.id = w.owner_key_id WHERE w.id = ?')
  const stats = db.prepare(`SELECT count(*) AS n, min(d.created_at) AS oldest FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
    WHERE d.status = 'pending' AND w.status = 'enabled'`)

  const replayOwner = db.prepare('SELECT w.owner_key_id, k.role, w.types FROM webhooks w JOIN api_keys k ON k.id = w.owner_key_id WHERE w.id = ?')
  const replayUsed = db.prepare('SELECT queued FROM webhook_replays WHERE owner_key_id = ? AND hour = ?')
  const replayCount = db.prepare(`INSERT INTO webhook_replays (owner_key_id, hour, queued) VALUES (?, ?, ?)
    ON CONFLICT (owner_key_id, hour) DO UPDATE SET queued = queued + excluded.queued`)
  const replayForget = db.prepare('DELETE FROM webhook_replays WHERE owner_key_id = ? AND hour < ?')
  const insertReplay = db.prepare(`INSERT INTO webhook_deliveries (webhook_id, event_id, origin, status, next_attempt_at, created_at, updated_at)
    VALUES (?, ?, 'replay', 'pending', ?, ?, ?)`)
  // The retry made due now is this replay's attempt: its kind says so (replay_due).
  const hasten = db.prepare(`UPDATE webhook_deliveries SET next_attempt_at = ?1, updated_at = ?1, replay_due = 1
    WHERE id = ?2 AND status = 'pending' AND next_attempt_at > ?1 AND (lease_until IS NULL OR lease_until < ?1)`)
  const ownerOf = (id: string): WebhookRow | undefined => byId.get(id) as WebhookRow | undefined

  return {
    async createWebhook (input, maxPerOwner) {
      const by = actor()
      return await writer.run(() => {
        const { n } = countByOwner.get(input.ownerKeyId) as { n: number }
        if (n >= maxPerOwner) throw webhookLimitReached(maxPerOwner)
        const created = toWebhook(insert.get(
          input.id,
          input.ownerKeyId,
          input.url,
          JSON.stringify(input.types),
          input.description,
          input.secret,
          input.now,
          input.now
        ) as unknown as WebhookRow)
        audit({ action: 'webhook.create', after: created }, input.now, by)
        return created
      })
    },
    async getWebhook (id) {
      const row = ownerOf(id)
      return row === undefined ? null : toWebhook(row)
    },
    async listWebhooks (ownerKeyId, afterSeq, limit) {
      const where = ownerKeyId === null ? 'seq > ?' : 'owner_key_id = ? AND seq > ?'
      const params: SqlValue[] = ownerKeyId === null ? [afterSeq ?? 0, limit] : [ownerKeyId, afterSeq ?? 0, limit]
      return (db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE ${where} ORDER BY seq LIMIT ?`).all(...params) as unknown as WebhookRow[]).map(toWebhook)
    },
    async updateWebhook (id, patch, now, disabledEvent) {
      const by = actor()
      return await writer.run(() => {
        const row = ownerOf(id)
        if (row === undefined) return null
        const before = toWebhook(row)
        const status = patch.status ?? before.status
        const after = toWebhook(update.get(
          patch.url ?? before.url,
          JSON.stringify(patch.types ?? before.types),
          patch.description ?? before.description,
          status,
          now,
          status,
          id
        ) as unknown as WebhookRow)
        if (before.status === 'enabled' && after.status === 'disabled') events.append([disabledEvent(after)], now)
        audit({ action: 'webhook.update', before, after }, now, by)
        return after
      })
    },
    async deleteWebhook (id, now) {
      const by = actor()
      // An endpoint's history (a delivery and its attempts per event) goes first, PURGE_BATCH
      // deliveries a write: in one write, the 170,000 of a bench run held the event loop for
      // 0.5 s and the savepoint's journal, in memory, kept 30 MiB of the heap for good.
      // Bookkeeping: the delete that follows is the write the caller is answered on, once durable.
      while (await writer.run(() => Number(purge.run(id, PURGE_BATCH).changes), BOOKKEEPING) === PURGE_BATCH) {
        /* next batch */
      }
      return await writer.run(() => {
        const row = ownerOf(id)
        if (row === undefined) return false
        remove.run(id)
        audit({ action: 'webhook.delete', before: toWebhook(row) }, now, by)
        return true
      })
    },
    async rotateSecret (id, secret, previousUntil, now) {
      const by = actor()
      return await writer.run(() => {
        const was = ownerOf(id)
        const row = rotate.get(previousUntil, secret, now, id) as WebhookRow | undefined
        if (was === undefined || row === undefined) return null
        audit({
          action: 'webhook.rotate_secret',
          id,
          previousUntil: { before: toWebhook(was).previousSecretUntil, after: previousUntil }
        }, now, by)
        return toWebhook(row)
      })
    },
    async queueTest (id, event, now, testType) {
      return await writer.run(() => {
        events.append([event], now)
        const { id: eventId } = lastEvent.get() as { id: string }
        insertDelivery.run(id, eventId, 'test', now, now, now, testType ?? null)
        return eventId
      })
    },
    async ownerRole (id) {
      const row = roleOf.get(id) as { role: Role } | undefined
      return row?.role ?? null
    },
    async replay (id, selection, now, limits) {
      const by = actor()
      return await writer.run((): ReplayResult => {
        const owner = replayOwner.get(id) as { owner_key_id: number; role: Role; types: string } | undefined
        if (owner === undefined) return { queued: 0, nextSince: null }
        const hour = hourOf(now)
        const used = (replayUsed.get(owner.owner_key_id, hour) as { queued: number } | undefined)?.queued ?? 0
        const { room, retryAt } = replayRoom(used, limits.max, limits.perHour, now)
        if (room === 0) return { refused: 'rate', retryAt }
        const types = JSON.parse(owner.types) as string[]
        // Each placeholder is added as the text is built, in the order it appears in it.
        const params: SqlValue[] = []
        const param = (value: unknown): string => { params.push(value as SqlValue); return '?' }
        const range = (): string => 'eventIds' in selection
          ? `e.id IN (${selection.eventIds.map((eventId) => param(eventId)).join(', ')})`
          : `e.created_at >= ${param(selection.since)} AND e.created_at < ${param(selection.until)}`
        const onlyFailed = !('eventIds' in selection) && selection.onlyFailed === true
        const visibility = owner.role === 'admin' ? { role: 'admin' as const } : { role: owner.role, keyId: owner.owner_key_id }
        // An event queued already is not queued twice: one whose delivery to the endpoint is due
        // or in flight is left out; one whose delivery waits for a later retry comes with it
        // (`pending`), to be made due now. A recovery takes only the events whose delivery failed
        // for good and that no delivery has brought since nor waits to bring. One more than the
        // room is read: the first left out says where a next request goes on.
        const sql = `SELECT e.id, e.created_at,
            (SELECT max(p.id) FROM webhook_deliveries p WHERE p.event_id = e.id AND p.webhook_id = ${param(id)} AND p.status = 'pending') AS pending
          FROM events e
          WHERE ${range()} AND e.type <> 'webhook.test' AND ${eventFilterSql(visibility, typeFilterOf(types), param)}
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries q WHERE q.event_id = e.id AND q.webhook_id = ${param(id)} AND q.status = 'pending'
            AND (q.next_attempt_at <= ${param(now)} OR q.lease_until >= ${param(now)}))
          ${onlyFailed
            ? `AND EXISTS (SELECT 1 FROM webhook_deliveries f WHERE f.event_id = e.id AND f.webhook_id = ${param(id)} AND f.status = 'failed')
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries s WHERE s.event_id = e.id AND s.webhook_id = ${param(id)}
              AND s.status IN ('pending', 'succeeded'))`
            : ''}
          ORDER BY e.created_at, e.seq LIMIT ${param(room + 1)}`
        const found = db.prepare(sql).all(...params) as Array<{
          id: string
          created_at: number
          pending: number | null
        }>
        const queue = found.slice(0, room)
        for (const event of queue) {
          if (event.pending === null) insertReplay.run(id, event.id, now, now, now)
          else hasten.run(now, event.pending)
        }
        if (queue.length > 0) {
          replayCount.run(owner.owner_key_id, hour, queue.length)
          replayForget.run(owner.owner_key_id, hour)
        }
        audit({ action: 'webhook.replay', id, selection, queued: queue.length }, now, by)
        return { queued: queue.length, nextSince: found[room]?.created_at ?? null }
      })
    },
    async listDeliveries (id, limit) {
      return deliveryEntries(
        attempts.all(id, limit) as unknown as AttemptRow[],
        pending.all(id, limit) as unknown as PendingRow[],
        limit
      )
    },
    async getAttempt (webhookId, attemptId) {
      const row = attemptById.get(attemptId, webhookId) as AttemptDetailRow | undefined
      return row === undefined ? null : toAttemptDetail(row)
    },
    async pruneAttemptDetails (before, max) {
      return await writer.run(() => {
        pruneBodies.run(before, max)
        return Number(pruneAttempts.run(before, max).changes)
      }, BOOKKEEPING)
    },
    async fanOut (now, batch) {
      return await writer.run(() => {
        const { seq } = cursor.get() as { seq: number }
        const rows = (feed.all(seq, batch) as unknown as Array<Omit<EventRow, 'data'>>)
          .map((row) => ({
            seq: row.seq,
            id: row.id,
            type: row.type,
            createdAt: row.created_at,
            audience: row.audience,
            subjectKeyId: row.subject_key_id
          }))
        if (rows.length === 0) return 0
        const owners = (endpoints.all(now) as Array<{
          id: string
          types: string
          owner_key_id: number
          role: EndpointOwner['ownerRole']
          created_at: number
        }>).map((row) => ({
          id: row.id,
          types: JSON.parse(row.types) as string[],
          ownerKeyId: row.owner_key_id,
          ownerRole: row.role,
          createdAt: row.created_at
        }))
        for (const { webhookId, eventId } of fanOutPairs(rows, owners)) {
          insertDelivery.run(webhookId, eventId, 'feed', now, now, now, null)
        }
        moveCursor.run(rows[rows.length - 1]!.seq)
        return rows.length
      }, BOOKKEEPING)
    },
    async claimDue (due) {
      const { now, leaseOwner, leaseUntil, limit, perEndpoint, inFlight } = due
      const perOwner = due.perOwner ?? Number.POSITIVE_INFINITY
      const ownerHeld = due.inFlightByOwner ?? {}
      if (limit <= 0) return []
      const ids = await writer.run(() => {
        // Endpoints take turns at going first (round robin in creation order): when the limit
        // runs out, the next claim starts after the endpoint it ran out at, so a few endpoints
        // with a backlog never keep the others waiting for good. Per store, so per instance.
        const endpoints = claimable.all(now) as Array<{ id: string; seq: number; owner_key_id: number }>
        const first = endpoints.findIndex((endpoint) => endpoint.seq >= turnFrom)
        const turns = first <= 0 ? endpoints : [...endpoints.slice(first), ...endpoints.slice(0, first)]
        // Before the turns, the owners with the fewest attempts in flight (a stable sort keeps
        // the turns among equals): a slot that frees goes to a key holder who waits.
        const held = (owner: number): number => ownerHeld[String(owner)] ?? 0
        turns.sort((a, b) => held(a.owner_key_id) - held(b.owner_key_id))
        const takenBy = new Map<number, number>()
        const taken: number[] = []
        for (const endpoint of turns) {
          const owner = endpoint.owner_key_id
          const room = Math.min(
            perEndpoint - (inFlight[endpoint.id] ?? 0),
            perOwner - held(owner) - (takenBy.get(owner) ?? 0),
            limit - taken.length
          )
          if (room <= 0) continue
          for (const row of claim.all(leaseOwner, leaseUntil, endpoint.id, now, now, room) as Array<{ id: number }>) {
            taken.push(row.id)
            takenBy.set(owner, (takenBy.get(owner) ?? 0) + 1)
          }
          if (taken.length === limit) {
            turnFrom = endpoint.seq + 1
            break
          }
        }
        return taken
      }, BOOKKEEPING)
      return claimed(ids, now)
    },
    async recordAttempt (record) {
      return await writer.run(() => {
        const [url, sent, headers, body, truncated] = attemptDetailValues(record)
        insertAttempt.run(
          record.deliveryId,
          record.webhookId,
          record.attempt,
          record.kind ?? null,
          record.at,
          record.outcome,
          record.status,
          record.error,
          record.durationMs,
          url,
          sent,
          headers,
          body,
          truncated === null ? null : Number(truncated)
        )
        const status = record.outcome === 'succeeded' ? 'succeeded' : record.nextAttemptAt === null ? 'failed' : 'pending'
        settle.run(
          record.attempt,
          status,
          record.outcome === 'succeeded' ? null : record.nextAttemptAt,
          record.status,
          record.error,
          record.at,
          record.request?.body ?? null,
          record.deliveryId,
          record.leaseOwner
        )
        if (record.outcome === 'succeeded') {
          settleOthers.run(record.deliveryId, record.at, record.webhookId)
          succeeded.run(record.webhookId)
          return null
        }
        const state = failed.get(record.at, record.webhookId) as { failing_since: number; status: string } | undefined
        if (state === undefined || state.status !== 'enabled' || state.failing_since > record.disableIfFailingSince) return null
        const row = disable.get('failing', record.at, record.webhookId) as WebhookRow | undefined
        if (row === undefined) return null
        const disabled = toWebhook(row)
        events.append([record.disabledEvent(disabled)], record.at)
        return disabled
      }, BOOKKEEPING)
    },
    async disableInactiveOwners (now, disabledEvent) {
      // A read first: almost every round finds none, and then queues no write.
      if (inactive.all(now).length === 0) return []
      return await writer.run(() => {
        const disabled: WebhookRecord[] = []
        for (const { id } of inactive.all(now) as Array<{ id: string }>) {
          const row = disable.get('owner_inactive', now, id) as WebhookRow | undefined
          if (row === undefined) continue
          const webhook = toWebhook(row)
          events.append([disabledEvent(webhook)], now)
          disabled.push(webhook)
        }
        return disabled
      }, BOOKKEEPING)
    },
    async pendingStats () {
      const row = stats.get() as { n: number; oldest: number | null }
      return { pending: row.n, oldestCreatedAt: row.oldest }
    }
  }
}
