// WebhookStore on PostgreSQL. The fan-out holds the 'webhooks' cursor row FOR UPDATE while it
// reads the feed and inserts the deliveries, so two instances never fan out the same events; a
// claim takes due deliveries FOR UPDATE SKIP LOCKED and sets a lease, so two instances never take
// the same one, and an instance that dies leaves its lease to expire. An endpoint created,
// changed, rotated, deleted or replayed writes no event: its audit entry is appended here, in the
// change's transaction (audit.ts).
import type { WebhookChange } from '../../audit/audit.rules.ts'
import { ServiceUnavailableError, webhookLimitReached } from '../../errors.ts'
import type { StoredEvent } from '../../events/events.store.ts'
import type { Role } from '../../accounts/plans.ts'
import { typeFilterOf } from '../../webhooks/event-types.ts'
import type {
  AttemptRecord, ClaimedDelivery, DueClaim, RefillWithRecord, ReplayResult, WebhookRecord, WebhookStore
} from '../../webhooks/webhooks.store.ts'
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
import { appendAudit } from './audit.ts'
import { createBatcher } from './batch.ts'
import type { Db, Tx } from './database.ts'
import { appendEvents } from './events.ts'

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
const toEvent = (row: EventRow): StoredEvent => ({
  id: row.id, type: row.type, createdAt: Number(row.created_at), audience: row.audience,
  subjectKeyId: row.subject_key_id === null ? null : Number(row.subject_key_id), data: JSON.parse(row.data),
  position: { tx: row.tx, seq: Number(row.seq) }
})

interface ClaimRow extends EventRow {
  delivery_id: string
  next_attempt_at: string
  attempts: number
  test_type: string | null
  origin: Origin
  replay_due: boolean
  request_body: string | null
  webhook_id: string
  owner_key_id: string
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_until: string | null
}

/** The audit entry of `change`, through the audit door, by the transaction's actor. */
const audit = (tx: Tx, change: WebhookChange, now: number): Promise<void> => appendAudit(tx, { webhook: change }, now)

const INSERT_DELIVERY = `INSERT INTO webhook_deliveries (webhook_id, event_id, origin, status, next_attempt_at, created_at, updated_at)`

/**
 * An endpoint's pending deliveries, latest due first: webhook_deliveries_claim read backwards, so
 * never a sort of the endpoint's backlog. The list shows a pending one at the time it is due
 * (deliveryEntries sorts by it), so these are the ones it can show. Exported, like CLAIM_SQL, for
 * its plan test.
 */
export const PENDING_SQL = `SELECT ${PENDING_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
  WHERE d.webhook_id = $1 AND d.status = 'pending' ORDER BY d.next_attempt_at DESC, d.id DESC LIMIT $2`

/**
 * The claim, in one round trip: claim_webhook_deliveries (migration 28). In claim order (the
 * owners with the fewest attempts in flight first; among equals, endpoints take turns at going
 * first, from the creation order $7 on: see claimDue), it reads each enabled endpoint's due
 * deliveries from webhook_deliveries_claim, oldest first, locked FOR UPDATE SKIP LOCKED (another
 * instance's claim running now keeps its rows and this one reads on): at most the endpoint's room
 * ($1 perEndpoint less this instance's in-flight count in $2), its owner's room left ($8 perOwner
 * less the owner's in $9, less what this claim took of it) and what the limit $4 leaves, and only
 * while the owner is live at $3. It stops at the limit: the statement before it read every
 * endpoint with work due (10 µs each), and a refill, which claims one, cost 1.1 ms with 200 of
 * them holding a backlog. What still grows with the endpoints is their sorted list, a read of
 * webhooks alone (about 0.5 µs an endpoint). Then it leases what it read, and its commit does not
 * wait for the WAL flush: a lease lost to a crash of PostgreSQL's machine only lets the delivery
 * be claimed again (at least once), and waiting for the flush made each claim, one per delivery
 * of a backlog, wait for the disk. It runs as a named prepared statement: a refill claims once
 * per attempt that ends, and planning each time cost more than running (docs/performance.md,
 * "PostgreSQL webhooks"). A refill's claim starts each endpoint's read past the last delivery this
 * store claimed of it ($10, migration 30: see claimDue). Exported for its tests
 * (test/storage/postgres/stores.test.ts).
 */
