// The key-expiring job (src/jobs/key-expiring.ts, issue 31) on both engines: key.expiring 7 days
// and 1 day before a key's expiresAt, once each, none for revoked or rotated keys, the 1-day
// notice only for a key made with less than a day left, and exactly once per notice when two
// instances (two stores on one database) run it at the same time. The events are read from the
// database itself (on PostgreSQL the feed would hold back rows of other tests' transactions).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { join } from 'node:path'
import type { KeyState } from '../../src/keys/keys.service.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { keyExpiringJob, KEY_EXPIRING_EVERY_MS, KEY_NOTICE_BATCH, sendKeyExpiringNotices } from '../../src/jobs/key-expiring.ts'
import { createJobRunner, type JobTimer } from '../../src/jobs/runner.ts'
import { createMetrics } from '../../src/ops/metrics.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { buildTestApp } from '../helpers/app.ts'
import { serviceGate, withPostgres } from '../helpers/services.ts'
import { createTestSchema, testPostgresReason, TEST_DATABASE_URL } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'

const postgres = serviceGate(await testPostgresReason())

const T = Date.UTC(2026, 10, 21, 12, 0, 0)
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const iso = (ms: number): string => new Date(ms).toISOString()

interface Expiring { keyId: number; createdAt: number; state: KeyState }

/** Two instances on one database: `a` and `b` (b applies no migrations), and the key.expiring events written. */
interface Instances { a: Stores; b: Stores; expiring (): Promise<Expiring[]> }

const ENGINES: Array<{ name: string; skip: string | false; open (t: TestContext): Promise<Instances> }> = [
  {
    name: 'sqlite',
    skip: false,
    async open (t) {
      // A file, so that two stores (two connections, as two processes) share it.
      const path = join(tempDir(t, 'petstore-key-expiring-'), 'p.db')
      const a = createSqliteStores(path)
      const b = createSqliteStores(path, { migrate: false })
      t.after(async () => { await a.close(); await b.close() })
      return {
        a,
        b,
        async expiring () {
          const events = await a.events.listEvents({
            visibility: { role: 'admin' },
            types: { exact: ['key.expiring'], prefixes: [] },
            after: null,
            limit: 1000
          })
          return events.map((e) => ({
            keyId: (e.data as KeyState).record.id,
            createdAt: e.createdAt,
            state: e.data as KeyState
          }))
        }
      }
    }
  },
  {
    name: 'postgres',
    skip: postgres.skip,
    async open (t) {
      postgres.check()
      const schema = await createTestSchema(t)
      const a = await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 3 })
      const b = await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 3, migrate: false })
      t.after(async () => { await a.close(); await b.close() })
      return {
        a,
        b,
        async expiring () {
          const rows = await withPostgres(TEST_DATABASE_URL, async (c) =>
            (await c.query<{ created_at: string; data: string }>(`SELECT created_at, data FROM ${schema}.events WHERE type = 'key.expiring' ORDER BY seq`)).rows)
          return rows.map((r) => {
            const state = JSON.parse(r.data) as KeyState
            return { keyId: state.record.id, createdAt: Number(r.created_at), state }
          })
        }
      }
    }
  }
]

