// The request log's background work (key-requests/): the flush that writes what the recorder
// holds (every REQUEST_LOG_FLUSH_MS, and once more at stop, before the stores close), and the
// prune that holds each key to its bound: its newest KEEP_LAST requests, and besides them its
// refusals of the last REFUSAL_DAYS days, at most REFUSALS_MAX. The prune visits the keys this
// instance wrote since its last run (every PRUNE_WRITTEN_MS), and, every PRUNE_EVERY_MS, the keys
// still holding a refusal past REFUSAL_DAYS (a key that stopped calling keeps nothing older).
import { KEEP_LAST, REFUSAL_DAYS, REFUSALS_MAX } from '../key-requests/key-requests.schema.ts'
import { REQUEST_LOG_FLUSH_MS, type RequestRecorder } from '../key-requests/key-requests.recorder.ts'
import type { KeyRequestBound, KeyRequestStore } from '../key-requests/key-requests.store.ts'
import { DAY_MS } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import { PRUNE_EVERY_MS } from './event-prune.ts'
import type { Job } from './runner.ts'

/** How often the keys just written are held to their bound: a flood keeps at most this long's rows beyond it. */
export const PRUNE_WRITTEN_MS = 10_000
/** Keys with stale refusals visited per run; the rest wait for the next run. */
export const STALE_KEYS_PER_RUN = 1000

export interface KeyRequestJobDeps {
  /** Null when REQUEST_LOG=off: nothing to flush, and nothing new to prune. */
  requestLog: RequestRecorder | null
  keyRequests: KeyRequestStore
  clock: Clock
  /** How often the recorder is flushed; 0: at stop and on read only (tests). */
  requestLogFlushMs?: number | undefined
}

export function keyRequestBound (now: number): KeyRequestBound {
  return { last: KEEP_LAST, refusalsSince: now - REFUSAL_DAYS * DAY_MS, refusalsMax: REFUSALS_MAX }
}

/** Holds each key of `keyIds` to its bound; returns how many rows were deleted. */
export async function pruneKeys (store: KeyRequestStore, keyIds: Iterable<number>, now: number): Promise<number> {
  const bound = keyRequestBound(now)
  let deleted = 0
  for (const keyId of keyIds) deleted += await store.prune(keyId, bound)
  return deleted
}

export function keyRequestJobs (deps: KeyRequestJobDeps): Job[] {
  const { requestLog, keyRequests, clock } = deps
  const jobs: Job[] = [{
    name: 'request-log-stale-prune',
    everyMs: PRUNE_EVERY_MS,
    run: async () => {
      const now = clock.now()
      const keys = await keyRequests.keysWithRefusalsBefore(keyRequestBound(now).refusalsSince, STALE_KEYS_PER_RUN)
      return pruneKeys(keyRequests, keys, now)
    },
    failure: 'pruning the request log\'s old refusals failed; the next run retries'
  }]
  if (requestLog === null) return jobs
  return [
    {
      name: 'request-log-flush',
      everyMs: deps.requestLogFlushMs ?? REQUEST_LOG_FLUSH_MS,
      run: () => requestLog.flush(),
      atStop: true,
      failure: 'writing the request log failed; its batch is kept for the next flush'
    },
    {
      name: 'request-log-prune',
      everyMs: PRUNE_WRITTEN_MS,
      run: () => pruneKeys(keyRequests, requestLog.takeWritten(), clock.now()),
      failure: 'pruning the request log failed; the next run retries'
    },
    ...jobs
  ]
}
