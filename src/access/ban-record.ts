// Recording in the database the bans the limiter starts. The ban is in force in the limiter
// already, and the 429 api_key_banned is answered whatever the database does: a record that
// fails is reported, kept, and retried at most every BAN_RETRY_MS (on the next charged request,
// or by retryPending()). A ban that is over by the time it is recorded is still recorded: its
// history makes the next ban escalate. A key's ban carries its key.banned event into the same
// transaction as its record (the store appends it), so the event comes with the record, late or
// not, and a retry after a lost answer appends no second one (recordBan is idempotent).
import type { KeyStore, NewBanRecord } from '../accounts/keys.store.ts'
import type { Clock } from '../shared/clock.ts'

/** A ban whose record in the database failed is tried again at most this often. */
export const BAN_RETRY_MS = 5000

/** With its `strike` (the limiter's level), which the key.banned event carries. */
export type NewBan = NewBanRecord

/** A ban started and is recorded. The subject is `key:ID` or the address, never a key. */
export type BanListener = (subject: string, keyId: number | null, until: number) => void
/** A ban is in force but its record failed (it is retried). */
export type BanFailureListener = (subject: string, until: number, error: unknown) => void

export interface BanRecorderOptions {
  keys: KeyStore
  clock: Clock
  onBan?: BanListener
  onBanNotRecorded?: BanFailureListener
  /** An observer above threw: its error, for the log. The request is answered all the same. */
  onObserverError?: (error: unknown) => void
}

export interface BanRecorder {
  /** Records a ban that just started; resolves to the failure to record it (kept for a retry), or undefined. */
  record (ban: NewBan): Promise<unknown>
  /** Starts a retry when bans are pending and the last attempt is BAN_RETRY_MS old. */
  retryIfDue (): void
  /** Records again the pending bans, oldest first; resolves to how many are still pending. */
  retryPending (): Promise<number>
}

/**
 * Observers must not turn an answer into an error: whether a ban is recorded at once or on a
 * retry, an observer that throws is reported to `onError` (the log), never to the request.
 */
function report (call: () => void, onError: ((error: unknown) => void) | undefined): void {
  try {
    call()
  } catch (error) {
    try {
      onError?.(error)
    } catch {
      // the logger itself failed: nothing more can be done without failing the request
    }
  }
}

export function createBanRecorder (options: BanRecorderOptions): BanRecorder {
  const { keys, clock } = options
  const observe = (call: () => void): void => { report(call, options.onObserverError) }
  // By subject and start.
  const pending = new Map<string, NewBan>()
  let nextRetryAt = 0
  let retrying: Promise<number> | null = null

  function retryPending (): Promise<number> {
    if (retrying !== null) return retrying
    nextRetryAt = clock.now() + BAN_RETRY_MS
    retrying = (async () => {
      for (const [id, record] of [...pending]) {
        try {
          await keys.recordBan(record)
        } catch {
          break // still out: the next retry starts here again
        }
        pending.delete(id)
        observe(() => options.onBan?.(record.subject, record.keyId, record.endsAt))
      }
      return pending.size
    })().finally(() => { retrying = null })
    return retrying
  }

  return {
    record (ban) {
      return keys.recordBan(ban).then(() => {
        observe(() => options.onBan?.(ban.subject, ban.keyId, ban.endsAt))
        return undefined
      }, (error: unknown) => {
        pending.set(`${ban.subject} ${ban.startedAt}`, ban)
        nextRetryAt = clock.now() + BAN_RETRY_MS
        observe(() => options.onBanNotRecorded?.(ban.subject, ban.endsAt, error))
        return error
      })
    },
    retryIfDue () {
      if (pending.size > 0 && clock.now() >= nextRetryAt) void retryPending()
    },
    retryPending
  }
}
