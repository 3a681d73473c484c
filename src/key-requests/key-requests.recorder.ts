// The request log's recorder: every finished request made with a valid key, or with a key of ours
// refused (revoked, expired, rotated past its grace period: in that key's own log), is handed here
// by the pipeline (http/request-steps.ts), kept in memory, and written by the flush (the request-log
// flush job, every REQUEST_LOG_FLUSH_MS, at the app's close, and before a read of the log) in ONE
// statement per batch, never a write per request, as usage is (access/usage.ts).
//
// Bounded, and cheap under a flood:
// - the buffer holds at most PENDING_MAX ordinary requests and PENDING_MAX refusals; past that,
//   the oldest of its kind is dropped and counted (request_log_dropped_total), unless the key has
//   KEEP_LAST newer ones waiting (the store would not keep it anyway: nothing is lost);
// - a flush writes at most KEEP_LAST requests per key (the newest) and REFUSALS_MAX refusals per
//   key: a key making 20,000 requests a second writes 1,000 rows a flush, not 20,000;
// - the prune job (jobs/key-requests-prune.ts) deletes what the bound no longer keeps, for the
//   keys this recorder wrote (`takeWritten`) and those holding refusals past REFUSAL_DAYS.
//
// What may be lost: a graceful stop flushes; a crash loses at most one interval; a flush the
// database refuses is kept and tried again with the next one, once.
import type { RefusedKey } from '../access/key-cache.ts'
import type { Role } from '../accounts/plans.ts'
import { missingScope, type Scope, type ScopeNeed } from '../accounts/scopes.ts'
import type { Decision } from '../ratelimit/limiter.ts'
import { uuidBytes, uuidText } from '../shared/uuid.ts'
import { KEEP_LAST, REFUSALS_MAX, type Refusal } from './key-requests.schema.ts'
import type { KeyRequestRecord, KeyRequestStore } from './key-requests.store.ts'

/** How often the recorder is flushed by its job: a request is in the log within this (tests flush on read). */
export const REQUEST_LOG_FLUSH_MS = 1000
/** Requests (and, apart, refusals) the buffer holds between flushes. */
export const PENDING_MAX = 10_000
/**
 * Rows a flush hands the store at once, each part committed before the next is handed over: the
 * newest 1,000 of a flooding key in one SQLite transaction held the event loop about 2 ms every
 * second, a tail the reads' p99 showed (docs/performance.md, "Stalls and memory").
 */
export const APPEND_ROWS = 200

/** What the pipeline knows of a finished request made with a valid key, or with a refused key of ours. */
export interface RequestFacts {
  keyId: number
  at: number
  method: string
  route: string
  operationId: string | null
  query: string | null
  status: number
  code: string | null
  /** The error's message (secrets redacted), or null. */
  message: string | null
  requestId: string
  latencyMs: number
  via: 'mcp' | 'portal' | null
  /** The limiter's decision (request.rateLimit): the window or ban of a 429. */
  decision: Decision | null
  /** The operation's role and scope (route config): what a 403 needed. */
  role: Role | undefined
  scope: ScopeNeed | undefined
  /** The key's role and scopes: which of the operation's scopes it lacked (null for a refused key). */
  keyRole: Role | null
  keyScopes: ReadonlySet<Scope> | null
  /**
   * The key, when it was refused itself (revoked, expired, rotated past its grace period): then
   * `keyId` is its id, and the refusal is `key` whatever the answer (a 401, or the client
   * address's 429). Absent or null for a valid key.
   */
  refusedKey?: RefusedKey | null | undefined
}

/** The refusal of a key that was refused itself, in words (its id and state: never the key). */
export function keyRefusal (key: RefusedKey): Refusal {
  const since = new Date(key.since).toISOString()
  const successor = key.replacedBy === null ? '' : `; key ${key.replacedBy} replaced it: send that key instead`
  const message = key.state === 'revoked'
    ? `key ${key.keyId} was revoked at ${since}: every request made with it is refused${successor}`
    : key.state === 'rotated'
      ? `key ${key.keyId} was rotated and its grace period ended at ${since}: it is refused from then on${successor}`
      : `key ${key.keyId} expired at ${since}: every request made with it is refused; ask an admin for a new key`
  return { rule: 'key', message, state: key.state, since, replacedBy: key.replacedBy }
}

