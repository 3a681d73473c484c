// npm run fuzz -- [--seed S] [--runs N] [--engine sqlite|postgres]: the fuzzer for longer than npm
// test runs it, on SQLite (in memory) or PostgreSQL (a fresh schema of the test database). It
// prints the seed (fast-check's report, on failure, also gives the path to replay the counterexample).
import { parseArgs } from 'node:util'
import { test } from 'node:test'
import { runFuzz } from './fuzz.ts'

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    runs: { type: 'string', default: '2000' },
    engine: { type: 'string', default: 'sqlite' }
  },
  strict: true
})
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31)
const runs = Number(values.runs)
const engine = values.engine
if (!Number.isSafeInteger(seed) || !Number.isSafeInteger(runs) || runs < 1 || (engine !== 'sqlite' && engine !== 'postgres')) {
  console.error('usage: npm run fuzz -- [--seed S] [--runs N] (whole numbers) [--engine sqlite|postgres]')
  process.exit(2)
}
console.log(`fuzz: seed ${seed}, ${runs} runs, ${engine}`)
test(`fuzz with seed ${seed} on ${engine}`, async (t) => {
  const started = performance.now()
  const report = await runFuzz(t, { seed, runs, engine })
  const seconds = ((performance.now() - started) / 1000).toFixed(0)
  console.log(`fuzz: seed ${seed} on ${engine}: operations ${report.operations}, requests ${report.requests}, `
    + `rule breakers ${report.ruleBreakers} (each 400), 5xx ${report.serverErrors}, `
    + `by status ${JSON.stringify(report.byStatus)}, ${seconds} s`)
})
