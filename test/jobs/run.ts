// One job on the jobs runner (src/jobs/runner.ts) as the app runs it, on Node's timers (so
// node:test's mock timers drive it), its failures collected instead of logged.
import { createJobRunner, type Job, type JobRunner } from '../../src/jobs/runner.ts'

export function runJob (job: Job, failures: unknown[] = []): JobRunner {
  return createJobRunner([job], { log: { warn: ({ err }) => { failures.push(err) } } })
}
