// The targets the bench judges rows by (bench/report.ts): issue 34's successor rule and memory bound.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { memoryRow, successorCheck, type Row } from '../../bench/report.ts'

const row = (scenario: 'get' | 'id', ratio: number, met: boolean | null): Row => ({
  setup: 'postgres', scenario, title: scenario, status: 'ok', requests: 1, reqPerSec: 1, p50Ms: 1, p99Ms: 1,
  ratio, ratioRange: [ratio, ratio], target: scenario === 'id' ? 'p99 <= 2.5x bare\'s' : null, met
})

test('bench targets: GET /v1/pets?id= must run at least at the ratio of GET /v1/pets/{id} beside it', () => {
  const slower = [row('get', 0.45, true), row('id', 0.42, true)]
  successorCheck(slower)
  assert.equal(slower[1]!.met, false)
  assert.equal(slower[1]!.target, 'p99 <= 2.5x bare\'s, >= GET /v1/pets/{id}\'s ratio')
  const asFast = [row('get', 0.45, true), row('id', 0.45, true)]
  successorCheck(asFast)
  assert.equal(asFast[1]!.met, true)
  const missedOtherwise = [row('get', 0.3, null), row('id', 0.45, false)]
  successorCheck(missedOtherwise)
  assert.equal(missedOtherwise[1]!.met, false, 'a missed p99 stays missed')
  const alone = [row('id', 0.2, true)]
  successorCheck(alone)
  assert.equal(alone[0]!.met, true, 'no by-id row measured: nothing to compare')
})

test('bench targets: RSS after the run under 128 MiB on SQLite (issue 34), no target elsewhere', () => {
  const parts = null as never
  const mib = (n: number) => ({ rss: n * 2 ** 20, parts })
  assert.deepEqual([memoryRow('sqlite', mib(100), mib(127.9)).met, memoryRow('sqlite', mib(100), mib(128)).met], [true, false])
  assert.equal(memoryRow('sqlite', mib(100), mib(127)).target, '< 128 MiB after')
  assert.equal(memoryRow('postgres', mib(100), mib(200)).met, null)
})
