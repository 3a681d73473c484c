// The event feed on both engines (storage/*/events.ts): events appended in a transaction are
// read back oldest first with their position, the reader's visibility and type filter hold, and
// on PostgreSQL a row whose transaction commits after a later-numbered one is never skipped.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import type { EventDraft, EventStore, Visibility } from '../../src/events/events.store.ts'
import { SYSTEM_CONTEXT, currentActor } from '../../src/shared/actor-context.ts'
import { appendEvents } from '../../src/storage/postgres/events.ts'
import { createSqliteAuditAppend } from '../../src/storage/sqlite/audit.ts'
import { createSqliteEventLog, createSqliteEventStore } from '../../src/storage/sqlite/events.ts'
import { migrateSqlite, openSqlite } from '../../src/storage/sqlite/database.ts'
import { createWriter } from '../../src/storage/sqlite/writer.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import type { Tx } from '../../src/storage/postgres/database.ts'
import { serviceGate } from '../helpers/services.ts'
import { createTestSchema, testPostgresReason, TEST_DATABASE_URL } from '../helpers/stores.ts'

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0)

const DRAFTS: EventDraft[] = [
  { type: 'order.created', audience: 'order', subjectKeyId: 1, data: { id: 1 } },
  { type: 'pet.created', audience: 'catalog', subjectKeyId: null, data: { id: 7 } },
  { type: 'key.revoked', audience: 'key', subjectKeyId: 2, data: { record: { id: 2 } } },
  { type: 'order.cancelled', audience: 'order', subjectKeyId: 2, data: { id: 3 } },
  { type: 'webhook.disabled', audience: 'webhook', subjectKeyId: 1, data: { id: 'wh' } }
]

const ADMIN: Visibility = { role: 'admin' }

/** What each reader sees of DRAFTS, by type: the visibility rule of docs/product.md. */
async function checkVisibility (events: EventStore): Promise<void> {
  const types = async (visibility: Visibility, filter?: { exact: string[]; prefixes: string[] }) =>
    (await events.listEvents({ visibility, after: null, limit: 100, ...(filter !== undefined && { types: filter }) }))
      .map((e) => e.type)
  assert.deepEqual(await types(ADMIN), DRAFTS.map((d) => d.type), 'admin: all, oldest first')
  assert.deepEqual(await types({ role: 'staff', keyId: 9 }), ['order.created', 'pet.created', 'order.cancelled'], 'staff: shop events, not another key\'s')
  assert.deepEqual(await types({ role: 'staff', keyId: 2 }), ['order.created', 'pet.created', 'key.revoked', 'order.cancelled'], 'staff: plus its own key\'s')
  assert.deepEqual(await types({ role: 'customer', keyId: 1 }), ['order.created', 'webhook.disabled'], 'customer 1: its own')
  assert.deepEqual(await types({ role: 'customer', keyId: 2 }), ['key.revoked', 'order.cancelled'], 'customer 2: its own')
  assert.deepEqual(await types(ADMIN, { exact: ['pet.created'], prefixes: ['order.'] }), ['order.created', 'pet.created', 'order.cancelled'], 'prefix and exact types')
  assert.deepEqual(await types(ADMIN, { exact: ['order'], prefixes: [] }), [], 'an exact name is not a prefix')

  const all = await events.listEvents({ visibility: ADMIN, after: null, limit: 100 })
  assert.match(all[0]!.id, /^evt_[0-9a-f]{32}$/)
  assert.equal(new Set(all.map((e) => e.id)).size, all.length, 'ids are unique')
  assert.deepEqual(all[2]!.data, { record: { id: 2 } }, 'data comes back as written')
  assert.equal(all[0]!.createdAt, NOW)
  const page1 = await events.listEvents({ visibility: ADMIN, after: null, limit: 2 })
  const page2 = await events.listEvents({ visibility: ADMIN, after: page1.at(-1)!.position, limit: 2 })
  const page3 = await events.listEvents({ visibility: ADMIN, after: page2.at(-1)!.position, limit: 2 })
  const page4 = await events.listEvents({ visibility: ADMIN, after: page3.at(-1)!.position, limit: 2 })
  assert.deepEqual([...page1, ...page2, ...page3].map((e) => e.id), all.map((e) => e.id), 'the cursor walks every event once')
  assert.deepEqual(page4, [])

  assert.equal((await events.getEvent(all[2]!.id, { role: 'customer', keyId: 2 }))?.type, 'key.revoked')
  assert.equal(await events.getEvent(all[2]!.id, { role: 'customer', keyId: 1 }), null, 'another key\'s event is not found')
  assert.equal(await events.getEvent('evt_missing', ADMIN), null)

  assert.equal(await events.pruneEvents(NOW, 100), 0, 'nothing older than NOW')
  assert.equal(await events.pruneEvents(NOW + 1, 2), 2, 'at most max at a time')
  assert.equal((await events.listEvents({ visibility: ADMIN, after: null, limit: 100 })).length, DRAFTS.length - 2)
}

