// events.listen(): the feed followed the way a consumer runs it for hours. It starts now (or at a
// cursor, or with the events kept since an instant), hands each event to the handler one at a
// time in feed order, and outlives what a long run meets: a server restart or a network cut
// (backoff), a rate limit or a ban (its Retry-After). It keeps its cursor through all of them, so
// it never hands the same event twice in a run: the feed's cursor never moves back (docs/api.md,
// "Events"). `petstore listen` (the repository's CLI) is this loop with a handler that forwards
// each event to a local URL, signed as a webhook delivery.
import { PetstoreError } from './errors.ts'
import type { components } from './openapi.ts'

type Event = components['schemas']['Event']

export interface EventListenOptions {
  /** Only these types: names and families (`order.*`), comma-separated, as the feed's `type` takes them. */
  type?: string
  /**
   * Start after this cursor (`onCursor`'s, or the `cursor` an earlier listen resolved with)
   * instead of now.
   */
  cursor?: string
  /**
   * Hand only the events that happened at or after this instant (ISO 8601 or a Date). Without
   * `cursor`, the feed is then read from its oldest kept event (30 days by default), one request a
   * page, so that the events since then come first.
   */
  since?: string | Date
  /** Page size, 1 to 100 (default 100: the fewest requests to catch up). */
  limit?: number
  /**
   * The wait after an empty page, in ms (default 2000). Every read is a request charged to the
   * key: at 2 s, 30 a minute, half of a free key's minute quota.
   */
  pollMs?: number
  /** Stops the listening: the promise resolves with the cursor reached. */
  signal?: AbortSignal
  /**
   * Called after each page whose events were all handled, with the cursor after it: keep it to
   * resume from there (`cursor`) in a later run.
   */
  onCursor?: (cursor: string) => void
  /**
   * Called once, when the listening has caught up: the first time it reaches the end of the feed
   * (from now on, only new events come). What it throws is ignored.
   */
  onReady?: () => void
  /** Called when a read fails and is tried again later. What it throws is ignored. */
  onRetry?: (retry: ListenRetry) => void
}

export interface ListenRetry {
  /**
   * What failed: a network error, a 5xx, a 429 whose wait is longer than the client's maxWaitMs,
   * or a ban (`api_key_banned`).
   */
  error: unknown
  /** The wait before the next read, in ms: the Retry-After when the server sent one, else backoff. */
  waitMs: number
  /** Failures in a row so far, 1 for the first. */
  failures: number
}

export interface ListenResult {
  /** The cursor reached (null when no page was read and none was given): resume from it. */
  cursor: string | null
}

/** What listen needs of the client: one page of the feed, and the client's clock and jitter. */
export interface FeedReader {
  /** The URL of the feed's first page for this query. */
  firstPage (query: { type?: string; limit: number; cursor?: string }): string
  /** One page: its events, the cursor after them and the URL of the next page. */
  page (url: string): Promise<{ events: Event[]; cursor: string; next: string }>
  /** Resolves after `ms`, or as soon as `signal` aborts. */
  sleep (ms: number, signal: AbortSignal | undefined): Promise<void>
  /** A number in [0, 1), for the jitter of backoff. */
  random (): number
}

const DEFAULT_POLL_MS = 2000
const DEFAULT_LIMIT = 100
/**
 * Backoff of failed reads: from 1 s, doubling, at most 30 s, each wait between half and all of
 * it (jitter, so that the consumers a restart cut off do not all come back at the same instant).
 * A server restart of a few seconds is caught within a second or two of its end.
 */
const RETRY_BASE_MS = 1000
const RETRY_CAP_MS = 30_000

/** Follows the feed until `signal` aborts (resolving) or an answer that retrying cannot change (rejecting). */
export async function listenToFeed (
  reader: FeedReader,
  handler: (event: Event) => unknown,
  options: EventListenOptions = {}
): Promise<ListenResult> {
  const { signal, pollMs = DEFAULT_POLL_MS, limit = DEFAULT_LIMIT } = options
  const since = options.since === undefined ? null : instant(options.since)
  let cursor = options.cursor ?? null
  // Started now: read to the end of the feed handing nothing, then hand what comes after.
  let skipping = options.cursor === undefined && since === null
  let url = reader.firstPage({
    ...(options.type !== undefined && { type: options.type }),
    limit,
    ...(options.cursor !== undefined && { cursor: options.cursor })
  })
  let failures = 0
  let caughtUp = false
  // A function, not a narrowed property: the handler and the callbacks abort while the loop runs.
  const stopped = (): boolean => signal?.aborted === true
  while (!stopped()) {
    let page: Awaited<ReturnType<FeedReader['page']>> | undefined
    try {
      page = await untilAborted(reader.page(url), signal)
    } catch (error) {
      failures++
      const waitMs = retryWait(error, failures, reader.random)
      const retry = { error, waitMs, failures }
      call(options.onRetry, retry)
      await reader.sleep(waitMs, signal)
      continue
    }
    if (page === undefined) break
    failures = 0
    if (!skipping) {
      for (const event of page.events) {
        // Stopped within a page: the rest of it is not handed, and the cursor stays before it.
        if (stopped()) return { cursor }
        if (since !== null && Date.parse(event.createdAt) < since) continue
        await handler(event)
      }
    }
    url = page.next
    cursor = page.cursor
    call(options.onCursor, cursor)
    if (page.events.length === 0) {
      if (!caughtUp) call(options.onReady, undefined)
      caughtUp = true
      skipping = false
      await reader.sleep(pollMs, signal)
    }
  }
  return { cursor }
}

/**
 * How long to wait before reading again after `error`, or the error itself when waiting cannot
 * help: a 4xx other than 429 (a revoked key, a scope missing, a bad filter or cursor) stops
 * listening.
 */
function retryWait (error: unknown, failures: number, random: () => number): number {
  if (error instanceof PetstoreError) {
    if (error.status < 500 && error.status !== 429) throw error
    // A rate limit (or a ban) says how long; coming back earlier only moves towards a ban.
    if (error.retryAfter !== null) return error.retryAfter * 1000 + Math.floor(random() * 1000)
  }
  const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** (failures - 1))
  return Math.floor(ceiling / 2 + random() * ceiling / 2)
}

function instant (value: string | Date): number {
  const ms = value instanceof Date ? value.getTime() : Date.parse(value)
  if (Number.isNaN(ms)) throw new TypeError(`since is not a date: ${String(value)}`)
  return ms
}

/**
 * The promise's outcome, or undefined as soon as `signal` aborts; a rejection after that is
 * dropped (nobody waits for it any more).
 */
function untilAborted<T> (promise: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (signal === undefined) return promise
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = (): void => { resolve(undefined) }
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => { signal.removeEventListener('abort', onAbort); resolve(value) },
      (error: unknown) => { signal.removeEventListener('abort', onAbort); reject(error) }
    )
  })
}

/**
 * A caller's notification: what it throws, or the promise it rejects, cannot stop the listening
 * (as the client's onRateLimit and onDeprecation).
 */
function call<T> (callback: ((value: T) => unknown) | undefined, value: T): void {
  if (callback === undefined) return
  try {
    const result = callback(value)
    if (typeof (result as PromiseLike<unknown> | null | undefined)?.then === 'function') Promise.resolve(result).catch(() => {})
  } catch {
    // ignored, as documented on the options
  }
}
