// The dispatcher's attempt records on PostgreSQL, batched (storage/postgres/webhooks.ts,
// recordAttempt; record_webhook_attempts in migration 25): records that arrive together are
// written by one statement with the same effects as each written alone in their order (attempt
// rows, delivery states, a success settling the event's other deliveries, failing_since, the
// disable and its event exactly once), including a record whose delivery was deleted meanwhile
// and one whose lease was lost; a record that cannot be written fails alone; and the batch's
// commit does not wait for the WAL flush while the disable's does, nor does a claim's.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import type { PostgresStores } from '../../../src/storage/postgres/index.ts'
import { CLAIM_SQL } from '../../../src/storage/postgres/webhooks.ts'
import { disabledEvent } from '../../../src/webhooks/webhooks.view.ts'
import type { AttemptKind } from '../../../src/webhooks/webhooks.store.ts'
import type { AttemptRecord, ClaimedDelivery, DueClaim, RefillWithRecord } from '../../../src/webhooks/webhooks.store.ts'
import { T0 } from '../../helpers/app.ts'
import { pollUntil } from '../../helpers/server.ts'
import { openPostgresTestSchema, TEST_DATABASE_URL } from '../../helpers/stores.ts'

const DAY = 24 * 3_600_000
/** As the dispatcher's: an endpoint failing for this long is disabled by its next failure. */
const DISABLE_AFTER_MS = 5 * DAY

