// The fuzzer at a fixed seed and a bounded count, so that `npm test` is deterministic and quick,
// on SQLite and on PostgreSQL (which refuses what SQLite stores, such as U+0000 in text);
// `npm run fuzz -- --seed S --runs N [--engine postgres]` runs it longer.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runFuzz } from './fuzz.ts'

test('fuzz: generated requests for every operation never get a 5xx, and every answer keeps the document', async (t) => {
  const report = await runFuzz(t, { seed: 20261123, runs: 400 })
  assert.equal(report.serverErrors, 0)
  assert.ok(report.requests >= 400)
  assert.ok(report.ruleBreakers >= 40, `only ${report.ruleBreakers} rule-breaking requests`)
  t.diagnostic(`operations ${report.operations}, requests ${report.requests}, rule breakers ${report.ruleBreakers}, by status ${JSON.stringify(report.byStatus)}`)
})

test('fuzz on PostgreSQL: the same, at a fixed seed', { timeout: 180_000 }, async (t) => {
  const report = await runFuzz(t, { seed: 20261124, runs: 300, engine: 'postgres' })
  assert.equal(report.serverErrors, 0)
  assert.ok(report.requests >= 300)
  assert.ok(report.ruleBreakers >= 30, `only ${report.ruleBreakers} rule-breaking requests`)
  t.diagnostic(`operations ${report.operations}, requests ${report.requests}, rule breakers ${report.ruleBreakers}, by status ${JSON.stringify(report.byStatus)}`)
})