export interface RequestRecorder {
  /** One finished request. Memory only; never awaits, never throws. */
  record (facts: RequestFacts): void
  /**
   * One finished request that no rule refused (not a 403 or 429, its key not refused itself):
   * what `record` keeps of it, passed as values so that the pipeline's common case builds no
   * object (the recorder stores them in columns: no object per request outlives it).
   */
  add (
    keyId: number, at: number, method: string, route: string, operationId: string | null, query: string | null,
    status: number, code: string | null, requestId: string, latencyMs: number, via: 'mcp' | 'portal' | null
  ): void
  /** Writes what is pending, in parts of APPEND_ROWS, oldest first; flushes never overlap. */
  flush (): Promise<void>
  /** The keys written since the last call (the prune job bounds them), emptied. */
  takeWritten (): number[]
  /** Requests dropped from a full buffer that the log would have kept (request_log_dropped_total). */
  dropped (): number
}

/** Which rule refused the request, from what the access step set and the answer's code; null when none did. */
export function refusalOf (facts: RequestFacts): Refusal | null {
  const { code, decision } = facts
  const message = facts.message ?? ''
  switch (code) {
    case 'rate_limited': {
      if (decision === null) return null
      // A refused request charges neither window; the used-up one has nothing left. When both
      // are, the day decides (it resets last: ratelimit/limiter.ts, decision 4).
      const day = decision.day.remaining === 0
      const window = day ? decision.day : decision.minute
      return {
        rule: day ? 'day_window' : 'minute_window',
        message,
        limit: window.limit,
        resetAt: new Date(window.resetAt).toISOString()
      }
    }
    case 'api_key_banned': {
      const ban = decision?.ban
      const until = ban?.until ?? facts.at + (decision?.retryAfterSeconds ?? 0) * 1000
      return { rule: 'ban', message, until: new Date(until).toISOString(), reason: ban?.reason ?? 'repeated requests while told to wait' }
    }
    case 'forbidden':
      return facts.role === undefined ? null : { rule: 'role', message, needed: facts.role }
    case 'insufficient_scope': {
      if (facts.keyRole === null) return null
      const needed = missingScope(facts.keyRole, facts.keyScopes, facts.scope)
      return needed === null ? null : { rule: 'scope', message, needed }
    }
    // The portal's own check of a valid key's request (access/access.service.ts portalThenCharge):
    // a 403 like the others, so the common path pays nothing for it.
    case 'csrf_token_invalid':
      return { rule: 'portal', message, code }
    default:
      return null
  }
}

/**
 * The ordinary requests waiting for a flush, in columns of fixed capacity (a queue: pushing into
 * a full one overwrites its oldest). Why not an object each: under a flood a request waits up to
 * a flush interval, long enough for the young generation's collections (--max-semi-space-size=4)
 * to move it to the old one; an object per request then became old-space garbage, collected by
 * the costly mark-compact (docs/performance.md, "The request log"). Numbers sit in typed arrays;
 * the strings are the route's own (method, template, operationId); the request's id, when it is
 * a UUID in lower case (every id we make: http/request-log.ts), as its 16 bytes, since its
 * string was the last thing of a request to outlive it (about 60 bytes of old space a request);
 * another id (a caller's own Request-Id) as its string.
 */
class Columns {
  readonly capacity: number
  readonly keyId: Float64Array
  readonly at: Float64Array
  readonly latencyMs: Float64Array
  readonly status: Uint16Array
  readonly method: string[]
  readonly route: string[]
  /** A caller's own request id; null when the id is in `idBytes`. */
  readonly requestId: Array<string | null>
  /** 16 bytes a slot: the request's id when it is a lower-case UUID. */
  readonly idBytes: Uint8Array
  readonly operationId: Array<string | null>
  readonly query: Array<string | null>
  readonly code: Array<string | null>
  readonly via: Array<'mcp' | 'portal' | null>
  head = 0
  size = 0

  constructor (capacity: number) {
    this.capacity = capacity
    this.keyId = new Float64Array(capacity)
    this.at = new Float64Array(capacity)
    this.latencyMs = new Float64Array(capacity)
    this.status = new Uint16Array(capacity)
    this.method = new Array<string>(capacity).fill('')
    this.route = new Array<string>(capacity).fill('')
    this.requestId = new Array<string | null>(capacity).fill(null)
    this.idBytes = new Uint8Array(capacity * 16)
    this.operationId = new Array<string | null>(capacity).fill(null)
    this.query = new Array<string | null>(capacity).fill(null)
    this.code = new Array<string | null>(capacity).fill(null)
    this.via = new Array<'mcp' | 'portal' | null>(capacity).fill(null)
  }

