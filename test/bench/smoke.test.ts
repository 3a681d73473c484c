// A one-second smoke run of `npm run bench`, so the harness cannot rot: it starts the servers,
// seeds, drives each kind of load (a random pet per request, a POST, the mixed run with its
// per-request timing), parses the generator's numbers and writes the table. It asserts that all
// of that happened, never how fast: speed is measured by `npm run bench`, not tested.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { hasCommand } from '../../bench/processes.ts'
import type { Document, Row } from '../../bench/report.ts'
import { serviceGate } from '../helpers/services.ts'

const RUN = new URL('../../bench/run.ts', import.meta.url).pathname
const TINY = ['--rounds', '1', '--slice', '1', '--warmup', '0', '--pets', '50', '--redis', 'off', '--postgres', 'off', '--micro', '0']

async function bench (t: { after (fn: () => Promise<void>): void }, args: string[]): Promise<{ stdout: string; doc: Document; markdown: string }> {
  const out = await mkdtemp(path.join(os.tmpdir(), 'petstore-bench-smoke-'))
  t.after(() => rm(out, { recursive: true, force: true }))
  const { stdout } = await promisify(execFile)(process.execPath, [RUN, ...TINY, '--out', out, ...args], { timeout: 90_000 })
  const doc = JSON.parse(await readFile(path.join(out, 'latest.json'), 'utf8')) as Document
  return { stdout, doc, markdown: await readFile(path.join(out, 'latest.md'), 'utf8') }
}

function assertMeasured (row: Row | undefined, title: string): void {
  assert.ok(row, `no row for ${title}`)
  assert.equal(row.status, 'ok', `${title}: ${row.reason ?? ''}`)
  for (const figure of [row.reqPerSec, row.p50Ms, row.p99Ms, row.ratio]) {
    assert.ok(typeof figure === 'number' && Number.isFinite(figure) && figure > 0, `${title}: ${JSON.stringify(row)}`)
  }
  assert.ok(row.requests > 0)
}

// wrk is what the benchmark is meant to run on; without it the run falls back to autocannon and
// says so, which this test then checks instead. Under CI a missing wrk fails (the services rule).
const wrk = serviceGate(hasCommand('wrk') ? null : 'wrk is not installed (Debian: apt-get install wrk)')

test('npm run bench, one second per slice: the reference, a random-pet read, orders and the mixed run are measured, tabled and saved', { timeout: 120_000 }, async (t) => {
  wrk.check()
  const { stdout, doc, markdown } = await bench(t, ['--only', 'get,orders,mixed'])
  assert.equal(doc.ok, true, doc.failures.join('\n'))
  assert.match(doc.generator, wrk.skip === false ? /^wrk/ : /^autocannon in a child process \(wrk is not installed/)
  assert.deepEqual(doc.rows.map((r) => [r.setup, r.scenario, r.status]), [
    ['bare', 'bare', 'ok'],
    ['sqlite', 'get', 'ok'],
    ['sqlite', 'orders', 'ok'],
    ['sqlite', 'mixed', 'ok'],
    ['postgres', 'all', 'skipped'],
    ['redis', 'all', 'skipped']
  ])
  for (const row of doc.rows.filter((r) => r.status === 'ok')) assertMeasured(row, row.title)
  const mixed = doc.rows.find((r) => r.scenario === 'mixed')!
  assert.ok(mixed.mixed !== undefined && mixed.mixed.ordersPerSec > 0 && mixed.mixed.readsPerSec > 0, JSON.stringify(mixed.mixed))
  assert.deepEqual(doc.rows.map((r) => r.target), [null, '>= 0.6x, p99 < 5 ms', '>= 0.2x', 'reads p99 < 10 ms', null, null])
  assert.equal(doc.memory.length, 1)
  assert.ok(doc.memory[0]!.startMiB! > 0 && doc.memory[0]!.afterMiB! > 0)
  // The table, on stdout and in latest.md.
  assert.match(stdout, /scenario\s+req\/s\s+p50 ms\s+p99 ms\s+ratio to bare/)
  assert.match(markdown, /\| setup \| scenario \| req\/s \| p50 ms \| p99 ms \| ratio to bare \|/)
  assert.match(markdown, /\| SQLite \| POST \/v1\/store\/orders \| [\d,]+ \|/)
})

test('npm run bench --generator autocannon: the fallback generator runs in its own process and its numbers are parsed', { timeout: 120_000 }, async (t) => {
  const { doc } = await bench(t, ['--only', 'get', '--generator', 'autocannon'])
  assert.equal(doc.ok, true, doc.failures.join('\n'))
  assert.match(doc.generator, /^autocannon in a child process \(asked for/)
  assertMeasured(doc.rows.find((r) => r.scenario === 'bare'), 'bare')
  assertMeasured(doc.rows.find((r) => r.scenario === 'get'), 'get')
})
