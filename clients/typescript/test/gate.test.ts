// The client's request gate (src/gate.ts) on a manual clock, one behaviour per test: each pins a
// fault that mutation testing showed the end-to-end tests would let through (docs/testing.md).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createGate, JITTER_MS, type Gate } from '../src/gate.ts'

interface Harness { gate: Gate; clock: { t: number }; sleeps: number[]; tooLongs: number[] }

function harness (options: { maxConcurrency?: number; maxWaitMs?: number; random?: number; t?: number } = {}): Harness {
  const clock = { t: options.t ?? 1_000_000 }
  const sleeps: number[] = []
  const tooLongs: number[] = []
  const gate = createGate({
    maxConcurrency: options.maxConcurrency ?? 8,
    now: () => clock.t,
    sleep: async (ms) => { sleeps.push(ms); clock.t += ms },
    random: () => options.random ?? 0,
    maxWaitMs: options.maxWaitMs ?? 60_000,
    tooLong: (waitMs) => { tooLongs.push(waitMs); return new Error(`too long: ${waitMs}`) }
  })
  return { gate, clock, sleeps, tooLongs }
}

/** Lets every settled promise run its callbacks. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Starts n acquires; the returned list says which have resolved ('go') or rejected (the message). */
function acquireMany (gate: Gate, n: number): (string | null)[] {
  const states: (string | null)[] = Array.from({ length: n }, () => null)
  for (let i = 0; i < n; i++) gate.acquire().then(() => { states[i] = 'go' }, (e: Error) => { states[i] = e.message })
  return states
}

test('gate: at start one request probes the unknown window; the others wait until its answer says how much is left', async () => {
  const { gate } = harness()
  const states = acquireMany(gate, 3)
  await settle()
  assert.deepEqual(states, ['go', null, null])
  gate.observe(10, 1_000_000 + 60_000)
  gate.release()
  await settle()
  assert.deepEqual(states, ['go', 'go', 'go'])
})

test('gate: an unmetered answer ends probing, and maxConcurrency then caps the requests in flight; a release lets the next one go', async () => {
  const { gate } = harness({ maxConcurrency: 2 })
  const first = acquireMany(gate, 1)
  await settle()
  gate.unmetered()
  gate.release()
  const states = acquireMany(gate, 3)
  await settle()
  assert.deepEqual([first, states], [['go'], ['go', 'go', null]])
  gate.release()
  await settle()
  assert.deepEqual(states, ['go', 'go', 'go'])
})

test('gate: requests in flight count against remaining; with nothing left and none in flight, the next waits for the reset plus jitter', async () => {
  const { gate, clock, sleeps } = harness({ random: 0.5 })
  const start = clock.t
  gate.unmetered()
  gate.observe(2, start + 30_000)
  const states = acquireMany(gate, 3)
  await settle()
  assert.deepEqual(states, ['go', 'go', null], 'two left: two go, the third waits for their answers')
  assert.deepEqual(sleeps, [], 'no sleep while answers are in flight')
  gate.observe(0, start + 30_000)
  gate.release()
  gate.release()
  await settle()
  assert.deepEqual(sleeps, [30_000 + Math.floor(0.5 * JITTER_MS)], 'waits for the reset, plus jitter')
  assert.equal(JITTER_MS, 1000)
  assert.deepEqual(states, ['go', 'go', 'go'], 'after the reset the window is unknown: one request probes')
})

test('gate: after the reset the window is unknown again, so only one request goes until an answer comes', async () => {
  const { gate, clock } = harness()
  gate.unmetered()
  gate.observe(5, clock.t + 1000)
  clock.t += 1000
  const states = acquireMany(gate, 2)
  await settle()
  assert.deepEqual(states, ['go', null])
})

test('gate: the last request of a window may go (remaining 1, none in flight)', async () => {
  const { gate, clock, sleeps } = harness()
  gate.unmetered()
  gate.observe(1, clock.t + 10_000)
  const states = acquireMany(gate, 1)
  await settle()
  assert.deepEqual([states, sleeps], [['go'], []])
})

test('gate: hold() keeps every request back until the time given plus jitter; a shorter later hold does not shorten it', async () => {
  const { gate, clock, sleeps } = harness({ random: 0.25 })
  const start = clock.t
  gate.unmetered()
  gate.hold(start + 5000)
  gate.hold(start + 2000)
  const states = acquireMany(gate, 3)
  await settle()
  assert.deepEqual(sleeps, [5000 + 250], 'one sleep for all the waiting requests')
  assert.deepEqual(states, ['go', 'go', 'go'])
})

