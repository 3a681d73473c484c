// npm run fuzz -- [--seed S] [--runs N]: the fuzzer for longer than npm test runs it. It prints
// the seed (fast-check's report, on failure, also gives the path to replay the counterexample).
import { parseArgs } from 'node:util'
import { test } from 'node:test'
import { runFuzz } from './fuzz.ts'

const { values } = parseArgs({ options: { seed: { type: 'string' }, runs: { type: 'string', default: '2000' } }, strict: true })
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31)
const runs = Number(values.runs)
if (!Number.isSafeInteger(seed) || !Number.isSafeInteger(runs) || runs < 1) {
  console.error('usage: npm run fuzz -- [--seed S] [--runs N] (whole numbers)')
  process.exit(2)
}
console.log(`fuzz: seed ${seed}, ${runs} runs`)
test(`fuzz with seed ${seed}`, async (t) => {
  const report = await runFuzz(t, { seed, runs })
  console.log(`fuzz: seed ${seed}: operations ${report.operations}, requests ${report.requests}, 5xx ${report.serverErrors}, by status ${JSON.stringify(report.byStatus)}`)
})
