// The fuzzer at a fixed seed and a bounded count, so that `npm test` is deterministic and quick;
// `npm run fuzz -- --seed S --runs N` runs it longer.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runFuzz } from './fuzz.ts'

test('fuzz: generated requests for every operation never get a 5xx, and every answer keeps the document', async (t) => {
  const report = await runFuzz(t, { seed: 20261123, runs: 400 })
  assert.equal(report.serverErrors, 0)
  assert.ok(report.requests >= 400)
  t.diagnostic(`operations ${report.operations}, requests ${report.requests}, by status ${JSON.stringify(report.byStatus)}`)
})