test('SQLite: events appended in a writer transaction are read back in order, per reader', async (t) => {
  const db = openSqlite(':memory:')
  migrateSqlite(db)
  const writer = createWriter(db, ':memory:')
  t.after(async () => { await writer.close(); db.close() })
  const log = createSqliteEventLog(db, createSqliteAuditAppend(db), currentActor)
  await writer.run(() => { log.append(DRAFTS, NOW) })
  // A write that fails takes its events with it.
  await assert.rejects(writer.run(() => { log.append(DRAFTS, NOW); throw new Error('rolled back') }))
  await checkVisibility(createSqliteEventStore(db, writer, log))
})

const postgres = serviceGate(await testPostgresReason())

/** Fresh stores on a fresh schema, and a way to open plain connections (transactions held by hand) on it. */
async function postgresFeed (t: TestContext) {
  postgres.check()
  // Ended before the schema is dropped (after-hooks run in order): a transaction a failed
  // assertion left open would otherwise hold the DROP forever.
  const clients: pg.Client[] = []
  t.after(() => Promise.all(clients.map((c) => c.end())))
  const schema = await createTestSchema(t)
  const stores = await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 2 })
  t.after(() => stores.close())
  const connect = async (): Promise<Tx & { raw: pg.Client }> => {
    const raw = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` })
    await raw.connect()
    clients.push(raw)
    return {
      raw,
      actor: SYSTEM_CONTEXT,
      query: async (sql, params) => (await raw.query(sql, params)).rows,
      first: async (sql, params) => (await raw.query(sql, params)).rows[0]
    }
  }
  return { stores, connect }
}

test('PostgreSQL: events appended in a transaction are read back in order, per reader', { skip: postgres.skip }, async (t) => {
  const { stores, connect } = await postgresFeed(t)
  const client = await connect()
  await client.raw.query('BEGIN')
  await appendEvents(client, DRAFTS, NOW)
  await client.raw.query('COMMIT')
  await client.raw.query('BEGIN')
  await appendEvents(client, DRAFTS, NOW)
  await client.raw.query('ROLLBACK')
  await checkVisibility(stores.events)
})

test('PostgreSQL: an event whose transaction commits late is not skipped by a reader that moved on', { skip: postgres.skip }, async (t) => {
  const { stores, connect } = await postgresFeed(t)
  const early = await connect()
  const late = await connect()
  const event = (n: number): EventDraft => ({ type: 'order.created', audience: 'order', subjectKeyId: 1, data: { n } })
  // `early` takes the lower seq and commits last; `late` takes the higher seq and commits first.
  await early.raw.query('BEGIN')
  await appendEvents(early, [event(1)], NOW)
  await late.raw.query('BEGIN')
  await appendEvents(late, [event(2)], NOW)
  await late.raw.query('COMMIT')
  const seen = await stores.events.listEvents({ visibility: ADMIN, after: null, limit: 10 })
  assert.deepEqual(seen, [], 'nothing is served while an older transaction is still open')
  await early.raw.query('COMMIT')
  const first = await stores.events.listEvents({ visibility: ADMIN, after: null, limit: 1 })
  const rest = await stores.events.listEvents({ visibility: ADMIN, after: first[0]!.position, limit: 10 })
  assert.deepEqual([...first, ...rest].map((e) => (e.data as { n: number }).n).sort(), [1, 2], 'both, once each')

  // A reader that has passed `late` still gets an event committed later by a transaction that was open.
  await early.raw.query('BEGIN')
  await appendEvents(early, [event(3)], NOW)
  const position = rest.at(-1)!.position
  await late.raw.query('BEGIN')
  await appendEvents(late, [event(4)], NOW)
  await late.raw.query('COMMIT')
  const before = await stores.events.listEvents({ visibility: ADMIN, after: position, limit: 10 })
  await early.raw.query('COMMIT')
  const after = await stores.events.listEvents({
    visibility: ADMIN,
    after: before.at(-1)?.position ?? position,
    limit: 10
  })
  assert.deepEqual([...before, ...after].map((e) => (e.data as { n: number }).n).sort(), [3, 4])
})
