// The store contract on PostgreSQL (a fresh schema per test), plus what is PostgreSQL's own:
// versioned migrations under an advisory lock, plans, and how an unreachable, slow or
// restarting database reaches the API (503, bounded in time, recovered without a restart).
// Without a reachable server the tests are skipped, or fail when CI is set.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer, type Socket } from 'node:net'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import { loadConfig } from '../../../src/config.ts'
import { AppError, ServiceUnavailableError } from '../../../src/errors.ts'
import { InfraError, openStores } from '../../../src/infra.ts'
import { POSTGRES_MIGRATIONS } from '../../../src/storage/postgres/migrations.ts'
import { createPostgresStores } from '../../../src/storage/postgres/index.ts'
import { CLAIM_SQL, PENDING_SQL } from '../../../src/storage/postgres/webhooks.ts'
import { pollUntil } from '../../helpers/server.ts'
import { serviceGate } from '../../helpers/services.ts'
import { createTestSchema, openPostgresTestStores, testPostgresReason, TEST_DATABASE_URL } from '../../helpers/stores.ts'
import { runStoreContract } from '../contract.ts'

const unavailable = await testPostgresReason()
const postgres = serviceGate(unavailable)

if (unavailable !== null) {
  // One test stands for the suite: skipped with the reason, or failing with it under CI.
  test('postgres store contract and engine tests: the test database answers', { skip: postgres.skip }, () => { postgres.check() })
} else {
  runStoreContract('postgres', (t) => openPostgresTestStores(t))
  engineTests()
}

