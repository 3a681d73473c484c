// A statement run on its own (Db.query) is a transaction of its own: when PostgreSQL picks it as
// a deadlock's victim, all of it was rolled back, so it runs again like a transaction does. It
// was a 500 on DELETE /v1/webhooks/{id} whose cascade met the dispatcher's locks.
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import pg from 'pg'
import { currentActor } from '../../../src/shared/actor-context.ts'
import { createDb } from '../../../src/storage/postgres/database.ts'
import { TEST_DATABASE_URL, testPostgresReason } from '../../helpers/stores.ts'

test('a statement chosen as a deadlock victim runs again and succeeds', { skip: await testPostgresReason() ?? false, timeout: 30_000 }, async (t) => {
  const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 2 })
  t.after(() => pool.end())
  const db = createDb(pool, currentActor)
  const [a, b] = [4_000_000 + Math.floor(Math.random() * 1e6), 5_000_000 + Math.floor(Math.random() * 1e6)]
  const other = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await other.connect()
  t.after(() => other.end())
  await other.query('BEGIN')
  await other.query('SELECT pg_advisory_xact_lock($1)', [a])
  // The statement takes b, then waits for a: it starts waiting first, so its deadlock check
  // fires first and PostgreSQL aborts it, not the other transaction.
  const statement = db.query('SELECT pg_advisory_xact_lock($1), pg_sleep(0.2), pg_advisory_xact_lock($2)', [b, a])
  await sleep(800)
  await other.query('SELECT pg_advisory_xact_lock($1)', [b])
  await other.query('COMMIT')
  // Fault caught: a single statement not run again (the deadlock reaches the caller: a 500).
  const rows = await statement
  assert.equal(rows.length, 1)
})
