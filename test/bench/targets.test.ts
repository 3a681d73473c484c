// The targets the bench judges rows by (bench/report.ts): issue 34's successor rule and memory bound,
// and issue 20's reference check.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { memoryRow, referenceCheck, successorCheck, type Row } from '../../bench/report.ts'

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

test('bench reference check: each plain wrk run against the bench\'s load beside it, not against the whole run', () => {
  const plain = (reqPerSec: number) => ({ reqPerSec, p99Ms: 1, command: 'wrk' })
  // Session 30's machine: 57,659 req/s at the start, 43,587 at the end, 42,380 over the rounds.
  // Each method agreed with the other beside it: the run passes, and the drift is reported.
  const drifted = referenceCheck([
    { when: 'start', plain: plain(57_659), benchReqPerSec: 55_000 },
    { when: 'end', plain: plain(43_587), benchReqPerSec: 44_500 }
  ], 42_380, 15)
  assert.equal(drifted.ok, true)
  assert.deepEqual(drifted.pairs.map((p) => Math.round(p.differencePct * 10) / 10), [4.6, 2.1])
  assert.equal(Math.round(drifted.driftPct! * 10) / 10, -24.4)
  // A script that holds the generator back (issue 20: the bench's bare at half of plain wrk's)
  // fails, at either end.
  const flattering = referenceCheck([
    { when: 'start', plain: plain(60_000), benchReqPerSec: 58_000 },
    { when: 'end', plain: plain(60_000), benchReqPerSec: 30_000 }
  ], 44_000, 15)
  assert.equal(flattering.ok, false)
  assert.deepEqual(flattering.pairs.map((p) => p.differencePct <= 15), [true, false])
  // At the tolerance's edge: 15% passes, just past it fails; no pair at all is no check passed.
  assert.equal(referenceCheck([{ when: 'start', plain: plain(100), benchReqPerSec: 85 }], 85, 15).ok, true)
  assert.equal(referenceCheck([{ when: 'start', plain: plain(100), benchReqPerSec: 84.9 }], 85, 15).ok, false)
  assert.equal(referenceCheck([{ when: 'start', plain: plain(100), benchReqPerSec: 115.1 }], 85, 15).ok, false)
  assert.equal(referenceCheck([], 85, 15).ok, false)
  assert.equal(referenceCheck([{ when: 'start', plain: plain(100), benchReqPerSec: 100 }], 85, 15).driftPct, null)
})