  /** The slot the next request goes in, and the key of the oldest it overwrites (-1: none). */
  claim (): { slot: number; overwritten: number } {
    if (this.size < this.capacity) return { slot: (this.head + this.size++) % this.capacity, overwritten: -1 }
    const slot = this.head
    this.head = (this.head + 1) % this.capacity
    return { slot, overwritten: this.keyId[slot]! }
  }

  /**
   * The newest `max` per key (what the store keeps of a batch at most, so a flood writes no row
   * the prune would delete at once), as records, oldest first; the columns are left empty.
   */
  take (max: number): KeyRequestRecord[] {
    const { capacity, size, head } = this
    const seen = new Map<number, number>()
    const keep = new Uint8Array(size)
    let kept = 0
    for (let i = size - 1; i >= 0; i--) {
      const keyId = this.keyId[(head + i) % capacity]!
      const n = (seen.get(keyId) ?? 0) + 1
      seen.set(keyId, n)
      if (n <= max) { keep[i] = 1; kept++ }
    }
    const out = new Array<KeyRequestRecord>(kept)
    let o = 0
    for (let i = 0; i < size; i++) {
      const at = (head + i) % capacity
      if (keep[i] === 1) {
        out[o++] = {
          keyId: this.keyId[at]!,
          at: this.at[at]!,
          method: this.method[at]!,
          route: this.route[at]!,
          operationId: this.operationId[at]!,
          query: this.query[at]!,
          status: this.status[at]!,
          code: this.code[at]!,
          requestId: this.requestId[at] ?? uuidText(this.idBytes, at * 16),
          latencyMs: this.latencyMs[at]!,
          via: this.via[at]!,
          refusal: null
        }
      }
      // Let go of the request's own strings (its id, its query) now, not when the slot is reused.
      this.requestId[at] = null
      this.query[at] = null
    }
    this.head = 0
    this.size = 0
    return out
  }
}

/** A queue of fixed capacity: pushing into a full one drops its oldest (returned). */
class Ring {
  readonly #items: Array<KeyRequestRecord | undefined>
  #head = 0
  size = 0

  constructor (capacity: number) {
    this.#items = new Array<KeyRequestRecord | undefined>(capacity)
  }

  push (item: KeyRequestRecord): KeyRequestRecord | undefined {
    const capacity = this.#items.length
    if (this.size < capacity) {
      this.#items[(this.#head + this.size++) % capacity] = item
      return undefined
    }
    const oldest = this.#items[this.#head]
    this.#items[this.#head] = item
    this.#head = (this.#head + 1) % capacity
    return oldest
  }

  /** Everything, oldest first; the ring is left empty. */
  take (): KeyRequestRecord[] {
    const capacity = this.#items.length
    const out = new Array<KeyRequestRecord>(this.size)
    for (let i = 0; i < this.size; i++) {
      const at = (this.#head + i) % capacity
      out[i] = this.#items[at]!
      this.#items[at] = undefined
    }
    this.#head = 0
    this.size = 0
    return out
  }
}

/**
 * The newest `max` per key of `records` (oldest first), in their order: what the store keeps of
 * a batch at most, so a flood writes no row the prune would delete at once.
 */
function newestPerKey (records: KeyRequestRecord[], max: number): KeyRequestRecord[] {
  const seen = new Map<number, number>()
  let cut = false
  const keep = new Array<boolean>(records.length)
  for (let i = records.length - 1; i >= 0; i--) {
    const keyId = records[i]!.keyId
    const n = (seen.get(keyId) ?? 0) + 1
    seen.set(keyId, n)
    keep[i] = n <= max
    if (!keep[i]) cut = true
  }
  return cut ? records.filter((_, i) => keep[i]) : records
}

/** Two lists, each oldest first, into one oldest first (by `at`; ordinary first on a tie). */
function merge (a: KeyRequestRecord[], b: KeyRequestRecord[]): KeyRequestRecord[] {
  if (b.length === 0) return a
  if (a.length === 0) return b
  const out: KeyRequestRecord[] = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) out.push(a[i]!.at <= b[j]!.at ? a[i++]! : b[j++]!)
  while (i < a.length) out.push(a[i++]!)
  while (j < b.length) out.push(b[j++]!)
  return out
}