for (const engine of ENGINES) {
  test(`${engine.name}: key.expiring 7 days then 1 day before expiresAt, once each; nothing 10 days out, nothing for a revoked, rotated or unexpiring key`, { skip: engine.skip }, async (t) => {
    // Faults caught: a notice sent on every run, a notice window off, revoked keys or a rotation's
    // grace end warned of, the event without the key's state.
    const { a: stores, expiring } = await engine.open(t)
    const clock = manualClock(T)
    const admin = createKeyAdmin(stores.keys, clock)
    const expiresAt = T + 10 * DAY
    const key = (await admin.create({ role: 'customer', plan: 'pro', name: 'Shop', expiresAt: iso(expiresAt) })).record
    const revoked = (await admin.create({ role: 'customer', plan: 'free', expiresAt: iso(expiresAt) })).record
    await admin.revoke(revoked.id, null)
    await admin.create({ role: 'customer', plan: 'free' })
    // Rotated with a day's grace: the old key now expires in a day, which is no expiry to warn of.
    const rotated = (await admin.create({ role: 'customer', plan: 'free', expiresAt: iso(expiresAt) })).record
    await admin.rotate(rotated.id, { gracePeriodSeconds: 86_400 })
    assert.equal((await stores.keys.getKey(rotated.id))!.expiresAt, T + DAY)
    const run = () => sendKeyExpiringNotices({ events: stores.events, clock })

    assert.equal(await run(), 0)
    assert.deepEqual(await expiring(), [], '10 days out, and the rotated key a day from its grace end: nothing')

    clock.set(expiresAt - 7 * DAY + MINUTE)
    assert.equal(await run(), 1)
    const [first] = await expiring()
    assert.deepEqual(first, {
      keyId: key.id,
      createdAt: clock.now(),
      state: { record: await stores.keys.getKey(key.id), ban: null, lastUsedAt: null }
    })
    assert.equal(first!.state.record.expiresAt, expiresAt)

    clock.advance(MINUTE)
    assert.equal(await run(), 0)
    clock.set(expiresAt - 2 * DAY)
    assert.equal(await run(), 0)
    assert.equal((await expiring()).length, 1, 'the 7-day notice once')

    clock.set(expiresAt - DAY + MINUTE)
    assert.equal(await run(), 1)
    clock.advance(MINUTE)
    assert.equal(await run(), 0)
    clock.set(expiresAt + MINUTE)
    assert.equal(await run(), 0)
    assert.deepEqual(
      (await expiring()).map((e) => [e.keyId, e.createdAt]),
      [[key.id, expiresAt - 7 * DAY + MINUTE], [key.id, expiresAt - DAY + MINUTE]]
    )
  })

  test(`${engine.name}: a key made with less than a day left gets the 1-day notice only; one made with 3 days left gets the 7-day one at once and the 1-day one later`, { skip: engine.skip }, async (t) => {
    // Fault caught: notice windows that overlap (a key near its expiry sent both at once).
    const { a: stores, expiring } = await engine.open(t)
    const clock = manualClock(T)
    const admin = createKeyAdmin(stores.keys, clock)
    const short = (await admin.create({ role: 'customer', plan: 'free', expiresAt: iso(T + 12 * HOUR) })).record
    const mid = (await admin.create({ role: 'customer', plan: 'free', expiresAt: iso(T + 3 * DAY) })).record
    const run = () => sendKeyExpiringNotices({ events: stores.events, clock })
    assert.equal(await run(), 2)
    assert.deepEqual((await expiring()).map((e) => e.keyId).sort(), [short.id, mid.id].sort())
    clock.set(T + 11 * HOUR)
    assert.equal(await run(), 0, 'the short key had its 1-day notice')
    clock.set(T + 2 * DAY + MINUTE)
    assert.equal(await run(), 1)
    const perKey = (await expiring()).map((e) => e.keyId)
    assert.deepEqual(
      [perKey.filter((id) => id === short.id).length, perKey.filter((id) => id === mid.id).length],
      [1, 2]
    )
  })

  test(`${engine.name}: two instances running the job at the same time send each notice exactly once`, { skip: engine.skip }, async (t) => {
    // Fault caught: the notice recorded apart from its event, or the event written whether or not
    // the notice row was this instance's (both instances would send it).
    const { a, b, expiring } = await engine.open(t)
    const clock = manualClock(T)
    const admin = createKeyAdmin(a.keys, clock)
    const ids: number[] = []
    // More than a batch in the 7-day window, and some in the 1-day window.
    for (let i = 0; i < KEY_NOTICE_BATCH + 10; i++) {
      ids.push((await admin.create({ role: 'customer', plan: 'free', expiresAt: iso(T + 5 * DAY + i * MINUTE) })).record.id)
    }
    for (let i = 0; i < 10; i++) {
      ids.push((await admin.create({ role: 'customer', plan: 'free', expiresAt: iso(T + 6 * HOUR + i * MINUTE) })).record.id)
    }
    const runs = await Promise.all(
      [a, b, a, b].map((stores) => sendKeyExpiringNotices({ events: stores.events, clock }))
    )
    assert.equal(runs.reduce((sum, n) => sum + n, 0), ids.length, `runs sent ${runs.join(', ')}`)
    const events = await expiring()
    assert.deepEqual(events.map((e) => e.keyId).sort((x, y) => x - y), ids, 'one event per key')
    assert.equal(await sendKeyExpiringNotices({ events: b.events, clock }), 0)
  })
}

test('the job runs on the runner every minute, and the app declares it (job_runs_total{job="key-expiring"})', async (t) => {
  // Faults caught: the job left out of jobs.ts, or on another interval.
  const metrics = createMetrics()
  await buildTestApp(t, { deps: { metrics } })
  const { body } = await metrics.scrape()
  assert.match(body, /^job_runs_total\{job="key-expiring"\} 0$/m)

  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const clock = manualClock(T)
  const { record } = await createKeyAdmin(stores.keys, clock).create({ role: 'customer', plan: 'free', expiresAt: iso(T + 6 * DAY) })
  const ticks: Array<{ fn: () => void; ms: number }> = []
  const timers = {
    setInterval: (fn: () => void, ms: number): JobTimer => { ticks.push({ fn, ms }); return { unref () {} } },
    clearInterval () {}
  }
  const runner = createJobRunner(
    [keyExpiringJob({ events: stores.events, clock })],
    { log: { warn ({ err }) { throw err } }, timers }
  )
  await runner.start()
  assert.deepEqual(ticks.map((tick) => tick.ms), [KEY_EXPIRING_EVERY_MS])
  assert.equal(KEY_EXPIRING_EVERY_MS, MINUTE)
  const list = () => stores.events.listEvents({
    visibility: { role: 'admin' },
    types: { exact: ['key.expiring'], prefixes: [] },
    after: null,
    limit: 10
  })
  assert.deepEqual(await list(), [], 'not at start')
  ticks[0]!.fn()
  await runner.stop()
  assert.deepEqual((await list()).map((e) => (e.data as KeyState).record.id), [record.id])
})