/** A pg client on the test schema, for looking under the engine. */
async function inspect<T> (schema: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` })
  await client.connect()
  try { return await fn(client) } finally { await client.end() }
}

/** The time the claim tests start at. */
const CLAIM_T0 = 1_790_000_000_000

/**
 * For the claim tests: a fresh schema with one admin key and its endpoints (the ids given, in
 * creation order, so in turn order), subscribed to category.*, at a URL nothing is sent to.
 */
async function endpointsOfOneKey (t: TestContext, ids: readonly string[]) {
  const schema = await createTestSchema(t)
  const stores = await createPostgresStores(TEST_DATABASE_URL, { schema })
  t.after(() => stores.close())
  const key = (await stores.keys.createKey({
    name: null, role: 'admin', plan: 'enterprise', perMinute: null, perDay: null, hash: 'h', prefix: 'p', now: CLAIM_T0
  })).id
  for (const id of ids) {
    await stores.webhooks.createWebhook({
      id, ownerKeyId: key, url: 'http://127.0.0.1:9/', types: ['category.*'], description: null, secret: 'whsec_claim', now: CLAIM_T0
    }, Math.max(10, ids.length))
  }
  return { schema, stores, key }
}

/** A TCP port that accepts connections and never answers: a database that hangs. */
async function silentServer (t: TestContext): Promise<number> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => { sockets.add(socket) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => { for (const s of sockets) s.destroy(); server.close() })
  return (server.address() as { port: number }).port
}

/** A port nothing listens on. */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

function isServiceUnavailable (error: unknown): boolean {
  assert.ok(error instanceof ServiceUnavailableError, `expected ServiceUnavailableError, got ${String(error)}`)
  assert.equal(error.status, 503)
  assert.equal(error.headers?.['retry-after'], '5')
  assert.equal(error.message, 'the database is unavailable; retry shortly', 'no driver text in the message')
  assert.ok(error.cause !== undefined, 'the driver error travels as cause, for the log')
  return true
}

function engineTests (): void {
  test('postgres: migrations are versioned in schema_migrations and re-opening applies none twice, keeping the data', async (t) => {
    const schema = await createTestSchema(t)
    const first = await createPostgresStores(TEST_DATABASE_URL, { schema })
    const dogs = await first.categories.createCategory({ name: 'Dogs' }, Date.now())
    await first.close()
    const again = await createPostgresStores(TEST_DATABASE_URL, { schema })
    t.after(() => again.close())
    assert.deepEqual(await again.categories.getCategory(dogs.id), dogs)
    const versions = await inspect(schema, async (c) => (await c.query('SELECT version FROM schema_migrations ORDER BY version')).rows)
    assert.deepEqual(versions, POSTGRES_MIGRATIONS.map((_, i) => ({ version: i + 1 })))
  })

  test('postgres: two instances opening a fresh schema at once both succeed and the migrations run exactly once', async (t) => {
    const schema = await createTestSchema(t)
    const opened = await Promise.all([1, 2, 3].map(() => createPostgresStores(TEST_DATABASE_URL, { schema })))
    t.after(() => Promise.all(opened.map((s) => s.close())))
    const versions = await inspect(schema, async (c) => (await c.query('SELECT version FROM schema_migrations ORDER BY version')).rows)
    assert.deepEqual(versions, POSTGRES_MIGRATIONS.map((_, i) => ({ version: i + 1 })))
    for (const stores of opened) await stores.ping()
  })

  test('postgres: migrate false opens without touching the schema', async (t) => {
    const schema = await createTestSchema(t)
    const stores = await createPostgresStores(TEST_DATABASE_URL, { schema, migrate: false })
    t.after(() => stores.close())
    const tables = await inspect(schema, async (c) => (await c.query('SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1', [schema])).rows[0])
    assert.deepEqual(tables, { n: 0 })
  })

  test('postgres: a database newer than the program is refused at open', async (t) => {
    const schema = await createTestSchema(t)
    const stores = await createPostgresStores(TEST_DATABASE_URL, { schema })
    await stores.close()
    await inspect(schema, (c) => c.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [POSTGRES_MIGRATIONS.length + 1]))
    await assert.rejects(createPostgresStores(TEST_DATABASE_URL, { schema }), /newer than this program knows/)
  })

  test('postgres: the tables match the SQLite schema column for column', async (t) => {
    const schema = await createTestSchema(t)
    const stores = await createPostgresStores(TEST_DATABASE_URL, { schema })
    t.after(() => stores.close())
    const { DatabaseSync } = await import('node:sqlite')
    const { migrateSqlite } = await import('../../../src/storage/sqlite/database.ts')
    const lite = new DatabaseSync(':memory:')
    migrateSqlite(lite)
    const liteTables = (lite.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[]).map((r) => r.name)
    const liteColumns = Object.fromEntries(liteTables.map((name) =>
      [name, (lite.prepare(`PRAGMA table_info(${name})`).all() as { name: string }[]).map((c) => c.name)]))
    lite.close()
    const pgColumns = await inspect(schema, async (c) => {
      const rows = (await c.query<{ table_name: string; column_name: string }>(
        `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name <> 'schema_migrations' ORDER BY table_name, ordinal_position`, [schema])).rows
      const out: Record<string, string[]> = {}
      for (const r of rows) (out[r.table_name] ??= []).push(r.column_name)
      return out
    })
    assert.deepEqual(pgColumns, liteColumns)
  })

  test('postgres: a filtered page is an index range scan in id order, never a sort', async (t) => {
    const schema = await createTestSchema(t)
    const stores = await createPostgresStores(TEST_DATABASE_URL, { schema })
    t.after(() => stores.close())
    await inspect(schema, async (c) => {
      // On tiny tables a sequential scan or a sort is cheapest. Making them (almost) forbidden
      // shows whether an index can serve the page in order; when none can, the plan still
      // has the Sort or Seq Scan, at a prohibitive cost, and the test fails.
      await c.query('SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off')
      for (const sql of [
        'SELECT * FROM pets WHERE id > 5 ORDER BY id LIMIT 21',
        "SELECT * FROM pets WHERE id > 5 AND status = 'available' ORDER BY id LIMIT 21",
        'SELECT * FROM pets WHERE id > 5 AND category_id = 1 ORDER BY id LIMIT 21',
        'SELECT * FROM orders WHERE id > 5 AND owner_key_id = 1 ORDER BY id LIMIT 21'
      ]) {
        const plan = (await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`)).rows.map((r) => r['QUERY PLAN']).join('\n')
        assert.match(plan, /Index (Only )?Scan/, plan)
        assert.doesNotMatch(plan, /Sort|Seq Scan/, plan)
      }
    })
  })

  test('postgres: each endpoint\'s claim and its pending list read webhook_deliveries_claim in order, never sorting the backlog', async (t) => {
    const now = CLAIM_T0
    // An endpoint with a due delivery, so that the claim's function reads it.
    const id = 'wh_aaaaaaaaaaaaaaaaaaaaaaa1'
    const { schema, stores, key } = await endpointsOfOneKey(t, [id])
    await stores.webhooks.queueTest(id, { type: 'webhook.test', audience: 'webhook', subjectKeyId: key, data: { webhookId: id } }, now)
    await inspect(schema, async (c) => {
      // The claim's reads are statements of claim_webhook_deliveries: auto_explain shows the plans
      // the function runs. They are its generic plans (a parameter, $n, where a custom plan has the
      // value), which the function keeps from its first call for the connection's life. So they
      // are made here as at a server's first claims, on nearly empty tables, with the session's
      // own settings (JIT at any cost): fault caught, a plan that follows the statistics, which
      // then leased by reading webhook_deliveries and events whole (a seq scan and a hash join),
      // kept while they grew (11-15 ms a claim at 80,000 deliveries), or a claim compiled by JIT.
      const logged: string[] = []
      c.on('notice', (notice) => { logged.push(notice.message ?? '') })
      await c.query("LOAD 'auto_explain'")
      await c.query('SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on')
      await c.query('SET jit_above_cost = 0; SET client_min_messages = log')
      await c.query('BEGIN')
      const claimed = await c.query(CLAIM_SQL, [4, '{}', now + 10, 64, 'owner', now + 20_000, 0, 16, '{}', '{}'])
      await c.query('ROLLBACK')
      await c.query('RESET client_min_messages; RESET jit_above_cost')
      assert.equal(claimed.rowCount, 1)
      const reads = logged.filter((m) => m.includes('FOR UPDATE SKIP LOCKED'))
      assert.equal(reads.length, 1, 'one read, of the one endpoint')
      assert.match(reads[0]!, /LockRows[^\n]*\n(.*\n)*?\s+->\s+Index Scan using webhook_deliveries_claim on webhook_deliveries d[^\n]*\n\s+Index Cond: \(\(webhook_id = \$\d+\) AND \(next_attempt_at <= \$\d+\) AND \(ROW\(next_attempt_at, id\) > ROW\(\$\d+, \$\d+\)\)\)/, reads[0])
      const lease = logged.filter((m) => m.includes('WITH leased AS'))
      assert.equal(lease.length, 1, 'one lease')
      assert.match(lease[0]!, /Index Scan using webhook_deliveries_pkey on webhook_deliveries d/, lease[0])
      assert.match(lease[0]!, /Index Scan using events_id_key on events ev/, lease[0])
      // The outer statement (a sort of what the function returned) is planned outside it.
      for (const plan of logged.filter((m) => !m.includes('FROM claim_webhook_deliveries('))) {
        assert.doesNotMatch(plan, /Seq Scan on (webhook_deliveries|events)|Bitmap|Hash Join|Merge Join|Sort Key: d\.|JIT:/, plan)
      }
      // As above: with scans and sorts made (almost) forbidden, a plan that cannot read the index
      // in order still shows them.
      await c.query('SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off')
      const pending = (await c.query<{ 'QUERY PLAN': string }>('EXPLAIN (COSTS OFF) ' + PENDING_SQL, ['wh_x', 100]))
        .rows.map((r) => r['QUERY PLAN']).join('\n')
      assert.match(pending, /Index Scan Backward using webhook_deliveries_claim on webhook_deliveries d/, pending)
      assert.doesNotMatch(pending, /Sort|Seq Scan on webhook_deliveries/, pending)
      const indexes = (await c.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'webhook_deliveries' ORDER BY indexname", [schema])).rows.map((r) => r.indexname)
      assert.deepEqual(indexes, ['webhook_deliveries_by_event', 'webhook_deliveries_claim', 'webhook_deliveries_once', 'webhook_deliveries_pkey'])
    })
  })

  // Fault caught: each endpoint's read locking up to its whole room (4) when the claim can lease
  // fewer: a refill claims one delivery, and with 200 endpoints holding a backlog it locked 800
  // rows to lease one (1.7 ms a claim against 1.1; docs/performance.md "PostgreSQL webhooks").
  // A row locked and not leased keeps the claim's transaction id in xmax after the commit. Each
  // read takes at most what the limit leaves, and the claim stops at its limit: none is left.
  test('postgres: a claim locks at most its limit of each endpoint\'s deliveries', async (t) => {
    const now = CLAIM_T0
    const { schema, stores } = await endpointsOfOneKey(t, ['wh_aaaaaaaaaaaaaaaaaaaaaaa1', 'wh_aaaaaaaaaaaaaaaaaaaaaaa2', 'wh_aaaaaaaaaaaaaaaaaaaaaaa3'])
    for (const name of ['A', 'B', 'C', 'D']) await stores.categories.createCategory({ name }, now + 1)
    await pollUntil(async () => {
      await stores.webhooks.fanOut(now + 2, 500)
      return (await stores.webhooks.pendingStats()).pending === 12 ? true : undefined
    }, { timeoutMs: 10_000, message: 'the fan-out of four events to three endpoints' })
    const claimed = await stores.webhooks.claimDue({
      now: now + 10, leaseOwner: 'instance-a', leaseUntil: now + 20_000, limit: 1, perEndpoint: 4, inFlight: {}
    })
    assert.equal(claimed.length, 1)
    const lockedOnly = await inspect(schema, async (c) => (await c.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE lease_owner IS NULL AND xmax::text <> '0'"
    )).rows[0]!.n)
    assert.equal(lockedOnly, 0, 'every row the claim locked is leased')
  })

  // Fault caught: a claim reading the due deliveries of every endpoint with work due before its
  // limit picks from them (10 µs an endpoint: a refill, which claims one, cost 1.1 ms with 200
  // endpoints holding a backlog). It reads the endpoints in turn order and stops at its limit:
  // a refill reads the first endpoint alone. A row read is locked (FOR UPDATE), and a row locked
  // keeps the claim's transaction id in xmax after the commit, leased or not.
  test('postgres: a claim reads the endpoints in turn order only until its limit is met', async (t) => {
    const now = CLAIM_T0
    const ids = Array.from({ length: 50 }, (_, i) => `wh_${String(i).padStart(24, '0')}`)
    const { schema, stores, key } = await endpointsOfOneKey(t, ids)
    // Two due deliveries each, the later endpoints' due first: turn order, not due time, decides.
    for (const [i, id] of [...ids.entries()].reverse()) {
      for (const at of [now + 50 - i, now + 100 - i]) {
        await stores.webhooks.queueTest(id, { type: 'webhook.test', audience: 'webhook', subjectKeyId: key, data: { webhookId: id } }, at)
      }
    }
    const [claimed, ...more] = await stores.webhooks.claimDue({
      now: now + 200, leaseOwner: 'instance-a', leaseUntil: now + 20_000, limit: 1, perEndpoint: 4, inFlight: {}
    })
    assert.deepEqual(more, [])
    type Row = { id: string; webhook_id: string; next_attempt_at: string; lease_owner: string | null }
    const rows = await inspect(schema, async (c) => (await c.query<Row>(
      "SELECT id, webhook_id, next_attempt_at, lease_owner FROM webhook_deliveries WHERE xmax::text <> '0' OR lease_owner IS NOT NULL ORDER BY id"
    )).rows)
    assert.deepEqual(rows.map((r) => ({ ...r, id: Number(r.id), next_attempt_at: Number(r.next_attempt_at) })), [
      { id: claimed!.id, webhook_id: ids[0], next_attempt_at: now + 50, lease_owner: 'instance-a' }
    ], 'the first endpoint\'s oldest due, leased, and no row of another endpoint locked')
  })

  test('postgres: ids, versions and epoch-ms times come back as numbers, never strings', async (t) => {
    const stores = await openPostgresTestStores(t)
    const key = await stores.keys.createKey({
      name: null, role: 'admin', plan: 'enterprise', perMinute: 1, perDay: 2,
      hash: 'h', prefix: 'p', now: 1_790_000_000_000
    })
    for (const value of [key.id, key.createdAt, key.perMinute, key.perDay, key.version]) assert.equal(typeof value, 'number')
    assert.equal(key.createdAt, 1_790_000_000_000)
  })

  test('postgres: a statement stuck behind a lock is cut by statement_timeout and answered 503, not left hanging', { timeout: 20_000 }, async (t) => {
    const schema = await createTestSchema(t)
    const stores = await createPostgresStores(TEST_DATABASE_URL, { schema })
    t.after(() => stores.close())
    const dogs = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())
    const holder = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` })
    await holder.connect()
    t.after(() => holder.end())
    await holder.query('BEGIN')
    await holder.query('SELECT 1 FROM categories WHERE id = $1 FOR UPDATE', [dogs.id])
    const started = Date.now()
    await assert.rejects(stores.categories.replaceCategory(dogs.id, { name: 'X' }, null, Date.now()), isServiceUnavailable)
    const took = Date.now() - started
    assert.ok(took >= 4500 && took < 8000, `cut after ${took} ms`)
    await holder.query('ROLLBACK')
    // The pool is fine afterwards.
    assert.equal((await stores.categories.replaceCategory(dogs.id, { name: 'X' }, null, Date.now())).name, 'X')
  })

  test('postgres: when the server ends our connections, requests get 503 at worst and the pool recovers by itself', async (t) => {
    // A name of its own (the URL's application_name wins over the pool's), so only this
    // test's connections are killed, not those of other tests sharing the server.
    const name = `petstore_test_${randomBytes(6).toString('hex')}`
    const url = new URL(TEST_DATABASE_URL)
    url.searchParams.set('application_name', name)
    const schema = await createTestSchema(t)
    const stores = await createPostgresStores(url.toString(), { schema, poolMax: 4 })
    t.after(() => stores.close())
    const dogs = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())
    // Check out several connections so the pool holds idle ones, then kill them all server side
    // (pg_terminate_backend sends 57P01 admin_shutdown, as a server restart does).
    await Promise.all(Array.from({ length: 4 }, () => stores.categories.getCategory(dogs.id)))
    const killed = await inspect(schema, async (c) => (await c.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name])).rowCount)
    assert.ok((killed ?? 0) >= 2, `killed ${killed}`)
    let answered = 0
    for (let i = 0; i < 20 && answered < 5; i++) {
      try {
        assert.deepEqual(await stores.categories.getCategory(dogs.id), dogs)
        answered++
      } catch (error) {
        isServiceUnavailable(error)
      }
    }
    assert.equal(answered, 5, 'the pool opened new connections')
    await stores.ping()
  })

  test('postgres: an unreachable database fails open with one clear line that never shows the password', async () => {
    const port = await closedPort()
    const url = `postgres://postgres:s3cret-pass@127.0.0.1:${port}/test`
    await assert.rejects(createPostgresStores(url), (error: unknown) => (error as { code?: string }).code === 'ECONNREFUSED')
    const config = loadConfig({ DATABASE_URL: url })
    const waits: string[] = []
    const started = Date.now()
    const opening = openStores(config, { waitMs: 1500, onWait: (reason) => waits.push(reason) })
    await assert.rejects(opening, (error: unknown) => {
      assert.ok(error instanceof InfraError)
      assert.equal(error.message, `cannot open postgres://127.0.0.1:${port}/test: connection refused (is PostgreSQL running and listening there?) (waited 1 s)`)
      assert.doesNotMatch(error.message, /s3cret/)
      assert.doesNotMatch(error.message, /\n/)
      return true
    })
    const took = Date.now() - started
    assert.ok(took >= 700 && took <= 3000, `gave up after ${took} ms, within its bound of 1.5 s`)
    assert.ok(waits.length >= 2, `each wait told: ${waits.length}`)
    assert.ok(waits.every((w) => w === 'connection refused (is PostgreSQL running and listening there?)'), waits.join('; '))
  })

  test('postgres: a start waits for a database that is not reachable yet, and opens it when it comes (compose starts both at once)', { timeout: 20_000 }, async (t) => {
    const target = new URL(TEST_DATABASE_URL)
    const { proxyPort, setUp } = await tcpProxy(t, target.hostname, Number(target.port || 5432))
    setUp(false)
    const schema = await createTestSchema(t)
    const via = new URL(TEST_DATABASE_URL)
    via.port = String(proxyPort)
    via.searchParams.set('options', `-c search_path=${schema}`)
    const waits: number[] = []
    const config = loadConfig({ DATABASE_URL: via.toString() })
    const opening = openStores(config, { onWait: (_reason, waited) => waits.push(waited) })
    setTimeout(() => { setUp(true) }, 1200)
    const stores = await opening
    t.after(() => stores.close())
    assert.ok(waits.length >= 2, `it waited (${waits.join(', ')} ms) rather than failing at once`)
    const dogs = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())
    assert.deepEqual(await stores.categories.getCategory(dogs.id), dogs, 'the stores it opened work, migrated in the schema named')
  })

  test('postgres: a database name that does not exist fails at once: waiting cannot fix a typo', async () => {
    const url = new URL(TEST_DATABASE_URL)
    url.pathname = `/no_such_db_${randomBytes(4).toString('hex')}`
    const waits: string[] = []
    const started = Date.now()
    const opening = openStores(loadConfig({ DATABASE_URL: url.toString() }), { onWait: (reason) => waits.push(reason) })
    await assert.rejects(opening, (error: unknown) => {
      assert.ok(error instanceof InfraError)
      assert.match(error.message, /: the database does not exist$/)
      return true
    })
    assert.deepEqual(waits, [])
    assert.ok(Date.now() - started < 5000)
  })

  test('postgres: a server that accepts but never answers is a 503 after the 2 s connect timeout, never a hang', { timeout: 15_000 }, async (t) => {
    const port = await silentServer(t)
    const url = `postgres://postgres@127.0.0.1:${port}/test`
    const started = Date.now()
    await assert.rejects(createPostgresStores(url, { migrate: false }), isUnavailableAtOpen)
    const took = Date.now() - started
    assert.ok(took < 5000, `gave up after ${took} ms`)
    await assert.rejects(openStores(loadConfig({ DATABASE_URL: url }), { waitMs: 0 }), (error: unknown) => {
      assert.ok(error instanceof InfraError)
      assert.match(error.message, /^cannot open postgres:\/\/127\.0\.0\.1:\d+\/test: no connection within the connect timeout$/)
      return true
    })
  })

  test('postgres: a database that goes away while the instance runs answers 503 within the connect timeout, then recovers', { timeout: 20_000 }, async (t) => {
    // A proxy in front of the real server stands in for the network: cut it, then restore it.
    const target = new URL(TEST_DATABASE_URL)
    const { proxyPort, setUp } = await tcpProxy(t, target.hostname, Number(target.port || 5432))
    const schema = await createTestSchema(t)
    const via = new URL(TEST_DATABASE_URL)
    via.port = String(proxyPort)
    const stores = await createPostgresStores(via.toString(), { schema })
    t.after(() => stores.close())
    const dogs = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())

    setUp(false)
    for (let i = 0; i < 3; i++) {
      const started = Date.now()
      await assert.rejects(stores.categories.getCategory(dogs.id), isServiceUnavailable)
      assert.ok(Date.now() - started < 3000)
    }
    await assert.rejects(stores.ping(), isServiceUnavailable)
    await assert.rejects(stores.categories.replaceCategory(dogs.id, { name: 'X' }, null, Date.now()), isServiceUnavailable)

    setUp(true)
    assert.deepEqual(await stores.categories.getCategory(dogs.id), dogs)
    await stores.ping()
  })
}

