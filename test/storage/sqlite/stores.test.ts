// The store contract on SQLite, on a file (WAL applies to files only), plus what is SQLite's own:
// the journal mode and PRAGMA user_version migrations.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { migrateSqlite } from '../../../src/storage/sqlite/database.ts'
import { SQLITE_MIGRATIONS } from '../../../src/storage/sqlite/migrations.ts'
import { CLAIM_SQL, PENDING_SQL } from '../../../src/storage/sqlite/webhooks.ts'
import { createSqliteStores } from '../../../src/storage/sqlite/index.ts'
import { runStoreContract } from '../contract.ts'
import { tempDir } from '../../helpers/temp.ts'

function tempFile (t: TestContext): string {
  const dir = tempDir(t, 'petstore-sqlite-')
  return join(dir, 'petstore.db')
}

runStoreContract('sqlite', async (t) => {
  const stores = createSqliteStores(tempFile(t))
  t.after(() => stores.close())
  return stores
})

test('sqlite: a file database runs in WAL mode', async (t) => {
  const path = tempFile(t)
  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  const db = new DatabaseSync(path)
  t.after(() => db.close())
  assert.equal((db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode, 'wal')
})

test('sqlite: migrations are versioned by user_version and re-opening applies none twice, keeping the data', async (t) => {
  const path = tempFile(t)
  const first = createSqliteStores(path)
  const dogs = await first.categories.createCategory({ name: 'Dogs' }, Date.now())
  await first.close()
  const version = () => {
    const db = new DatabaseSync(path)
    try { return (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version } finally { db.close() }
  }
  assert.equal(version(), SQLITE_MIGRATIONS.length)
  const again = createSqliteStores(path)
  t.after(() => again.close())
  assert.equal(version(), SQLITE_MIGRATIONS.length)
  assert.deepEqual(await again.categories.getCategory(dogs.id), dogs)
})

test('sqlite: a database newer than the program is refused', async (t) => {
  const path = tempFile(t)
  const db = new DatabaseSync(path)
  db.exec(`PRAGMA user_version = ${SQLITE_MIGRATIONS.length + 1}`)
  db.close()
  assert.throws(() => createSqliteStores(path), /newer than this program knows/)
})

// The claim's cost, checked without a clock: each endpoint's claim and its pending list read an
// index in the order they return, so they stop at their LIMIT whatever the backlog. A claim that
// ranks every pending delivery, or a list that sorts them (USE TEMP B-TREE), fails here.
test('sqlite: an endpoint\'s claim and its pending list read webhook_deliveries_claim in order, never sorting the backlog', () => {
  const db = new DatabaseSync(':memory:')
  migrateSqlite(db)
  const plan = (sql: string): string => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>)
    .map((row) => row.detail)
    .join('\n')
  const claim = plan(CLAIM_SQL)
  assert.match(claim, /SEARCH webhook_deliveries USING INDEX webhook_deliveries_claim \(webhook_id=\? AND next_attempt_at<\?\)/, claim)
  assert.doesNotMatch(claim, /TEMP B-TREE|SCAN webhook_deliveries/, claim)
  const pending = plan(PENDING_SQL)
  assert.match(pending, /SEARCH d USING INDEX webhook_deliveries_claim \(webhook_id=\?\)/, pending)
  assert.doesNotMatch(pending, /TEMP B-TREE|SCAN d/, pending)
  const indexes = (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'webhook_deliveries' AND sql IS NOT NULL ORDER BY name").all() as Array<{ name: string }>).map((row) => row.name)
  assert.deepEqual(indexes, ['webhook_deliveries_by_event', 'webhook_deliveries_claim', 'webhook_deliveries_once'], 'webhook_deliveries_due is gone: nothing reads it')
  db.close()
})

test('sqlite: an endpoint with a long history is deleted in batches, the event loop free between them; an attempt on a gone delivery is dropped', async (t) => {
  // Faults caught: the endpoint's deliveries deleted by one cascade in one write (no reader ever
  // sees a part of them gone: 170,000 held the event loop 0.5 s and kept 30 MiB of memory), a
  // batch loop that stops early or never, and an attempt recorded for a deleted delivery
  // failing its foreign key (the dispatcher logged a warning for each one in flight).
  const path = tempFile(t)
  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  const now = Date.now()
  const owner = await stores.keys.createKey({
    name: 'hooks', role: 'admin', plan: 'enterprise', perMinute: null, perDay: null,
    hash: 'h-hooks', prefix: 'psk_hooks', now
  })
  const id = 'wh_historyhistoryhist'
  await stores.webhooks.createWebhook({
    id, ownerKeyId: owner.id, url: 'http://127.0.0.1:9/h', types: ['order.*'], description: null,
    secret: 'whsec_history', now
  }, 10)
  const side = new DatabaseSync(path)
  t.after(() => side.close())
  const history = 4_500
  side.exec('BEGIN')
  const event = side.prepare("INSERT INTO events (id, type, created_at, audience, data) VALUES (?, 'order.created', ?, 'order', '{}')")
  const delivery = side.prepare("INSERT INTO webhook_deliveries (webhook_id, event_id, origin, status, attempts, created_at, updated_at) VALUES (?, ?, 'feed', 'succeeded', 1, ?, ?)")
  const attempt = side.prepare("INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, at, outcome, status, duration_ms) VALUES (?, ?, 1, ?, 'succeeded', 204, 1)")
  for (let i = 0; i < history; i++) {
    event.run(`ev_history${i}`, now)
    attempt.run(delivery.run(id, `ev_history${i}`, now, now).lastInsertRowid, id, now)
  }
  side.exec('COMMIT')
  const count = (table: string): number => Number((side.prepare(`SELECT count(*) AS n FROM ${table} WHERE webhook_id = ?`).get(id) as { n: number }).n)
  assert.equal(count('webhook_deliveries'), history)

  let settled = false
  const deleting = stores.webhooks.deleteWebhook(id, now).finally(() => { settled = true })
  const seen = new Set<number>()
  while (!settled) {
    seen.add(count('webhook_deliveries'))
    await new Promise((resolve) => setImmediate(resolve))
  }
  assert.equal(await deleting, true)
  assert.ok([...seen].some((n) => n > 0 && n < history), `another connection saw part of the history gone while the delete ran (saw ${[...seen].join(', ')})`)
  assert.deepEqual([count('webhook_deliveries'), count('webhook_attempts'), Number((side.prepare('SELECT count(*) AS n FROM webhooks WHERE id = ?').get(id) as { n: number }).n)], [0, 0, 0])
  assert.equal(await stores.webhooks.deleteWebhook(id, now), false)

  await stores.webhooks.recordAttempt({
    deliveryId: 1, webhookId: id, leaseOwner: 'instance-a', attempt: 2, at: now, outcome: 'succeeded', status: 204, error: null, durationMs: 1,
    nextAttemptAt: null, disableIfFailingSince: now, disabledEvent: () => { throw new Error('not disabled') }
  })
  assert.equal(count('webhook_attempts'), 0)
})