/** A pg client on the test schema, for looking under the store. */
async function inspect<T> (schema: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` })
  await client.connect()
  try { return await fn(client) } finally { await client.end() }
}

function attemptRecord (
  d: ClaimedDelivery,
  at: number,
  outcome: 'succeeded' | 'failed',
  nextAttemptAt: number | null = null
): AttemptRecord {
  return {
    deliveryId: d.id,
    webhookId: d.webhookId,
    leaseOwner: 'instance-a',
    attempt: d.attempts + 1,
    kind: d.kind,
    at,
    outcome,
    status: outcome === 'succeeded' ? 204 : 500,
    error: outcome === 'succeeded' ? null : 'HTTP 500',
    durationMs: 3,
    request: { url: 'http://127.0.0.1:9/', headers: [['webhook-id', `d_${d.id}`]], body: `{"n":${d.id}}` },
    response: { status: outcome === 'succeeded' ? 204 : 500, headers: [['x-n', String(d.id)]], body: 'ok', truncated: false },
    nextAttemptAt: outcome === 'succeeded' ? null : nextAttemptAt,
    disableIfFailingSince: at - DISABLE_AFTER_MS,
    disabledEvent: disabledEvent('failing')
  }
}

interface World {
  stores: PostgresStores
  schema: string
  /** The records of the scenario, in their order. */
  records: AttemptRecord[]
  endpoints: { a: string; b: string }
}

/**
 * Endpoint A: one category.created event delivered twice (fan-out and replay), four tests; one
 * test's delivery deleted after the claim, another's lease taken by instance-b. Endpoint B:
 * failing for six days, two tests. All claimed by instance-a, then these records: A's fanned-out
 * delivery succeeds (settling the replay's, in flight), the replay's fails, the deleted one
 * succeeds, the lost lease's fails, one test fails with a retry, one fails for good, and B's two
 * fail (the first disables B).
 */
async function world (t: TestContext): Promise<World> {
  const { stores, schema } = await openPostgresTestSchema(t, { poolMax: 4 })
  const key = (await stores.keys.createKey({
    name: null, role: 'admin', plan: 'enterprise', perMinute: null, perDay: null, hash: 'h-1', prefix: 'psk_1', now: T0
  })).id
  const endpoint = async (id: string, types: string[]): Promise<string> => {
    await stores.webhooks.createWebhook({
      id, ownerKeyId: key, url: 'http://127.0.0.1:9/', types, description: null, secret: 'whsec_batch', now: T0
    }, 10)
    return id
  }
  const a = await endpoint(`wh_${'a'.repeat(24)}`, ['category.*'])
  const b = await endpoint(`wh_${'b'.repeat(24)}`, ['order.*'])
  await stores.categories.createCategory({ name: 'Birds' }, T0 + 1)
  const range = { since: T0, until: T0 + 100 }
  const queued = await stores.webhooks.replay(a, range, T0 + 5, { max: 10, perHour: 100 })
  assert.deepEqual(queued, { queued: 1, nextSince: null })
  // The fan-out reads a transaction once every older one on the server has ended: polled.
  await pollUntil(async () => {
    await stores.webhooks.fanOut(T0 + 6, 500)
    return (await stores.webhooks.pendingStats()).pending === 2 ? true : undefined
  }, { timeoutMs: 10_000, message: 'the fan-out of the category event' })
  for (const [id, n] of [[a, 4], [b, 2]] as const) {
    for (let i = 0; i < n; i++) {
      await stores.webhooks.queueTest(id, { type: 'webhook.test', audience: 'webhook', subjectKeyId: key, data: { webhookId: id } }, T0 + 7)
    }
  }
  const claimed = await stores.webhooks.claimDue({
    now: T0 + 10, leaseOwner: 'instance-a', leaseUntil: T0 + 20_000, limit: 64, perEndpoint: 16, inFlight: {}
  })
  assert.equal(claimed.length, 8)
  const byId = (x: ClaimedDelivery, y: ClaimedDelivery) => x.id - y.id
  const first = claimed.find((d) => d.webhookId === a && d.kind === 'first')!
  const replayed = claimed.find((d) => d.webhookId === a && d.kind === 'replay')!
  const tests = claimed.filter((d) => d.webhookId === a && d.testType === null && d.event.type === 'webhook.test').sort(byId)
  const failing = claimed.filter((d) => d.webhookId === b).sort(byId)
  assert.equal(tests.length, 4)
  const [gone, lost, retried, last] = tests as [ClaimedDelivery, ClaimedDelivery, ClaimedDelivery, ClaimedDelivery]
  await inspect(schema, async (c) => {
    await c.query('DELETE FROM webhook_deliveries WHERE id = $1', [gone.id])
    await c.query("UPDATE webhook_deliveries SET lease_owner = 'instance-b' WHERE id = $1", [lost.id])
    await c.query('UPDATE webhooks SET failing_since = $1 WHERE id = $2', [T0 - 6 * DAY, b])
  })
  const at = T0 + 100
  const records = [
    attemptRecord(first, at, 'succeeded'),
    attemptRecord(replayed, at + 1, 'failed', at + 60_000),
    attemptRecord(gone, at + 2, 'succeeded'),
    attemptRecord(lost, at + 3, 'failed', at + 60_000),
    attemptRecord(retried, at + 4, 'failed', at + 60_000),
    attemptRecord(last, at + 5, 'failed', null),
    attemptRecord(failing[0]!, at + 6, 'failed', at + 60_000),
    attemptRecord(failing[1]!, at + 7, 'failed', at + 60_000)
  ]
  return { stores, schema, records, endpoints: { a, b } }
}

/** What the records left in the tables (the transaction ids apart), and the webhook.disabled events. */
async function effects (schema: string) {
  return await inspect(schema, async (c) => ({
    attempts: (await c.query(`SELECT id, delivery_id, webhook_id, attempt, kind, at, outcome, status, error, duration_ms,
      request_url, request_headers, response_headers, response_body, response_truncated FROM webhook_attempts ORDER BY id`)).rows,
    deliveries: (await c.query(`SELECT id, webhook_id, origin, status, attempts, next_attempt_at, lease_owner, lease_until,
      last_status, last_error, updated_at, replay_due, request_body FROM webhook_deliveries ORDER BY id`)).rows,
    webhooks: (await c.query(
      'SELECT id, status, disabled_reason, failing_since, updated_at, version FROM webhooks ORDER BY id'
    )).rows,
    disabledEvents: (await c.query(`SELECT created_at, subject_key_id, data::jsonb ->> 'id' AS webhook,
      data::jsonb ->> 'reason' AS reason FROM events WHERE type = 'webhook.disabled'`)).rows
  }))
}

test('records written together (one batch) leave what the same records written one by one leave, and answer the same', async (t) => {
  const alone = await world(t)
  const aloneAnswers = []
  for (const record of alone.records) aloneAnswers.push(await alone.stores.webhooks.recordAttempt(record))

  const together = await world(t)
  // All at once, as the dispatcher's attempts end: the first goes alone, the seven others wait
  // for it and go as one batch.
  const togetherAnswers = await Promise.all(together.records.map((r) => together.stores.webhooks.recordAttempt(r)))

  assert.deepEqual(togetherAnswers.map((w) => w?.id ?? null), aloneAnswers.map((w) => w?.id ?? null))
  assert.deepEqual(togetherAnswers.map((w) => w?.status ?? null), aloneAnswers.map((w) => w?.status ?? null))
  const expected = await effects(alone.schema)
  assert.deepEqual(await effects(together.schema), expected)

  // And those effects are the contract's (read on the batch's schema).
  const { a, b } = together.endpoints
  const [first, replayed, gone, lost, retried, last] = together.records as AttemptRecord[] as [
    AttemptRecord, AttemptRecord, AttemptRecord, AttemptRecord, AttemptRecord, AttemptRecord
  ]
  assert.deepEqual(togetherAnswers.map((w) => w === null ? null : [w.id, w.status, w.disabledReason]),
    [null, null, null, null, null, null, [b, 'disabled', 'failing'], null], 'B disabled by its first failure, once')
  const { attempts, deliveries, webhooks, disabledEvents } = expected
  const state = (id: number) => deliveries.find((d) => Number(d.id) === id)
  assert.deepEqual(
    attempts.map((r) => Number(r.delivery_id)),
    together.records.filter((r) => r !== gone).map((r) => r.deliveryId),
    'an attempt row per record, but none for the deleted delivery'
  )
  assert.equal(state(gone.deliveryId), undefined)
  assert.deepEqual([state(first.deliveryId)!.status, state(first.deliveryId)!.lease_owner], ['succeeded', null])
  const settled = state(replayed.deliveryId)!
  assert.deepEqual([settled.status, settled.next_attempt_at, settled.attempts], ['succeeded', null, 0],
    'settled by the success: its own failure, which lost the lease, leaves it settled')
  const held = state(lost.deliveryId)!
  assert.deepEqual([held.status, held.lease_owner, held.attempts], ['pending', 'instance-b', 0],
    'the lost lease: the delivery is left to its holder')
  assert.deepEqual([state(retried.deliveryId)!.status, Number(state(retried.deliveryId)!.next_attempt_at)],
    ['pending', retried.nextAttemptAt])
  assert.equal(state(retried.deliveryId)!.request_body, retried.request!.body, 'the body sent, kept once')
  assert.deepEqual([state(last.deliveryId)!.status, state(last.deliveryId)!.next_attempt_at], ['failed', null])
  assert.deepEqual(webhooks.map((w) => [w.id, w.status, w.failing_since === null ? null : Number(w.failing_since)]), [
    [a, 'enabled', lost.at],
    [b, 'disabled', T0 - 6 * DAY]
  ], 'A fails since its first failure after the last success (that of the deleted delivery counts); B since before')
  assert.deepEqual(disabledEvents.map((e) => [e.webhook, e.reason]), [[b, 'failing']], 'one webhook.disabled event')

  // One batch: the first record's transaction, then one for the seven others.
  const transactions = await inspect(together.schema, async (c) =>
    (await c.query('SELECT DISTINCT xmin::text AS tx FROM webhook_attempts')).rows.length)
  assert.equal(transactions, 2)
})

test('a record that cannot be written fails alone: the others of its batch are written', async (t) => {
  const { stores, schema, records } = await world(t)
  const bad = { ...records[4]!, kind: 'bogus' as AttemptKind }
  const batch = [records[0]!, records[1]!, bad, records[5]!]
  const answers = await Promise.allSettled(batch.map((record) => stores.webhooks.recordAttempt(record)))
  assert.deepEqual(answers.map((a) => a.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
  const { attempts, deliveries } = await effects(schema)
  const written = [records[0]!, records[1]!, records[5]!]
  assert.deepEqual(attempts.map((r) => Number(r.delivery_id)), written.map((r) => r.deliveryId))
  const bads = deliveries.find((d) => Number(d.id) === bad.deliveryId)!
  assert.deepEqual([bads.status, bads.lease_owner, bads.attempts], ['pending', 'instance-a', 0], 'the bad record changed nothing')
})

test('the batch commits without waiting for the WAL flush; the rest of the connection\'s work does not change', async (t) => {
  const { schema } = await openPostgresTestSchema(t)
  const settings = await inspect(schema, async (c) => {
    const before = (await c.query('SHOW synchronous_commit')).rows[0].synchronous_commit as string
    await c.query('BEGIN')
    await c.query("SELECT * FROM record_webhook_attempts('[]'::jsonb)")
    const inside = (await c.query('SHOW synchronous_commit')).rows[0].synchronous_commit as string
    await c.query('COMMIT')
    const after = (await c.query('SHOW synchronous_commit')).rows[0].synchronous_commit as string
    return { before, inside, after }
  })
  assert.deepEqual(settings, { before: 'on', inside: 'off', after: 'on' })
})

/** A fresh schema with one admin key and one endpoint of it, `id`. */
async function oneEndpoint (t: TestContext, id: string) {
  const { stores, schema } = await openPostgresTestSchema(t)
  const key = (await stores.keys.createKey({
    name: null, role: 'admin', plan: 'enterprise', perMinute: null, perDay: null, hash: 'h-1', prefix: 'psk_1', now: T0
  })).id
  await stores.webhooks.createWebhook({
    id, ownerKeyId: key, url: 'http://127.0.0.1:9/', types: ['category.*'], description: null, secret: 'whsec_one', now: T0
  }, 10)
  return { stores, schema, key }
}

test('a claim that leases commits without waiting for the WAL flush; the connection\'s later work does not change', async (t) => {
  const id = `wh_${'c'.repeat(24)}`
  const { stores, schema, key } = await oneEndpoint(t, id)
  await stores.webhooks.queueTest(id, { type: 'webhook.test', audience: 'webhook', subjectKeyId: key, data: { webhookId: id } }, T0 + 1)
  const seen = await inspect(schema, async (c) => {
    const setting = async () => (await c.query('SHOW synchronous_commit')).rows[0].synchronous_commit as string
    const before = await setting()
    await c.query('BEGIN')
    const leased = (await c.query(CLAIM_SQL, [4, '{}', T0 + 10, 64, 'instance-a', T0 + 20_000, 0, 16, '{}', '{}'])).rowCount
    const inside = await setting()
    await c.query('COMMIT')
    return { before, leased, inside, after: await setting() }
  })
  assert.deepEqual(seen, { before: 'on', leased: 1, inside: 'off', after: 'on' })
})

// Fault caught: the disables of one batch's failures of an endpoint run at once, on several
// connections, so a later failure could take the endpoint's row first and be the one answered
// as having disabled it (the earlier answered null): a rare failure of the test above.
test('of one batch\'s failures of an endpoint, the first is the one that disables it', async (t) => {
  const id = `wh_${'f'.repeat(24)}`
  const { stores, schema, key } = await oneEndpoint(t, id)
  for (let i = 0; i < 12; i++) {
    await stores.webhooks.queueTest(id, { type: 'webhook.test', audience: 'webhook', subjectKeyId: key, data: { webhookId: id } }, T0 + 1)
  }
  await inspect(schema, (c) => c.query('UPDATE webhooks SET failing_since = $1 WHERE id = $2', [T0 - 6 * DAY, id]))
  const claimed = (await stores.webhooks.claimDue({
    now: T0 + 10, leaseOwner: 'instance-a', leaseUntil: T0 + 20_000, limit: 64, perEndpoint: 16, inFlight: {}
  })).sort((x, y) => x.id - y.id)
  assert.equal(claimed.length, 12)
  const at = T0 + 100
  // The first alone, the eleven others as one batch: each of those finds the endpoint enabled.
  const answers = await Promise.all(claimed.map((d, i) =>
    stores.webhooks.recordAttempt(attemptRecord(d, at + i, 'failed', at + 60_000))))
  assert.deepEqual(answers.map((w) => w?.status ?? null), ['disabled', ...Array<null>(11).fill(null)])
  const events = await inspect(schema, async (c) => (await c.query("SELECT count(*)::int AS n FROM events WHERE type = 'webhook.disabled'")).rows[0].n as number)
  assert.equal(events, 1)
})

// Faults caught: a refill's claim reading each endpoint from the start (it walked the index entries
// of every delivery leased or settled before, about 200 to lock one row under a backlog) or from
// past a delivery it never claimed; a claim from the start missing a lease that expired behind a
// refill's cursor; and the previous version's nine-parameter call failing (migration 30).
test('a refill claims past what the store claimed; a claim from the start takes a lease expired behind it', async (t) => {
  const id = `wh_${'e'.repeat(24)}`
  const { stores, schema, key } = await oneEndpoint(t, id)
  for (let i = 0; i < 4; i++) {
    await stores.webhooks.queueTest(id, { type: 'webhook.test', audience: 'webhook', subjectKeyId: key, data: { webhookId: id } }, T0 + 1)
  }
  const ids = await inspect(schema, async (c) => (await c.query<{ id: string }>('SELECT id FROM webhook_deliveries ORDER BY id')).rows.map((r) => Number(r.id)))
  const claim = async (now: number, refill: boolean) => (await stores.webhooks.claimDue({
    now, leaseOwner: 'instance-a', leaseUntil: now + 1_000, limit: 1, perEndpoint: 4, inFlight: {}, refill
  })).map((d) => d.id)
  assert.deepEqual(await claim(T0 + 10, false), [ids[0]])
  // The first delivery's lease has expired: it is due again, behind the refills' cursor.
  const later = T0 + 5_000
  const refills = []
  for (let i = 0; i < 4; i++) refills.push(await claim(later, true))
  assert.deepEqual(refills, [[ids[1]], [ids[2]], [ids[3]], []])
  assert.deepEqual(await claim(later, false), [ids[0]], 'a claim from the start')
  const old = await inspect(schema, async (c) => (await c.query<{ delivery_id: string }>(
    "SELECT delivery_id FROM claim_webhook_deliveries(4, '{}', $1, 64, 'instance-b', $2, 0, 16, '{}') ORDER BY delivery_id",
    [later + 10_000, later + 20_000])).rows.map((r) => Number(r.delivery_id)))
  assert.deepEqual(old, ids, 'the previous version\'s call claims from the start')
})

// Fault caught: a success's settling (the event's other waiting deliveries to the endpoint) read
// through webhook_deliveries_claim, walking the endpoint's whole pending backlog per success, as
// its plan did while the table grew faster than its statistics (migration 26; the drain of a
// backlog fell to 170 a second). The plan is the one the function runs: auto_explain's, nested.
test('a success\'s settling reads the event\'s deliveries by webhook_deliveries_by_event, never the endpoint\'s backlog', async (t) => {
  const id = `wh_${'d'.repeat(24)}`
  const { stores, schema, key } = await oneEndpoint(t, id)
  const test = { type: 'webhook.test', audience: 'webhook', subjectKeyId: key, data: { webhookId: id } } as const
  const queue = (n: number) => Promise.all(Array.from({ length: n }, () => stores.webhooks.queueTest(id, test, T0 + 1)))
  // Statistics taken before any delivery, then a backlog: what the planner knew during the bench.
  await inspect(schema, async (c) => { await c.query('ANALYZE webhook_deliveries') })
  await queue(300)
  const [delivery] = await stores.webhooks.claimDue({
    now: T0 + 10, leaseOwner: 'instance-a', leaseUntil: T0 + 20_000, limit: 1, perEndpoint: 4, inFlight: {}
  })
  const record = { ...attemptRecord(delivery!, T0 + 100, 'succeeded'), leaseOwner: 'instance-a' }
  const plans = await inspect(schema, async (c) => {
    const logged: string[] = []
    c.on('notice', (notice) => { logged.push(notice.message ?? '') })
    await c.query("LOAD 'auto_explain'")
    await c.query('SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on')
    await c.query('SET client_min_messages = log')
    const item = {
      delivery_id: record.deliveryId, webhook_id: record.webhookId, lease_owner: record.leaseOwner,
      attempt: record.attempt, kind: record.kind, at: record.at, outcome: 'succeeded', status: 204,
      error: null, duration_ms: 3, request_url: null, request_headers: null, response_headers: null,
      response_body: null, response_truncated: null, request_body: null, delivery_status: 'succeeded',
      next_attempt_at: null
    }
    // Six calls: PL/pgSQL plans a statement for its parameters five times, then may keep a generic plan.
    for (let i = 0; i < 6; i++) await c.query('SELECT * FROM record_webhook_attempts($1::jsonb)', [JSON.stringify([item])])
    return logged.filter((m) => m.includes("SET status = 'succeeded'"))
  })
  assert.equal(plans.length, 6, 'auto_explain showed each settling')
  for (const plan of plans) {
    assert.match(plan, /webhook_deliveries_by_event/, plan)
    assert.doesNotMatch(plan, /webhook_deliveries_claim/, plan)
  }
})

// Faults caught: the refill's claim sent as a round trip of its own after the record (two a
// delivery, the cost migration 31 removes), or asked of a record written in a batch with others
// (their claims, each made for the same free room, could together take more than it); a claim
// made with the record that is not handed back; a failure's record row taken for a delivery.
test('a record alone carries its refill\'s claim: the record, then the claim, in one round trip; a batch asks for none', async (t) => {
  const id = `wh_${'r'.repeat(24)}`
  const { stores, schema, key } = await oneEndpoint(t, id)
  for (let i = 0; i < 6; i++) {
    await stores.webhooks.queueTest(id, { type: 'webhook.test', audience: 'webhook', subjectKeyId: key, data: { webhookId: id } }, T0 + 1 + i)
  }
  const ids = await inspect(schema, async (c) => (await c.query<{ id: string }>('SELECT id FROM webhook_deliveries ORDER BY id')).rows.map((r) => Number(r.id)))
  const first = await stores.webhooks.claimDue({
    now: T0 + 10, leaseOwner: 'instance-a', leaseUntil: T0 + 20_000, limit: 1, perEndpoint: 1, inFlight: {}
  })
  assert.deepEqual(first.map((d) => d.id), [ids[0]])
  const refillClaim = (now: number): DueClaim => ({
    now, leaseOwner: 'instance-a', leaseUntil: now + 20_000, limit: 1, perEndpoint: 1, inFlight: { [id]: 0 }, refill: true
  })
  const taken: Array<{ ids: number[]; claim: DueClaim }> = []
  const refill = (now: number): RefillWithRecord => ({
    claim: () => refillClaim(now),
    claimed: (deliveries, claim) => { taken.push({ ids: deliveries.map((d) => d.id), claim }) }
  })
  // The queries the store's connections send, by text or statement name, while the record runs.
  const sent: string[] = []
  const query = pg.Client.prototype.query
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text?: string; name?: string }
    sent.push(typeof config === 'string' ? config : config.name ?? config.text ?? '?')
    return (query as (...a: unknown[]) => unknown).apply(this, args)
  } as typeof query
  let disabled
  try {
    disabled = await stores.webhooks.recordAttempt(attemptRecord(first[0]!, T0 + 20, 'succeeded'), refill(T0 + 20))
  } finally {
    pg.Client.prototype.query = query
  }
  assert.equal(disabled, null)
  assert.deepEqual(sent, ['record_webhook_attempts_and_claim'], 'one round trip')
  assert.deepEqual(taken.map((x) => x.ids), [[ids[1]]])
  const rows = await inspect(schema, async (c) => (await c.query(
    'SELECT d.id, d.status, d.lease_owner, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS attempts FROM webhook_deliveries d ORDER BY d.id LIMIT 3')).rows)
  assert.deepEqual(rows, [
    { id: String(ids[0]), status: 'succeeded', lease_owner: null, attempts: 1 },
    { id: String(ids[1]), status: 'pending', lease_owner: 'instance-a', attempts: 0 },
    { id: String(ids[2]), status: 'pending', lease_owner: null, attempts: 0 }
  ])
  // Three at once: the first goes alone and claims; the two after it go as one batch and ask for none.
  taken.length = 0
  const more = await stores.webhooks.claimDue({
    now: T0 + 30, leaseOwner: 'instance-a', leaseUntil: T0 + 20_000, limit: 2, perEndpoint: 3, inFlight: { [id]: 1 }, refill: true
  })
  assert.deepEqual(more.map((d) => d.id), [ids[2], ids[3]])
  let asked = 0
  await Promise.all([ids[1], ids[2], ids[3]].map((n, i) => stores.webhooks.recordAttempt(
    attemptRecord({ ...first[0]!, id: n! }, T0 + 40 + i, 'succeeded'),
    {
      claim: () => { asked++; return refillClaim(T0 + 40) },
      claimed: (deliveries, claim) => { taken.push({ ids: deliveries.map((d) => d.id), claim }) }
    }
  )))
  assert.deepEqual([asked, taken.map((x) => x.ids)], [1, [[ids[4]]]])
  const settled = await inspect(schema, async (c) => (await c.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded'")).rows[0]!.n)
  assert.equal(settled, 4)
  // A failure's record returns the endpoint's state in the same rows: only the claim's are deliveries.
  taken.length = 0
  const failed = await stores.webhooks.recordAttempt(
    attemptRecord({ ...first[0]!, id: ids[4]! }, T0 + 50, 'failed', T0 + 60_000), refill(T0 + 50))
  assert.equal(failed, null)
  assert.deepEqual(taken.map((x) => x.ids), [[ids[5]]])
})