function isUnavailableAtOpen (error: unknown): boolean {
  assert.ok(error instanceof AppError || error instanceof Error)
  const cause = error instanceof AppError ? error.cause : error
  assert.match(String((cause as Error).message), /timeout|terminated/i)
  return true
}

/**
 * A TCP proxy to the database. setUp(false) destroys every connection through it and refuses
 * new ones (like a database that went down); setUp(true) lets connections through again.
 */
async function tcpProxy (
  t: TestContext,
  host: string,
  port: number
): Promise<{ proxyPort: number; setUp (up: boolean): void }> {
  const { connect } = await import('node:net')
  let up = true
  const pairs = new Set<Socket>()
  const server = createServer((client) => {
    if (!up) { client.destroy(); return }
    const upstream = connect(port, host)
    pairs.add(client); pairs.add(upstream)
    const drop = () => { client.destroy(); upstream.destroy(); pairs.delete(client); pairs.delete(upstream) }
    client.on('error', drop); upstream.on('error', drop); client.on('close', drop); upstream.on('close', drop)
    client.pipe(upstream); upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => { for (const s of pairs) s.destroy(); server.close() })
  return {
    proxyPort: (server.address() as { port: number }).port,
    setUp (value) {
      up = value
      if (!value) for (const s of pairs) s.destroy()
    }
  }
}
