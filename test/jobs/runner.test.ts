// The jobs runner (src/jobs/runner.ts) on its own, on timers the test moves by hand: the interval,
// no overlap, what stop() waits for, what a failure costs (a log line and a count, not the next
// run), and the unref that keeps the process free to exit (in a child process, on Node's timers).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { test } from 'node:test'
import { createJobRunner, type Job, type JobTimer, type JobTimers } from '../../src/jobs/runner.ts'
import { createMetrics } from '../../src/ops/metrics.ts'

interface FakeTimer extends JobTimer { fn: () => void; ms: number; next: number; refed: boolean }

/** Timers that fire only when the test moves time (tick), each interval in order. */
function fakeTimers () {
  let now = 0
  const armed: FakeTimer[] = []
  const timers: JobTimers = {
    setInterval (fn, ms) {
      const timer: FakeTimer = { fn, ms, next: now + ms, refed: true, unref () { timer.refed = false; return timer } }
      armed.push(timer)
      return timer
    },
    clearInterval (timer) { armed.splice(armed.indexOf(timer as FakeTimer), 1) }
  }
  return {
    timers,
    armed,
    tick (ms: number) {
      const end = now + ms
      for (;;) {
        const due = armed.filter((t) => t.next <= end).sort((a, b) => a.next - b.next)[0]
        if (due === undefined) break
        now = due.next
        due.next += due.ms
        due.fn()
      }
      now = end
    }
  }
}

/** Lets the promise chains a run started finish. */
async function settle (): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** A job whose runs are counted and can be held open (hold) or made to fail (failNext). */
function countedJob (everyMs: number, extra: Partial<Job> = {}) {
  let runs = 0
  let running = 0
  let most = 0
  let hold: Promise<void> | null = null
  let release = (): void => {}
  let failure: Error | null = null
  const job: Job = {
    name: 'counted',
    everyMs,
    async run () {
      runs++
      running++
      most = Math.max(most, running)
      try {
        if (hold !== null) await hold
        if (failure !== null) { const error = failure; failure = null; throw error }
      } finally {
        running--
      }
    },
    ...extra
  }
  return {
    job,
    runs: () => runs,
    mostAtOnce: () => most,
    hold: () => { hold = new Promise((resolve) => { release = resolve }) },
    release: () => { hold = null; release() },
    failNext: (error: Error) => { failure = error }
  }
}

const silent = { warn: () => {} }

test('a job runs every everyMs from start() until stop(), never before, with one timer however often started', async () => {
  // Fault caught: a wrong interval, a first run at start for a job that did not ask, a second
  // timer, a timer left armed.
  const clock = fakeTimers()
  const counted = countedJob(1000)
  const runner = createJobRunner([counted.job], { log: silent, timers: clock.timers })
  await runner.start()
  await runner.start()
  assert.equal(clock.armed.length, 1)
  clock.tick(999)
  await settle()
  assert.equal(counted.runs(), 0)
  clock.tick(1)
  await settle()
  assert.equal(counted.runs(), 1)
  for (let i = 0; i < 3; i++) { clock.tick(1000); await settle() }
  assert.equal(counted.runs(), 4)
  await runner.stop()
  assert.equal(clock.armed.length, 0)
  clock.tick(10_000)
  await settle()
  assert.equal(counted.runs(), 4, 'stopped')
})

test('a run still going when the next is due is skipped, never run beside it; the next due run goes', async () => {
  // Fault caught: overlapping runs (two sweeps or flushes at once), or a job that never runs again after a slow run.
  const clock = fakeTimers()
  const counted = countedJob(1000)
  const runner = createJobRunner([counted.job], { log: silent, timers: clock.timers })
  await runner.start()
  counted.hold()
  clock.tick(1000)
  await settle()
  assert.equal(counted.runs(), 1)
  clock.tick(5000)
  await settle()
  assert.equal(counted.runs(), 1, 'skipped while the first is running')
  counted.release()
  await settle()
  clock.tick(1000)
  await settle()
  assert.equal(counted.runs(), 2)
  assert.equal(counted.mostAtOnce(), 1)
  await runner.stop()
})