export function createRequestRecorder (store: KeyRequestStore, options: { pendingMax?: number } = {}): RequestRecorder {
  const pendingMax = options.pendingMax ?? PENDING_MAX
  const ordinary = new Columns(pendingMax)
  const refusals = new Ring(pendingMax)
  // Pending requests per key: a dropped one is a loss only when the key has fewer than KEEP_LAST newer.
  const pendingOf = new Map<number, number>()
  let dropped = 0
  let written = new Set<number>()
  // A batch the database refused, tried again with the next flush (once).
  let retry: KeyRequestRecord[] = []
  let queue: Promise<void> = Promise.resolve()

  /** A pending request of `keyId` was overwritten: a loss only when the key has fewer than `keep` newer. */
  function drop (keyId: number, keep: number): void {
    const left = (pendingOf.get(keyId) ?? 1) - 1
    pendingOf.set(keyId, left)
    if (left < keep) dropped++
  }

  async function write (): Promise<void> {
    if (ordinary.size === 0 && refusals.size === 0 && retry.length === 0) return
    const batch = merge(
      retry,
      merge(ordinary.take(KEEP_LAST), newestPerKey(refusals.take(), REFUSALS_MAX))
    )
    retry = []
    pendingOf.clear()
    if (batch.length === 0) return
    for (let from = 0; from < batch.length; from += APPEND_ROWS) {
      const part = batch.slice(from, from + APPEND_ROWS)
      try {
        await store.append(part)
      } catch (error) {
        // What was not written is kept for the next flush (the parts before are in the log: none
        // twice), bounded: a database down for long loses the oldest of the log, never memory or the API.
        const rest = batch.slice(from)
        retry = rest.length > 2 * pendingMax ? rest.slice(-2 * pendingMax) : rest
        throw error
      }
      for (const record of part) written.add(record.keyId)
    }
  }

  function add (
    keyId: number, at: number, method: string, route: string, operationId: string | null, query: string | null,
    status: number, code: string | null, requestId: string, latencyMs: number, via: 'mcp' | 'portal' | null
  ): void {
    pendingOf.set(keyId, (pendingOf.get(keyId) ?? 0) + 1)
    const { slot, overwritten } = ordinary.claim()
    if (overwritten !== -1) drop(overwritten, KEEP_LAST)
    ordinary.keyId[slot] = keyId
    ordinary.at[slot] = at
    ordinary.method[slot] = method
    ordinary.route[slot] = route
    ordinary.operationId[slot] = operationId
    ordinary.query[slot] = query
    ordinary.status[slot] = status
    ordinary.code[slot] = code
    ordinary.requestId[slot] = uuidBytes(requestId, ordinary.idBytes, slot * 16) ? null : requestId
    ordinary.latencyMs[slot] = latencyMs
    ordinary.via[slot] = via
  }

  return {
    add,
    record (facts) {
      const refusedKey = facts.refusedKey
      const refusal = refusedKey !== undefined && refusedKey !== null
        ? keyRefusal(refusedKey)
        : facts.status === 403 || facts.status === 429 ? refusalOf(facts) : null
      if (refusal === null) {
        add(facts.keyId, facts.at, facts.method, facts.route, facts.operationId, facts.query, facts.status, facts.code,
          facts.requestId, facts.latencyMs, facts.via)
        return
      }
      const record: KeyRequestRecord = {
        keyId: facts.keyId,
        at: facts.at,
        method: facts.method,
        route: facts.route,
        operationId: facts.operationId,
        query: facts.query,
        status: facts.status,
        code: facts.code,
        requestId: facts.requestId,
        latencyMs: facts.latencyMs,
        via: facts.via,
        refusal
      }
      pendingOf.set(facts.keyId, (pendingOf.get(facts.keyId) ?? 0) + 1)
      const oldest = refusals.push(record)
      if (oldest !== undefined) drop(oldest.keyId, REFUSALS_MAX)
    },
    flush () {
      const next = queue.then(write)
      queue = next.catch(() => {})
      return next
    },
    takeWritten () {
      const keys = [...written]
      written = new Set()
      return keys
    },
    dropped: () => dropped
  }
}
