// The plans of the SQLite webhook store's statements that run once per attempt: a statement that
// walks the endpoint's pending deliveries on each attempt makes delivery quadratic in the backlog
// (the bench's webhooks row fell to 200 deliveries a second behind 30,000 waiting). SQLite picks
// a plan from the indexes, not from the data, so the plan is asserted on the schema itself.
import assert from 'node:assert/strict'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { SQLITE_MIGRATIONS } from '../../../src/storage/sqlite/migrations.ts'
import { SETTLE_OTHERS_SQL } from '../../../src/storage/sqlite/webhooks.ts'

function planOf (sql: string, ...params: Array<string | number>): string[] {
  const db = new DatabaseSync(':memory:')
  for (const migration of SQLITE_MIGRATIONS) db.exec(migration)
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>
  db.close()
  return plan.map((step) => step.detail)
}

test('a success settles the event\'s other deliveries found by the event\'s index, never by walking the endpoint\'s pending ones', () => {
  const plan = planOf(SETTLE_OTHERS_SQL, 1, 2, 'wh_x')
  assert.ok(plan.some((step) => /^SEARCH webhook_deliveries USING INDEX webhook_deliveries_by_event \(event_id=\?\)/.test(step)), plan.join('\n'))
  assert.ok(!plan.some((step) => /webhook_deliveries_claim|^SCAN webhook_deliveries/.test(step)), plan.join('\n'))
})