test('gate: a hold that has passed holds nothing', async () => {
  const { gate, clock, sleeps } = harness()
  gate.unmetered()
  gate.hold(clock.t)
  const states = acquireMany(gate, 1)
  await settle()
  assert.deepEqual([states, sleeps], [['go'], []])
})

test('gate: a wait longer than maxWaitMs rejects every queued request at once with tooLong(wait); one of exactly maxWaitMs is slept through', async () => {
  const long = harness({ maxWaitMs: 10_000 })
  long.gate.unmetered()
  long.gate.hold(long.clock.t + 10_001)
  const rejected = acquireMany(long.gate, 2)
  await settle()
  assert.deepEqual([rejected, long.tooLongs, long.sleeps], [['too long: 10001', 'too long: 10001'], [10_001, 10_001], []])

  const exact = harness({ maxWaitMs: 10_000 })
  exact.gate.unmetered()
  exact.gate.observe(0, exact.clock.t + 10_000)
  const waited = acquireMany(exact.gate, 1)
  await settle()
  assert.deepEqual([waited, exact.tooLongs, exact.sleeps], [['go'], [], [10_000]])
})

test('gate: after a rejection for a too-long wait, the gate still serves requests once the wait is over', async () => {
  const { gate, clock } = harness({ maxWaitMs: 1000 })
  gate.unmetered()
  gate.hold(clock.t + 5000)
  const rejected = acquireMany(gate, 1)
  await settle()
  clock.t += 5000
  const later = acquireMany(gate, 1)
  await settle()
  assert.deepEqual([rejected, later], [['too long: 5000'], ['go']])
})

test('gate: an answer of a window that has already ended changes nothing (but ends probing)', async () => {
  const { gate, clock, sleeps } = harness()
  gate.observe(0, clock.t)
  const states = acquireMany(gate, 2)
  await settle()
  assert.deepEqual([states, sleeps], [['go', 'go'], []])
})

test('gate: answers of one window arriving out of order keep the smallest remaining; a reset 2 s or more away is a new window', async () => {
  const { gate, clock, sleeps } = harness()
  const reset = clock.t + 30_000
  gate.observe(0, reset)
  gate.observe(5, reset + 1999) // an earlier answer of the same window, its reset rounded another way
  const held = acquireMany(gate, 1)
  await settle()
  assert.deepEqual([held, sleeps], [['go'], [30_000]], 'still nothing left: waits for the reset')

  const next = harness()
  next.gate.observe(0, next.clock.t + 30_000)
  next.gate.observe(5, next.clock.t + 32_000) // the next window
  const states = acquireMany(next.gate, 1)
  await settle()
  assert.deepEqual([states, next.sleeps], [['go'], []])
})

test('gate: the same window seen from the other side (an earlier reset) also keeps the smallest remaining', async () => {
  const { gate, clock, sleeps } = harness()
  const reset = clock.t + 30_000
  gate.observe(0, reset)
  gate.observe(5, reset - 1999)
  const held = acquireMany(gate, 1)
  await settle()
  assert.deepEqual([held, sleeps], [['go'], [30_000]])
})

test('gate: while one wait is being slept, a new request joins it instead of starting a second sleep; all go when that one ends', async () => {
  // A real timer: the sleep resolves only when the test says so. A second pump loop (no
  // `pumping` guard) would sleep again for the newcomer, and with a sleep that moves a clock,
  // move it twice.
  const clock = { t: 1_000_000 }
  const sleeps: { ms: number; wake: () => void }[] = []
  const gate = createGate({
    maxConcurrency: 8,
    now: () => clock.t,
    sleep: (ms) => new Promise<void>((resolve) => { sleeps.push({ ms, wake: () => { clock.t += ms; resolve() } }) }),
    random: () => 0,
    maxWaitMs: 60_000,
    tooLong: () => new Error('too long')
  })
  gate.unmetered()
  gate.hold(clock.t + 5000)
  const first = acquireMany(gate, 1)
  await settle()
  const second = acquireMany(gate, 1)
  await settle()
  assert.deepEqual([first, second, sleeps.map((s) => s.ms)], [[null], [null], [5000]], 'one sleep for both')
  sleeps[0]!.wake()
  await settle()
  assert.deepEqual([first, second, sleeps.length], [['go'], ['go'], 1])
  const third = acquireMany(gate, 1)
  await settle()
  assert.deepEqual(third, ['go'], 'the pump ran again after the first ended')
})