export const CLAIM_SQL = `SELECT delivery_id, attempts, test_type, origin, replay_due, request_body, webhook_id, owner_key_id, url, secret,
    previous_secret, previous_secret_until, turn_seq, next_attempt_at, seq, tx, id, type, created_at, audience, subject_key_id, data
  FROM claim_webhook_deliveries($1::integer, $2::jsonb, $3::bigint, $4::integer, $5::text, $6::bigint, $7::bigint, $8::integer, $9::jsonb,
    $10::jsonb)
  ORDER BY next_attempt_at, delivery_id`

/**
 * One attempt record as record_webhook_attempts reads it (jsonb_to_record: the keys are its
 * column names): the attempt row's values, and the delivery's new status and next attempt.
 */
interface AttemptItem {
  delivery_id: number
  webhook_id: string
  lease_owner: string
  attempt: number
  kind: string | null
  at: number
  outcome: AttemptRecord['outcome']
  status: number | null
  error: string | null
  duration_ms: number
  request_url: string | null
  request_headers: string | null
  response_headers: string | null
  response_body: string | null
  response_truncated: boolean | null
  request_body: string | null
  delivery_status: 'succeeded' | 'failed' | 'pending'
  next_attempt_at: number | null
}
/** A record waiting for its batch, with the refill's claim it may carry (a record alone runs it). */
interface Pending { item: AttemptItem; refill?: RefillWithRecord }
/** What a failure's record returns: the endpoint's failing_since and status after it. */
interface RecordedRow { item: number; since: number; endpoint_status: string }
/** A row of record_webhook_attempts_and_claim: a record's (item set) or a claimed delivery's (item null). */
type RecordedOrClaimedRow = Omit<RecordedRow, 'item'> & { item: number | null } & ClaimRow & { turn_seq: string }
interface EndpointState { failingSince: number; status: string }
type Recorded = { state: EndpointState | null } | { error: unknown }
const recorded = (row: RecordedRow | undefined): Recorded =>
  ({ state: row === undefined ? null : { failingSince: Number(row.since), status: row.endpoint_status } })
/**
 * The records of one batch. The function writes them one after the other, and its commit does
 * not wait for the WAL flush: a record lost with a crash only repeats a delivery (its lease
 * expires and it is sent again, at-least-once; Standard Webhooks receivers dedupe by webhook-id),
 * so the dispatcher does not wait for the disk at every attempt. The disable never goes this way.
 */
const RECORD_ATTEMPTS = 'SELECT item, since, endpoint_status FROM record_webhook_attempts($1::jsonb)'
/** One record and a refill's claim (recordAlone): the record's rows, then the claim's (item null). */
const RECORD_AND_CLAIM = `SELECT * FROM record_webhook_attempts_and_claim($1::jsonb, $2::integer, $3::jsonb, $4::bigint, $5::integer,
  $6::text, $7::bigint, $8::bigint, $9::integer, $10::jsonb, $11::jsonb)`
/**
 * Most records in one batch: the dispatcher has at most WEBHOOK_MAX_IN_FLIGHT attempts in flight
 * (64 by default), each record at most a few KiB (the kept answer is 4 KiB).
 */
const MAX_ATTEMPT_BATCH = 256

/**
 * Whether the feed has an event past the webhooks cursor that the fan-out may read (the feed's
 * rule, as in fanOut): a read of the cursor and at most one index entry of events_by_position.
 */
const FAN_OUT_WAITING_SQL = `SELECT EXISTS (SELECT 1 FROM event_cursors c JOIN LATERAL (
    SELECT 1 FROM events e WHERE (e.tx, e.seq) > (c.tx, c.seq) AND e.tx < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY e.tx, e.seq LIMIT 1
  ) e ON true WHERE c.name = 'webhooks') AS waiting`

/** perOwner when the claim sets none: no bound ($8 is an int). */
const UNBOUNDED = 2_147_483_647

