// The limiter alone: consume() calls per second, without HTTP around it. What one Redis round
// trip costs is easier to see here than in the HTTP rows, where it overlaps across connections.
import { performance } from 'node:perf_hooks'
import type { Quota, RateLimiter } from '../src/ratelimit/limiter.ts'
import type { MicroResult } from './report.ts'

const HUGE_QUOTA: Quota = { perMinute: 1_000_000_000, perDay: 1_000_000_000 }

export async function microBenchmark (
  backend: MicroResult['backend'],
  limiter: RateLimiter,
  inFlight: number,
  seconds: number
): Promise<MicroResult> {
  const subjects = Array.from({ length: inFlight }, (_, i) => `bench:${i}`)
  for (const subject of subjects) await limiter.consume(subject, HUGE_QUOTA) // connection, script load
  const start = performance.now()
  const deadline = start + seconds * 1000
  let calls = 0
  let refused = 0
  await Promise.all(subjects.map(async (subject) => {
    while (performance.now() < deadline) {
      for (let i = 0; i < 100; i++) if (!(await limiter.consume(subject, HUGE_QUOTA)).allowed) refused++
      calls += 100
    }
  }))
  const elapsedMs = performance.now() - start
  if (refused > 0) return { backend, inFlight, status: 'failed', reason: `${refused} calls were refused`, callsPerSec: null, meanUs: null }
  return {
    backend,
    inFlight,
    status: 'ok',
    callsPerSec: calls / (elapsedMs / 1000),
    meanUs: (elapsedMs * 1000 * inFlight) / calls
  }
}
