// The usage recorder on its own: what a flush writes, what a failed flush keeps, and that
// flushes never overlap (access/usage.ts).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { KeyStore, UsageBatch } from '../../src/accounts/keys.store.ts'
import { createUsageRecorder } from '../../src/access/usage.ts'
import { usageFlushJob } from '../../src/jobs/usage-flush.ts'
import { runJob } from '../jobs/run.ts'
import { utcDay } from '../../src/accounts/keys.rules.ts'

const T = Date.UTC(2026, 10, 21, 23, 59, 59, 500)

/** A key store that only records usage batches, failing or waiting when told to. */
function fakeStore () {
  const batches: UsageBatch[] = []
  let fail = false
  let gate: Promise<void> | null = null
  let calls = 0
  let called: () => void = () => {}
  const store = {
    async recordUsage (batch: UsageBatch) {
      calls++
      called()
      if (gate !== null) await gate
      if (fail) throw new Error('database down')
      batches.push(batch)
    }
  } as unknown as KeyStore
  return {
    store,
    batches,
    failNext (v: boolean) { fail = v },
    hold (p: Promise<void> | null) { gate = p },
    callCount: () => calls,
    /** Resolves once recordUsage has been called `n` times in all. */
    calledTimes (n: number) {
      return calls >= n
        ? Promise.resolve()
        : new Promise<void>((resolve) => { called = () => { if (calls >= n) resolve() } })
    }
  }
}

test('utcDay names the UTC day of an instant', () => {
  assert.equal(utcDay(T), '2026-11-21')
  assert.equal(utcDay(T + 500), '2026-11-22')
  assert.equal(utcDay(0), '1970-01-01')
})

test('a flush writes one batch: counts per key and UTC day (across midnight), and the latest use per key; nothing when idle', async () => {
  const { store, batches } = fakeStore()
  const recorder = createUsageRecorder(store)
  recorder.record(1, 'allowed', T)
  recorder.record(1, 'allowed', T + 100)
  recorder.record(1, 'limited', T + 400)
  recorder.record(2, 'banned', T + 200)
  recorder.record(1, 'allowed', T + 600) // the next UTC day
  recorder.record(1, 'other4xx', T + 650) // charged and answered 4xx: allowed, and of it other4xx
  recorder.record(1, 'other4xx', T + 660)
  recorder.record(2, null, T + 700) // a free call: a use, not a count
  await recorder.flush()
  await recorder.flush()
  assert.equal(batches.length, 1)
  assert.deepEqual(batches[0], {
    counts: [
      { keyId: 1, day: '2026-11-21', allowed: 2, limited: 1, banned: 0 },
      { keyId: 2, day: '2026-11-21', allowed: 0, limited: 0, banned: 1 },
      { keyId: 1, day: '2026-11-22', allowed: 3, limited: 0, banned: 0, other4xx: 2 }
    ],
    lastUsed: [{ keyId: 1, at: T + 660 }, { keyId: 2, at: T + 700 }]
  })
})

test('a failed flush keeps its counts for the next one, added to what came meanwhile', async () => {
  const { store, batches, failNext } = fakeStore()
  const recorder = createUsageRecorder(store)
  recorder.record(1, 'allowed', T)
  failNext(true)
  await assert.rejects(recorder.flush(), /database down/)
  assert.equal(recorder.lastUsedAt(1), T)
  recorder.record(1, 'allowed', T + 1)
  failNext(false)
  await recorder.flush()
  assert.deepEqual(batches, [{
    counts: [{ keyId: 1, day: '2026-11-21', allowed: 2, limited: 0, banned: 0 }],
    lastUsed: [{ keyId: 1, at: T + 1 }]
  }])
  assert.equal(recorder.lastUsedAt(1), null, 'written: the database has it now')
})

test('flushes never overlap; lastUsedAt reports a use while its flush is in flight', async () => {
  const { store, batches, hold, calledTimes, callCount } = fakeStore()
  const recorder = createUsageRecorder(store)
  let open!: () => void
  hold(new Promise((resolve) => { open = resolve }))
  recorder.record(1, 'allowed', T)
  const first = recorder.flush()
  await calledTimes(1)
  assert.equal(recorder.lastUsedAt(1), T, 'in flight, not yet written')
  recorder.record(1, 'allowed', T + 5)
  const second = recorder.flush()
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(recorder.lastUsedAt(1), T + 5)
  assert.equal(callCount(), 1, 'the second waits for the first to finish')
  assert.equal(batches.length, 0)
  hold(null)
  open()
  await Promise.all([first, second])
  assert.deepEqual(batches.map((b) => b.counts.map((c) => c.allowed)), [[1], [1]], 'in order, one after the other')
})

test('stop() stops the timer and flushes what is left', async () => {
  const { store, batches } = fakeStore()
  const recorder = createUsageRecorder(store)
  const flushing = runJob(usageFlushJob({ usage: recorder, usageFlushMs: 60_000 }))
  await flushing.start()
  recorder.record(3, 'limited', T)
  await flushing.stop()
  assert.equal(batches.length, 1)
})

// Fault caught: the per-day cache of deprecated calls (docs/performance.md) counting a call made
// after midnight under the day before, or two keys or operations under one row.
test('deprecated calls are counted per operation, key and UTC day, across midnight, and a failed flush keeps them', async () => {
  const { store, batches, failNext } = fakeStore()
  const recorder = createUsageRecorder(store)
  recorder.recordDeprecated('getPet', 1, T)
  recorder.recordDeprecated('getPet', 1, T + 100)
  recorder.recordDeprecated('getPet', 2, T + 200)
  recorder.recordDeprecated('listOld', 1, T + 300)
  recorder.recordDeprecated('getPet', 1, T + 600) // the next UTC day
  failNext(true)
  await assert.rejects(recorder.flush(), /database down/)
  failNext(false)
  recorder.recordDeprecated('getPet', 1, T + 700)
  await recorder.flush()
  const rows = (batches[0]?.deprecated ?? []).map((r) => [r.operation, r.keyId, r.day, r.calls, r.lastCallAt - T])
  rows.sort((a, b) => String(a).localeCompare(String(b)))
  assert.deepEqual(rows, [
    ['getPet', 1, '2026-11-21', 2, 100],
    ['getPet', 1, '2026-11-22', 2, 700],
    ['getPet', 2, '2026-11-21', 1, 200],
    ['listOld', 1, '2026-11-21', 1, 300]
  ])
})