export function createPostgresWebhookStore (db: Db): WebhookStore {
  // The creation order (seq) from which the next claim starts: see claimDue.
  let turnFrom = 0
  // Each endpoint's last delivery claimed since the last claim from the start, [next_attempt_at,
  // id]: where a refill's read of it starts. At most one entry per endpoint, emptied by every
  // claim from the start.
  let claimedUpTo = new Map<string, [number, number]>()
  // The disable running or queued for each endpoint (see recordAttempt): an entry per endpoint
  // being disabled, gone when its last disable has run.
  const disabling = new Map<string, Promise<WebhookRecord | null>>()

  /** Disables the endpoint of a failure's record, with its event, unless it is disabled already. */
  const disableFailing = (record: AttemptRecord): Promise<WebhookRecord | null> =>
    db.transaction(async (tx) => {
      const row = await tx.first<WebhookRow>(`UPDATE webhooks SET status = 'disabled', disabled_reason = 'failing', updated_at = $1,
        version = version + 1 WHERE id = $2 AND status = 'enabled' RETURNING ${WEBHOOK_COLUMNS}`, [record.at, record.webhookId])
      if (row === undefined) return null
      const disabled = toWebhook(row)
      await appendEvents(tx, [record.disabledEvent(disabled)], record.at)
      return disabled
    })

  /** claim_webhook_deliveries' parameters for `claim` (CLAIM_SQL's $1 to $10). */
  const claimParams = (claim: DueClaim): unknown[] => {
    const { now, leaseOwner, leaseUntil, limit, perEndpoint, inFlight, perOwner, inFlightByOwner, refill } = claim
    // A refill reads each endpoint from past what this store last claimed of it: before that
    // lie only deliveries leased to attempts in flight or settled since, and the index entries
    // of their old versions, which a read from the start walks through until a vacuum (about
    // 200 to lock one row under a backlog). Any other claim reads from the start, so a lease
    // that expired back there, or a replay made due there, is claimed at the next poll.
    if (refill !== true) claimedUpTo = new Map()
    return [
      perEndpoint,
      JSON.stringify(inFlight),
      now,
      limit,
      leaseOwner,
      leaseUntil,
      turnFrom,
      Math.min(perOwner ?? UNBOUNDED, UNBOUNDED),
      JSON.stringify(inFlightByOwner ?? {}),
      JSON.stringify(Object.fromEntries(claimedUpTo))
    ]
  }

  /** The deliveries of a claim's rows (in due order), moving the refill cursor and the turn. */
  const claimedFrom = (rows: Array<ClaimRow & { turn_seq: string }>, { now, limit }: DueClaim): ClaimedDelivery[] => {
    // The rows come in due order: each endpoint's last is its furthest.
    for (const row of rows) claimedUpTo.set(row.webhook_id, [Number(row.next_attempt_at), Number(row.delivery_id)])
    // Endpoints take turns at going first (round robin in creation order): when the limit runs
    // out, the next claim starts after the last endpoint served, so a few endpoints with a
    // backlog never keep the others waiting for good. Per store, so per instance.
    if (rows.length === limit) {
      // The last endpoint served in turn order: those from turnFrom on came first, then the others.
      const seqs = rows.map((row) => Number(row.turn_seq))
      const wrapped = seqs.filter((seq) => seq < turnFrom)
      turnFrom = Math.max(...(wrapped.length > 0 ? wrapped : seqs)) + 1
    }
    return rows.map((row) => ({
      id: Number(row.delivery_id),
      webhookId: row.webhook_id,
      ownerKeyId: Number(row.owner_key_id),
      url: row.url,
      attempts: row.attempts,
      event: toEvent(row),
      testType: row.test_type,
      kind: kindOf(row.attempts + 1, row.origin, row.replay_due),
      requestBody: row.request_body,
      secrets: liveSecrets({
        secret: row.secret,
        previousSecret: row.previous_secret,
        previousSecretUntil: row.previous_secret_until === null ? null : Number(row.previous_secret_until)
      }, now)
    }))
  }

  /**
   * One record alone, with its refill's claim when it asks for one now: then one call of
   * record_webhook_attempts_and_claim (migration 31), the record first, the claim after it, in
   * one round trip and one transaction, where a record and then a claim took two.
   */
  const recordAlone = async ({ item, refill }: Pending): Promise<Recorded> => {
    try {
      const claim = refill?.claim() ?? null
      if (claim === null || claim.limit <= 0) {
        const rows = await db.statement<RecordedRow>('record_webhook_attempts', RECORD_ATTEMPTS, [JSON.stringify([item])])
        return recorded(rows[0])
      }
      const rows = await db.statement<RecordedOrClaimedRow>(
        'record_webhook_attempts_and_claim', RECORD_AND_CLAIM, [JSON.stringify([item]), ...claimParams(claim)])
      refill!.claimed(claimedFrom(rows.filter((row) => row.item === null), claim), claim)
      return recorded(rows.find((row): row is RecordedOrClaimedRow & RecordedRow => row.item !== null))
    } catch (error) {
      return { error }
    }
  }

  // Group commit of the attempt records (as orders.ts places orders): a record that arrives while
  // no batch is in flight goes at once, alone; those that arrive while one is go together as the
  // next batch, one call of record_webhook_attempts (migration 25): one round trip and one commit
  // for the round's records instead of a transaction of five or six round trips each.
  const recordBatch = createBatcher<Pending, Recorded>({
    maxBatch: MAX_ATTEMPT_BATCH,
    maxInFlight: 1,
    async run (items) {
      if (items.length === 1) return [await recordAlone(items[0]!)]
      try {
        const rows = await db.statement<RecordedRow>('record_webhook_attempts', RECORD_ATTEMPTS, [JSON.stringify(items.map((p) => p.item))])
        const states = new Map(rows.map((row) => [row.item, row]))
        return items.map((_, i) => recorded(states.get(i)))
      } catch (error) {
        // The batch rolled back as a whole (a deadlock is retried by db.statement): when the
        // database is there, each record is written again alone, in their order, so one record's
        // failure (its delivery deleted between the check and the insert) is its own.
        if (error instanceof ServiceUnavailableError) return items.map(() => ({ error }))
        const alone: Recorded[] = []
        for (const { item } of items) alone.push(await recordAlone({ item }))
        return alone
      }
    }
  })

  /** Writes one record through the batcher: null, or the endpoint's state after a failure's record. */
  const recordOne = async (
    record: AttemptRecord,
    refill: RefillWithRecord | undefined
  ): Promise<EndpointState | null> => {
    const [url, sent, headers, body, truncated] = attemptDetailValues(record)
    const item: AttemptItem = {
      delivery_id: record.deliveryId,
      webhook_id: record.webhookId,
      lease_owner: record.leaseOwner,
      attempt: record.attempt,
      kind: record.kind ?? null,
      at: record.at,
      outcome: record.outcome,
      status: record.status,
      error: record.error,
      duration_ms: record.durationMs,
      request_url: url,
      request_headers: sent,
      response_headers: headers,
      response_body: body,
      response_truncated: truncated,
      // The body is kept once per delivery, by its first attempt that sent one (every later
      // attempt sends it again: ClaimedDelivery.requestBody).
      request_body: record.request?.body ?? null,
      delivery_status: record.outcome === 'succeeded' ? 'succeeded' : record.nextAttemptAt === null ? 'failed' : 'pending',
      next_attempt_at: record.outcome === 'succeeded' ? null : record.nextAttemptAt
    }
    const result = await recordBatch(refill === undefined ? { item } : { item, refill })
    if ('error' in result) throw result.error
    return result.state
  }
  return {
    async createWebhook (input, maxPerOwner) {
      return await db.transaction(async (tx) => {
        // The owner's key row serializes two creations at once, so the count cannot be passed twice.
        await tx.query('SELECT 1 FROM api_keys WHERE id = $1 FOR UPDATE', [input.ownerKeyId])
        const count = await tx.first<{ n: number }>('SELECT count(*)::int AS n FROM webhooks WHERE owner_key_id = $1', [input.ownerKeyId])
        if ((count?.n ?? 0) >= maxPerOwner) throw webhookLimitReached(maxPerOwner)
        const row = await tx.first<WebhookRow>(`INSERT INTO webhooks (id, owner_key_id, url, types, description, status, secret, created_at, updated_at)
          VALUES ($1, $2, $3, $4, $5, 'enabled', $6, $7, $7) RETURNING ${WEBHOOK_COLUMNS}`,
        [
          input.id,
          input.ownerKeyId,
          input.url,
          JSON.stringify(input.types),
          input.description,
          input.secret,
          input.now
        ])
        const created = toWebhook(row!)
        await audit(tx, { action: 'webhook.create', after: created }, input.now)
        return created
      })
    },
    async getWebhook (id) {
      const row = await db.first<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1`, [id])
      return row === undefined ? null : toWebhook(row)
    },
    async listWebhooks (ownerKeyId, afterSeq, limit) {
      const rows = ownerKeyId === null
        ? await db.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE seq > $1 ORDER BY seq LIMIT $2`, [afterSeq ?? 0, limit])
        : await db.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE owner_key_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [ownerKeyId, afterSeq ?? 0, limit])
      return rows.map(toWebhook)
    },
    async updateWebhook (id, patch, now, disabledEvent) {
      return await db.transaction(async (tx) => {
        const row = await tx.first<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1 FOR UPDATE`, [id])
        if (row === undefined) return null
        const before = toWebhook(row)
        const status = patch.status ?? before.status
        const updated = await tx.first<WebhookRow>(`UPDATE webhooks SET url = $1, types = $2, description = $3, status = $4, updated_at = $5,
            failing_since = CASE WHEN $4 = 'enabled' AND status = 'disabled' THEN NULL ELSE failing_since END,
            disabled_reason = CASE WHEN $4 = 'enabled' THEN NULL WHEN status = 'enabled' THEN 'manual' ELSE disabled_reason END,
            version = version + 1
          WHERE id = $6 RETURNING ${WEBHOOK_COLUMNS}`,
        [
          patch.url ?? before.url,
          JSON.stringify(patch.types ?? before.types),
          patch.description ?? before.description,
          status,
          now,
          id
        ])
        const after = toWebhook(updated!)
        if (before.status === 'enabled' && after.status === 'disabled') await appendEvents(tx, [disabledEvent(after)], now)
        await audit(tx, { action: 'webhook.update', before, after }, now)
        return after
      })
    },
    async deleteWebhook (id, now) {
      return await db.transaction(async (tx) => {
        const row = await tx.first<WebhookRow>(`DELETE FROM webhooks WHERE id = $1 RETURNING ${WEBHOOK_COLUMNS}`, [id])
        if (row === undefined) return false
        await audit(tx, { action: 'webhook.delete', before: toWebhook(row) }, now)
        return true
      })
    },
    async rotateSecret (id, secret, previousUntil, now) {
      return await db.transaction(async (tx) => {
        const was = await tx.first<{ previous_secret_until: string | null }>('SELECT previous_secret_until FROM webhooks WHERE id = $1 FOR UPDATE', [id])
        if (was === undefined) return null
        const row = await tx.first<WebhookRow>(`UPDATE webhooks SET previous_secret = secret, previous_secret_until = $1, secret = $2, updated_at = $3,
          version = version + 1 WHERE id = $4 RETURNING ${WEBHOOK_COLUMNS}`, [previousUntil, secret, now, id])
        const before = was.previous_secret_until === null ? null : Number(was.previous_secret_until)
        await audit(tx, { action: 'webhook.rotate_secret', id, previousUntil: { before, after: previousUntil } }, now)
        return toWebhook(row!)
      })
    },
    async queueTest (id, event, now, testType) {
      return await db.transaction(async (tx) => {
        await appendEvents(tx, [event], now)
        const row = await tx.first<{ id: string }>('SELECT id FROM events WHERE tx = pg_current_xact_id() ORDER BY seq DESC LIMIT 1')
        await tx.query(
          'INSERT INTO webhook_deliveries (webhook_id, event_id, origin, status, next_attempt_at, created_at, updated_at, test_type) '
          + "VALUES ($1, $2, 'test', 'pending', $3, $3, $3, $4)",
          [id, row!.id, now, testType ?? null]
        )
        return row!.id
      })
    },
    async ownerRole (id) {
      const row = await db.first<{ role: Role }>('SELECT k.role FROM webhooks w JOIN api_keys k ON k.id = w.owner_key_id WHERE w.id = $1', [id])
      return row?.role ?? null
    },
    async replay (id, selection, now, limits) {
      return await db.transaction(async (tx): Promise<ReplayResult> => {
        // The endpoint's and its owner's rows, locked: two replays of the owner's endpoints run
        // one after the other, so neither queues what the other just queued, nor passes the
        // hour's count the other is raising.
        const owner = await tx.first<{ owner_key_id: string; role: Role; types: string }>(
          'SELECT w.owner_key_id, k.role, w.types FROM webhooks w JOIN api_keys k ON k.id = w.owner_key_id WHERE w.id = $1 FOR UPDATE OF w, k',
          [id])
        if (owner === undefined) return { queued: 0, nextSince: null }
        const ownerKeyId = Number(owner.owner_key_id)
        const hour = hourOf(now)
        const used = await tx.first<{ queued: number }>('SELECT queued FROM webhook_replays WHERE owner_key_id = $1 AND hour = $2', [ownerKeyId, hour])
        const { room, retryAt } = replayRoom(used?.queued ?? 0, limits.max, limits.perHour, now)
        if (room === 0) return { refused: 'rate', retryAt }
        const types = JSON.parse(owner.types) as string[]
        const params: unknown[] = [id, now]
        const param = (value: unknown): string => { params.push(value); return `$${params.length}` }
        const range = 'eventIds' in selection
          ? `e.id = ANY(${param(selection.eventIds)}::text[])`
          : `e.created_at >= ${param(selection.since)} AND e.created_at < ${param(selection.until)}`
        const onlyFailed = !('eventIds' in selection) && selection.onlyFailed === true
        const visibility = owner.role === 'admin'
          ? { role: 'admin' as const }
          : { role: owner.role, keyId: ownerKeyId }
        // An event queued already is not queued twice: one whose delivery to the endpoint is due
        // or in flight is left out; one whose delivery waits for a later retry comes with it
        // (`pending`), made due now (hastened). A recovery takes only the events whose delivery
        // failed for good and that no delivery has brought since nor waits to bring. One more than
        // the room is read: the first left out says where a next request goes on.
        const [row] = await tx.query<{ queued: number; next_since: string | null }>(`WITH candidates AS (
            SELECT e.id, e.created_at, e.seq,
              (SELECT max(p.id) FROM webhook_deliveries p WHERE p.event_id = e.id AND p.webhook_id = $1 AND p.status = 'pending') AS pending
            FROM events e
            WHERE ${range} AND e.type <> 'webhook.test' AND ${eventFilterSql(visibility, typeFilterOf(types), param)}
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries q WHERE q.event_id = e.id AND q.webhook_id = $1 AND q.status = 'pending'
              AND (q.next_attempt_at <= $2 OR q.lease_until >= $2))
            ${onlyFailed
              ? `AND EXISTS (SELECT 1 FROM webhook_deliveries f WHERE f.event_id = e.id AND f.webhook_id = $1 AND f.status = 'failed')
              AND NOT EXISTS (SELECT 1 FROM webhook_deliveries s WHERE s.event_id = e.id AND s.webhook_id = $1
                AND s.status IN ('pending', 'succeeded'))`
              : ''}
            ORDER BY e.created_at, e.seq LIMIT ${param(room + 1)}
          ), chosen AS (
            SELECT id, pending FROM candidates ORDER BY created_at, seq LIMIT ${param(room)}
          ), inserted AS (
            ${INSERT_DELIVERY}
            SELECT $1, c.id, 'replay', 'pending', $2, $2, $2 FROM chosen c WHERE c.pending IS NULL
            RETURNING 1
          ), hastened AS (
            UPDATE webhook_deliveries d SET next_attempt_at = $2, updated_at = $2, replay_due = true FROM chosen c
            WHERE d.id = c.pending AND d.status = 'pending' AND d.next_attempt_at > $2 AND (d.lease_until IS NULL OR d.lease_until < $2)
            RETURNING 1
          )
          SELECT (SELECT count(*)::int FROM chosen) AS queued,
            (SELECT created_at FROM candidates ORDER BY created_at, seq OFFSET ${param(room)} LIMIT 1) AS next_since`, params)
        const queued = row?.queued ?? 0
        if (queued > 0) {
          await tx.query(`INSERT INTO webhook_replays (owner_key_id, hour, queued) VALUES ($1, $2, $3)
            ON CONFLICT (owner_key_id, hour) DO UPDATE SET queued = webhook_replays.queued + excluded.queued`, [ownerKeyId, hour, queued])
          await tx.query('DELETE FROM webhook_replays WHERE owner_key_id = $1 AND hour < $2', [ownerKeyId, hour])
        }
        await audit(tx, { action: 'webhook.replay', id, selection, queued }, now)
        const nextSince = row?.next_since ?? null
        return { queued, nextSince: nextSince === null ? null : Number(nextSince) }
      })
    },
    async listDeliveries (id, limit) {
      const [attempts, pending] = await Promise.all([
        db.query<AttemptRow>(`SELECT ${ATTEMPT_COLUMNS}
          FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
          WHERE a.webhook_id = $1 ORDER BY a.id DESC LIMIT $2`, [id, limit]),
        db.query<PendingRow>(PENDING_SQL, [id, limit])
      ])
      return deliveryEntries(attempts, pending, limit)
    },
    async getAttempt (webhookId, attemptId) {
      const row = await db.first<AttemptDetailRow>(`SELECT ${ATTEMPT_DETAIL_COLUMNS}
        FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
        WHERE a.id = $1 AND a.webhook_id = $2`, [attemptId, webhookId])
      return row === undefined ? null : toAttemptDetail(row)
    },
    async pruneAttemptDetails (before, max) {
      // One statement: a batch of attempts past retention (webhook_attempts_details; rows another
      // instance's prune holds are skipped), the bodies of their deliveries that no longer wait
      // and whose last change is as old, and the attempts' details.
      const [row] = await db.query<{ n: number }>(`WITH batch AS (
          SELECT id, delivery_id FROM webhook_attempts WHERE request_headers IS NOT NULL AND at < $1
          ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED
        ), bodies AS (
          UPDATE webhook_deliveries d SET request_body = NULL FROM batch b
          WHERE d.id = b.delivery_id AND d.request_body IS NOT NULL AND d.status <> 'pending' AND d.updated_at < $1
          RETURNING 1
        ), pruned AS (
          UPDATE webhook_attempts a SET request_url = NULL, request_headers = NULL, response_headers = NULL, response_body = NULL,
            response_truncated = NULL
          FROM batch b WHERE a.id = b.id
          RETURNING 1
        )
        SELECT (SELECT count(*)::int FROM pruned) AS n`, [before, max])
      return row?.n ?? 0
    },
    async fanOut (now, batch) {
      // A read first: a round that finds the feed caught up (most of them, but under a steady
      // stream of events) opens no transaction, one round trip instead of four.
      const waiting = await db.statement<{ waiting: boolean }>('fan_out_waiting', FAN_OUT_WAITING_SQL, [])
      if (waiting[0]?.waiting !== true) return 0
      return await db.transaction(async (tx) => {
        // The fan-out's commit does not wait for the WAL flush (set_config in the cursor's read,
        // no round trip of its own): a fan-out lost with a crash is done again from the cursor,
        // and before any of its deliveries is attempted the claim's commit, which waits, has
        // flushed it (the WAL is written in order).
        const cursor = await tx.first<{ tx: string; seq: string }>(`SELECT tx::text AS tx, seq, set_config('synchronous_commit', 'off', true)
          FROM event_cursors WHERE name = 'webhooks' FOR UPDATE`)
        if (cursor === undefined) return 0
        // The feed's rule (storage/postgres/events.ts): only transactions below the oldest one
        // running, in (tx, seq) order, so no event can commit later behind the cursor.
        // An event's head, not its data: fanOutPairs decides without it.
        const rows = (await tx.query<Omit<EventRow, 'data'>>(`SELECT e.seq, e.tx::text AS tx, e.id, e.type, e.created_at, e.audience, e.subject_key_id FROM events e
          WHERE (e.tx, e.seq) > ($1::xid8, $2::bigint) AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY e.tx, e.seq LIMIT $3`, [cursor.tx, cursor.seq, batch])).map((row) => ({
          id: row.id, type: row.type, createdAt: Number(row.created_at), audience: row.audience,
          subjectKeyId: row.subject_key_id === null ? null : Number(row.subject_key_id),
          position: { tx: row.tx, seq: Number(row.seq) }
        }))
        if (rows.length === 0) return 0
        const owners = (await tx.query<{
          id: string
          types: string
          owner_key_id: string
          role: EndpointOwner['ownerRole']
          created_at: string
        }>(
          `SELECT w.id, w.types, w.owner_key_id, k.role, w.created_at FROM webhooks w JOIN api_keys k ON k.id = w.owner_key_id
           WHERE w.status = 'enabled' AND ${liveOwnerSql('$1')}`, [now]))
          .map((row) => ({
            id: row.id,
            types: JSON.parse(row.types) as string[],
            ownerKeyId: Number(row.owner_key_id),
            ownerRole: row.role,
            createdAt: Number(row.created_at)
          }))
        const pairs = fanOutPairs(rows, owners)
        if (pairs.length > 0) {
          await tx.query(`${INSERT_DELIVERY}
            SELECT w, e, 'feed', 'pending', $3, $3, $3 FROM unnest($1::text[], $2::text[]) AS p(w, e)
            ON CONFLICT (webhook_id, event_id) WHERE origin = 'feed' DO NOTHING`,
          [pairs.map((p) => p.webhookId), pairs.map((p) => p.eventId), now])
        }
        const last = rows[rows.length - 1]!.position
        await tx.query("UPDATE event_cursors SET tx = $1::xid8, seq = $2 WHERE name = 'webhooks'", [last.tx, last.seq])
        return rows.length
      })
    },
    async claimDue (claim) {
      if (claim.limit <= 0) return []
      return claimedFrom(await db.statement<ClaimRow & { turn_seq: string }>('claim_due', CLAIM_SQL, claimParams(claim)), claim)
    },
    async recordAttempt (record, refill) {
      const state = await recordOne(record, refill)
      if (record.outcome === 'succeeded' || state === null || state.status !== 'enabled'
        || state.failingSince > record.disableIfFailingSince) {
        return null
      }
      // The rare disable, as before: a transaction of its own, with its event, that waits for the
      // WAL flush (and so for the record's, written before it). Once: a second failure of the
      // endpoint (in the same batch or another) finds it disabled. A success recorded after this
      // failure (later in the batch) cleared failing_since and the endpoint is disabled all the
      // same, as when each record was a transaction of its own, in the batch's order. Two
      // failures of one batch reach here in the batch's order, and their disables run in it, one
      // after the other: on two connections at once, either could take the row first, and the
      // later failure be the one that disabled the endpoint.
      const previous = disabling.get(record.webhookId)
      const disable = (previous ?? Promise.resolve()).catch(() => {}).then(() => disableFailing(record))
      disabling.set(record.webhookId, disable)
      try {
        return await disable
      } finally {
        if (disabling.get(record.webhookId) === disable) disabling.delete(record.webhookId)
      }
    },
    async disableInactiveOwners (now, disabledEvent) {
      // A read first: almost every round finds none, and then opens no transaction.
      const found = await db.query<{ id: string }>(
        `SELECT w.id FROM webhooks w WHERE w.status = 'enabled' AND NOT ${liveOwnerSql('$1')} LIMIT 1`, [now])
      if (found.length === 0) return []
      return await db.transaction(async (tx) => {
        const rows = await tx.query<WebhookRow>(`UPDATE webhooks w SET status = 'disabled', disabled_reason = 'owner_inactive', updated_at = $1,
          version = version + 1 WHERE w.status = 'enabled' AND NOT ${liveOwnerSql('$1')} RETURNING ${WEBHOOK_COLUMNS}`, [now])
        const disabled = rows.map(toWebhook)
        if (disabled.length > 0) await appendEvents(tx, disabled.map(disabledEvent), now)
        return disabled
      })
    },
    async pendingStats () {
      const row = await db.first<{ n: number; oldest: string | null }>(`SELECT count(*)::int AS n, min(d.created_at) AS oldest
        FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE d.status = 'pending' AND w.status = 'enabled'`)
      return {
        pending: row?.n ?? 0,
        oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest)
      }
    }
  }
}