test('stop() waits for the run in flight, then runs the atStop jobs once; a second stop() is the same stop', async () => {
  // Fault caught: stores closed under a running job, a usage flush at close racing the last timer
  // flush or run twice, a job that runs after close.
  const clock = fakeTimers()
  const order: string[] = []
  const counted = countedJob(1000)
  const finalJob: Job = {
    name: 'final',
    everyMs: 0,
    atStop: true,
    run: async () => { order.push(`final after ${counted.runs()} run(s), none running: ${counted.mostAtOnce() === 1}`) }
  }
  const runner = createJobRunner([counted.job, finalJob], { log: silent, timers: clock.timers })
  await runner.start()
  assert.equal(clock.armed.length, 1, 'a job of everyMs 0 has no timer')
  counted.hold()
  clock.tick(1000)
  await settle()
  const first = runner.stop()
  const second = runner.stop()
  assert.equal(first, second)
  let stopped = false
  void first.then(() => { stopped = true })
  await settle()
  assert.equal(stopped, false, 'still waiting for the run in flight')
  assert.deepEqual(order, [])
  counted.release()
  await first
  assert.deepEqual(order, ['final after 1 run(s), none running: true'])
  clock.tick(10_000)
  await settle()
  await runner.stop()
  assert.equal(counted.runs(), 1)
  assert.equal(order.length, 1, 'atStop ran once')
})

test('an atStart job has run when start() resolves; a runner never started runs nothing at stop()', async () => {
  // Fault caught: the first request served before the sweep at start, or a flush at close of an app that never started.
  const clock = fakeTimers()
  const atStart = countedJob(10_000, { name: 'at-start', atStart: true })
  const atStop = countedJob(0, { name: 'at-stop', atStop: true })
  const idle = createJobRunner([atStart.job, atStop.job], { log: silent, timers: clock.timers })
  await idle.stop()
  assert.equal(atStop.runs(), 0)
  const runner = createJobRunner([atStart.job, atStop.job], { log: silent, timers: clock.timers })
  atStart.hold()
  let started = false
  const starting = runner.start().then(() => { started = true })
  await settle()
  assert.equal(started, false, 'start() waits for the run at start')
  atStart.release()
  await starting
  assert.equal(atStart.runs(), 1)
  await runner.stop()
})

test('a failed run is logged with the job\'s name and counted in job_failures_total, and the next run goes on', async () => {
  // Fault caught: a failure that stops the job's timer, goes unlogged, is not counted, or escapes
  // as an unhandled rejection.
  const clock = fakeTimers()
  const metrics = createMetrics()
  const lines: Array<{ fields: { err: unknown; job: string }; message: string }> = []
  const counted = countedJob(1000, { name: 'sweep', failure: 'the sweep failed; the next one retries' })
  const runner = createJobRunner([counted.job], {
    log: { warn: (fields, message) => { lines.push({ fields, message }) } },
    events: metrics,
    timers: clock.timers
  })
  const sample = async (name: string) => Number(new RegExp(`^${name}\\{job="sweep"\\} (\\d+)$`, 'm').exec((await metrics.scrape()).body)?.[1])
  assert.equal(await sample('job_runs_total'), 0, 'present from the start')
  assert.equal(await sample('job_failures_total'), 0)
  await runner.start()
  const outage = new Error('database is out')
  counted.failNext(outage)
  clock.tick(1000)
  await settle()
  assert.deepEqual(lines, [{ fields: { err: outage, job: 'sweep' }, message: 'the sweep failed; the next one retries' }])
  clock.tick(1000)
  await settle()
  assert.equal(counted.runs(), 2, 'the next run went on')
  assert.equal(await sample('job_runs_total'), 2)
  assert.equal(await sample('job_failures_total'), 1)
  await runner.stop()
})

test('two jobs of one name are refused when the runner is made', () => {
  // Fault caught: two jobs sharing one metric series and log name.
  assert.throws(() => createJobRunner([countedJob(1).job, countedJob(2).job], { log: silent }), /two background jobs are named counted/)
})

test('the runner unrefs its timers: a process that only runs jobs exits at once', async () => {
  // Fault caught: a job's timer that holds the process open (a CLI command or a stopped server never exits).
  const clock = fakeTimers()
  const runner = createJobRunner([countedJob(1000).job], { log: silent, timers: clock.timers })
  await runner.start()
  assert.equal(clock.armed[0]?.refed, false)
  await runner.stop()
  // On Node's own timers: a job every minute, started, and nothing else to do.
  const runnerUrl = new URL('../../src/jobs/runner.ts', import.meta.url).href
  const script = `import { createJobRunner } from ${JSON.stringify(runnerUrl)}
await createJobRunner([{ name: 'idle', everyMs: 60000, run: async () => {} }], { log: console }).start()
console.log('started')`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  const startedAt = Date.now()
  const code = await new Promise<number | null>((resolve) => {
    const kill = setTimeout(() => { child.kill('SIGKILL') }, 10_000)
    child.on('exit', (exitCode) => { clearTimeout(kill); resolve(exitCode) })
  })
  assert.equal(out.trim(), 'started')
  assert.equal(code, 0, 'exited by itself')
  assert.ok(Date.now() - startedAt < 10_000)
})
