// The one place a repeating timer starts (issue 29): the app's background jobs, declared in
// jobs/jobs.ts, run here. Each job runs at its interval, never twice at once, never keeping the
// process alive; a failed run is logged and counted and the next one runs as planned. stop()
// waits for the runs in flight, then runs the jobs that must finish at close (the usage flush),
// so that nothing a job holds is lost on a graceful stop. Lint forbids setInterval outside this
// folder (eslint.config.js local/no-repeating-timer).
import { SYSTEM_CONTEXT, withActor } from '../shared/actor-context.ts'

export interface Job {
  /** A metric label and a log field: short, fixed, kebab-case. */
  readonly name: string
  /** Milliseconds from one run's start to the next; 0: never on a timer (only at start or stop, if asked). */
  readonly everyMs: number
  /** One run. A run still going when the next is due makes the runner skip that one. */
  readonly run: () => Promise<unknown>
  /** Runs once as the runner starts, and start() waits for it: the first request finds its work done. */
  readonly atStart?: boolean
  /**
   * With atStart: a failed run at start fails the start (start() rejects with its error, the app
   * does not become ready) instead of a warning, for work the app must not serve without.
   */
  readonly failStartOnError?: boolean
  /** Runs once more as the runner stops, after the run in flight: what the job holds is not lost. */
  readonly atStop?: boolean
  /** The log line of a failed run (what happens next); `<name> failed` when absent. */
  readonly failure?: string
}

/** A repeating timer's handle: the runner unrefs it, so no job keeps the process alive. */
export interface JobTimer { unref (): unknown }

/** Node's setInterval and clearInterval, or a test's. */
export interface JobTimers {
  setInterval (fn: () => void, ms: number): JobTimer
  clearInterval (timer: JobTimer): void
}

/** Node's timers, looked up at each call (node:test's mock timers replace the globals). */
export const systemTimers: JobTimers = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (timer) => { clearInterval(timer as NodeJS.Timeout) }
}

/** Where a run's outcome goes: ops/metrics.ts counts them (job_runs_total, job_failures_total). */
export interface JobEvents {
  /** Once per job as the runner is made: its counters start at 0. */
  onJobDeclared? (job: string): void
  onJobRun? (job: string, failed: boolean): void
}

export interface JobRunnerOptions {
  /** A pino logger (the app's): a failed run is a warning with the error and the job's name. */
  log: { warn (fields: { err: unknown; job: string }, message: string): void }
  events?: JobEvents
  timers?: JobTimers
}

export interface JobRunner {
  /**
   * Arms every job's timer and runs the atStart jobs, waiting for them; rejects, stopped again,
   * when one that fails the start on error failed. A second call while started does nothing.
   */
  start (): Promise<void>
  /** Disarms the timers, waits for the runs in flight, then runs the atStop jobs. Idempotent; start() may follow. */
  stop (): Promise<void>
}

/** How a run ended: null when it succeeded. */
type RunFailure = { readonly error: unknown } | null

interface Slot { readonly job: Job; timer: JobTimer | null; inFlight: Promise<RunFailure> | null }

export function createJobRunner (jobs: readonly Job[], options: JobRunnerOptions): JobRunner {
  const timers = options.timers ?? systemTimers
  const names = new Set<string>()
  for (const job of jobs) {
    if (names.has(job.name)) throw new Error(`two background jobs are named ${job.name}`)
    names.add(job.name)
    options.events?.onJobDeclared?.(job.name)
  }
  const slots: Slot[] = jobs.map((job) => ({ job, timer: null, inFlight: null }))
  let started = false
  /** The stop in progress, if any: a start waits for it. */
  let stopping: Promise<void> | null = null

  /** One run of the slot's job; its failure is reported here and resolved, never rejected. */
  function run (slot: Slot): Promise<RunFailure> {
    const { job } = slot
    const done = (async (): Promise<RunFailure> => {
      try {
        // A job's changes are the system's in the audit log, even when a request's turn started it.
        await withActor(SYSTEM_CONTEXT, () => job.run())
        options.events?.onJobRun?.(job.name, false)
        return null
      } catch (error) {
        options.events?.onJobRun?.(job.name, true)
        options.log.warn({ err: error, job: job.name }, job.failure ?? `${job.name} failed`)
        return { error }
      }
    })()
    slot.inFlight = done
    void done.then(() => { if (slot.inFlight === done) slot.inFlight = null })
    return done
  }

  const runner: JobRunner = {
    async start () {
      if (started) return
      started = true
      // Armed at once when no stop is in progress: a test's mock timers may tick right after.
      if (stopping !== null) await stopping
      if (!started) return
      for (const slot of slots) {
        if (slot.job.everyMs <= 0) continue
        // A run still in flight when the next is due is skipped, not queued: runs never overlap,
        // and a slow database is not handed a backlog.
        const timer = timers.setInterval(() => { if (slot.inFlight === null) void run(slot) }, slot.job.everyMs)
        timer.unref()
        slot.timer = timer
      }
      const atStart = slots.filter((slot) => slot.job.atStart === true)
      const failures = await Promise.all(atStart.map((slot) => slot.inFlight ?? run(slot)))
      const fatal = failures.find((failure, i) => failure !== null && atStart[i]!.job.failStartOnError === true)
      if (fatal !== undefined && fatal !== null) {
        // Nothing keeps running after a failed start: the timers armed above are disarmed.
        await runner.stop()
        throw fatal.error
      }
    },
    stop () {
      if (!started) return stopping ?? Promise.resolve()
      started = false
      const stop = (async () => {
        for (const slot of slots) {
          if (slot.timer !== null) timers.clearInterval(slot.timer)
          slot.timer = null
        }
        await Promise.all(slots.map((slot) => slot.inFlight))
        await Promise.all(slots.filter((slot) => slot.job.atStop === true).map(run))
      })()
      stopping = stop
      void stop.then(() => { if (stopping === stop) stopping = null })
      return stop
    }
  }
  return runner
}
