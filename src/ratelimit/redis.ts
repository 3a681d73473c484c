// Redis back end: counters and bans shared by every instance, checked and updated atomically by
// a Lua script (docs/product.md section 4). The calls made in one event-loop turn go together in
// one script call: one command and one round trip for all of them (see enqueue).
//
// Keys of one subject, all with the hash tag {subject} so that they share a cluster slot and one
// script may touch them all. A batch touches the keys of several subjects, so of several slots:
// fine on one Redis, refused (CROSSSLOT) by a Redis Cluster, where batches would have to be
// formed per slot (docs/scaling.md, "Past one Redis").
//   <prefix>{<subject>}:m:<minute index>  counter of that minute window (string)
//   <prefix>{<subject>}:d:<day index>     counter of that UTC day window (string)
//   <prefix>{<subject>}:s                 hash: pu/pn (wait period retry instant, requests
//                                         counted in it), bs/bu/bl (last ban start, until, level)
//   <prefix>bans-loaded                   set once the bans in force in the database are loaded
//                                         (needsBans): gone when Redis lost its state, and
//                                         with it the day counts (generation, restoreDay)
// Window counters carry the window index in their name, so a new window starts at 0 without a
// reset step, and the old key just expires.
//
// Expiry is PEXPIRE with a TTL computed from the caller's clock (target - now + margin), not
// PEXPIREAT: the clock is the caller's (decision 11 in limiter.ts), and an absolute instant from
// one clock read by another (Redis's) would expire keys early or late by their skew. The margin
// covers instances whose clocks lag. Window counters live until their window ends (a client
// address's day counter less, see shortDay); the state hash lives until its wait period ends and
// 24 h after its last ban ends (the escalation horizon).
import { createHash } from 'node:crypto'
import type { Redis, RedisOptions } from 'ioredis'
import {
  BAN_BASE_MS,
  BAN_ESCALATION_MS,
  BAN_MAX_LEVEL,
  BAN_MAX_MS,
  BAN_STRIKES,
  DAY_MS,
  MINUTE_MS,
  OUTCOMES,
  banLevelOf,
  buildDecision,
  checkQuota,
  dayResetAt,
  minuteResetAt
} from './limiter.ts'
import type { Decision, Quota, RateLimiter, RawDecision, RestoredBan } from './limiter.ts'

export interface RedisRateLimiterOptions {
  /** Owned by the caller, who also closes it; see redisClientOptions(). */
  redis: Redis
  /** Prepended to every key, e.g. 'petstore:rl:'. */
  prefix: string
  /** Epoch ms; injectable so tests never sleep and every instance uses the same arithmetic. */
  now?: () => number
  /**
   * Subjects whose day counter lives only as long as it can matter (see SHORT_DAY below): by
   * default the client addresses (`ip:`, `ip6:`), which anyone can multiply; keys keep theirs
   * until the day ends.
   */
  shortDay?: (subject: string) => boolean
}

// Memory per subject (docs in SECURITY.md). A client address that calls n times in a day holds a
// minute counter (until its minute ends, plus the margin) and a day counter that lives
// n * (1 day / perDay) after its last call, plus the margin (86.4 s per request at the free
// plan's 1,000 a day), instead of until the end of the UTC day: a one-off address costs its
// ~100 bytes a few minutes, not a day. The day quota still holds as a rate: a counter only
// expires after the subject stayed idle as long as its requests would take at the daily rate, so
// an address can make at most about twice its daily quota in one UTC day (a full day's quota in
// the second half after pausing through the first), and one that reaches its quota stays refused
// until the day ends (its counter then lives a whole day).
const defaultShortDay = (subject: string): boolean => subject.startsWith('ip:') || subject.startsWith('ip6:')

const KEY_MARGIN_MS = 60_000

/** What a script call does: a request's charge or look, or the ban sync's and lift's writes. */
export type RedisScriptOperation = 'consume' | 'peek' | 'unban' | 'restore' | 'day'

export interface RedisCallSpan {
  /** A command sent for the call: EVALSHA, or EVAL (the script's first call, or again after NOSCRIPT). */
  sent (command: 'EVALSHA' | 'EVAL'): void
  /** The script's outcome (consume and peek: an OUTCOMES name), or the error the call failed with. */
  end (outcome: string | undefined, error?: unknown): void
}

export interface RedisCallTracing {
  /** The span of one script call under the caller's trace, or undefined outside any trace. */
  start (operation: RedisScriptOperation, server: { address: string; port: number }): RedisCallSpan | undefined
}

/**
 * Tracing's seam (telemetry/sdk.ts sets `current` when tracing is on). It lives here, not in
 * telemetry/hooks.ts, because ratelimit/ is the foundation and imports nothing above it. Null while
 * tracing is off: a call then pays one property read and no allocation.
 */
export const redisTracing: { current: RedisCallTracing | null } = { current: null }

/**
 * Options for the ioredis client given to createRedisRateLimiter when it runs under
 * createFallbackRateLimiter: a dead or unreachable Redis must fail fast so the fallback answers
 * at once, instead of requests queueing behind a reconnect.
 * - enableOfflineQueue false: while disconnected, commands reject immediately instead of waiting
 *   in a queue for a reconnect that may never come.
 * - maxRetriesPerRequest 0: a command caught by a dropped connection rejects instead of being
 *   resent on the next connection, by which time the request has been answered by the fallback.
 * - commandTimeout: a Redis that accepts the connection but does not answer (overloaded, network
 *   black hole) costs at most this much, once per second (the fallback's probe interval).
 * - connectTimeout: same for a connect that hangs.
 * Reconnection itself keeps ioredis's default retryStrategy (backoff up to 2 s, forever), so the
 * client comes back by itself and the fallback's next probe finds it.
 * The return type names only these four: a whole RedisOptions, spread into `new Redis(url, …)`,
 * does not type-check under exactOptionalPropertyTypes (ioredis's option types disagree on
 * `replyMapping`).
 */
export function redisClientOptions (): Pick<RedisOptions, 'enableOfflineQueue' | 'maxRetriesPerRequest' | 'commandTimeout' | 'connectTimeout'> {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 250,
    connectTimeout: 1000
  }
}

// The same state machine as step() in memory.ts, branch for branch. Constants come from
// limiter.ts so the two cannot disagree on numbers. Lua numbers are doubles: epoch ms (13
// digits) are exact, and the reply's numbers become Redis integers.
//
// One call of the script runs the calls of one batch (see enqueue below), in their order: three
// KEYS per call, and one ARGV per call holding its seven arguments separated by spaces (now, then
// by op: perMinute perDay minuteReset dayReset for consume and peek, level 0 startedAt end for
// restore, count 0 0 dayReset for day, zeros for unban; then op, then shortDay '1' or '0'). Each
// call's step runs whole before the next, so each decision is as atomic as when it was a script
// call of its own. The reply is one string, a line per call: its six numbers, or '! ' and the
// error its step raised (WRONGTYPE on a damaged key, OOM). pcall keeps one call's error from
// aborting the batch after earlier calls' writes: the others get their answers, as when each was
// a command of its own. Arguments and reply are packed in strings because ioredis pays per
// argument and per reply element: measured here, a call's ten arguments took 2.5 µs to encode
// and its six reply integers 2.9 µs to decode; packed, 1.2 µs and 0.4 µs.
//
// Redis's own time is what the calls of every instance queue for (docs/scaling.md). Each
// redis.call costs about a microsecond here, a tonumber a third of one, so the script reads a key
// once per batch (counters, states: a busy client's calls fill a batch), asks EXISTS before the
// five-field HMGET (most subjects have no state hash), sets a counter's TTL only when its INCR
// creates it, and reads the window ends only where they are used. `node bench/limiter-cpu.ts`
// prints Redis's µs per decision: 20 before, 14 with 50 subjects in a batch, 8.5 with one
// (docs/performance.md, "The limiter").
const SCRIPT = `
local STRIKES = ${BAN_STRIKES}
local BASE = ${BAN_BASE_MS}
local MAX = ${BAN_MAX_MS}
local MAX_LEVEL = ${BAN_MAX_LEVEL}
local HISTORY = ${BAN_ESCALATION_MS}
local MARGIN = ${KEY_MARGIN_MS}
local DAY = ${DAY_MS}

-- What this script call has read or written, by key name: a subject's later calls in the same
-- batch read it here instead of from Redis (nothing else runs while the script does). Counters
-- hold the value Redis holds (0: no key); a state is the five fields of the hash (all 0: no
-- hash). An entry is updated with every write the script makes to its key, or dropped.
local counters = {}
local states = {}

local function counter(k)
  local v = counters[k]
  if v == nil then
    v = tonumber(redis.call('GET', k)) or 0
    counters[k] = v
  end
  return v
end

local function state(ks)
  local st = states[ks]
  if st == nil then
    st = { 0, 0, 0, 0, 0 }
    if redis.call('EXISTS', ks) == 1 then
      local f = redis.call('HMGET', ks, 'pu', 'pn', 'bs', 'bu', 'bl')
      for i = 1, 5 do st[i] = tonumber(f[i]) or 0 end
    end
    states[ks] = st
  end
  return st
end

local function step(km, kd, ks, now, a2, a3, a4, a5, op, short)
  now = tonumber(now)
  local st = state(ks)
  local pu, pn, bs, bu, bl = st[1], st[2], st[3], st[4], st[5]

  if op == 'unban' then
    states[ks] = nil
    redis.call('HDEL', ks, 'pu', 'pn')
    if bu > now then
      redis.call('HSET', ks, 'bu', now)
      redis.call('PEXPIRE', ks, HISTORY + MARGIN)
    end
    return 0, 0, 0, 0, 0, 0
  end

  if op == 'restore' then
    local rs = tonumber(a4)
    local ru = tonumber(a5)
    if ru > now and ru > bu then
      states[ks] = nil
      redis.call('HSET', ks, 'bs', rs, 'bu', ru, 'bl', tonumber(a2))
      redis.call('PEXPIRE', ks, ru + HISTORY - now + MARGIN)
    elseif ru <= now and bu <= now and rs > bs and ru + HISTORY > now then
      states[ks] = nil
      redis.call('HSET', ks, 'bs', rs, 'bu', ru, 'bl', tonumber(a2))
      local keep = ru + HISTORY - now + MARGIN
      if redis.call('PTTL', ks) < keep then redis.call('PEXPIRE', ks, keep) end
    end
    return 0, 0, 0, 0, 0, 0
  end

  if op == 'day' then
    local count = tonumber(a2)
    if count > counter(kd) then
      counters[kd] = nil
      redis.call('SET', kd, count, 'PX', tonumber(a5) - now + MARGIN)
    end
    return 0, 0, 0, 0, 0, 0
  end

  local perMinute = tonumber(a2)
  local perDay = tonumber(a3)
  -- The window ends (a4, a5) are read only where they are used: an allowed call into counters
  -- that exist needs neither.
  local charge = op == 'consume'
  local m = counter(km)
  local d = counter(kd)

  if bu > now then return 2, m, d, bs, bu, bl end

  local inPeriod = pu > now
  if inPeriod and pn >= STRIKES then
    local level = 1
    if bs > 0 and now - bs < HISTORY then level = math.min(bl + 1, MAX_LEVEL) end
    local untilAt = now + math.min(BASE * 2 ^ (level - 1), MAX)
    if not charge then return 4, m, d, now, untilAt, level end
    states[ks] = nil
    redis.call('HDEL', ks, 'pu', 'pn')
    redis.call('HSET', ks, 'bs', now, 'bu', untilAt, 'bl', level)
    redis.call('PEXPIRE', ks, untilAt + HISTORY - now + MARGIN)
    return 3, m, d, now, untilAt, level
  end

  if m < perMinute and d < perDay then
    if not charge then return 0, m, d, 0, 0, 0 end
    -- Each counter's TTL is set when the INCR makes it (its window's end is fixed), except a
    -- short-lived day counter's, which grows with every request (shortDay).
    m = redis.call('INCR', km)
    counters[km] = m
    if m == 1 then redis.call('PEXPIRE', km, tonumber(a4) - now + MARGIN) end
    d = redis.call('INCR', kd)
    counters[kd] = d
    if short == '1' and perDay > 0 then
      local dayTtl = tonumber(a5) - now
      local need = math.ceil(d * DAY / perDay)
      if need < dayTtl then dayTtl = need end
      redis.call('PEXPIRE', kd, dayTtl + MARGIN)
    elseif d == 1 then
      redis.call('PEXPIRE', kd, tonumber(a5) - now + MARGIN)
    end
    if inPeriod then
      states[ks] = nil
      redis.call('HINCRBY', ks, 'pn', 1)
    end
    return 0, m, d, 0, 0, 0
  end

  if charge then
    states[ks] = nil
    if inPeriod then
      redis.call('HINCRBY', ks, 'pn', 1)
    else
      local minuteReset = tonumber(a4)
      local dayReset = tonumber(a5)
      local retryAt = 0
      if m >= perMinute then retryAt = minuteReset end
      if d >= perDay and dayReset > retryAt then retryAt = dayReset end
      local wait = math.ceil((retryAt - now) / 1000)
      if wait < 1 then wait = 1 end
      pu = now + wait * 1000
      redis.call('HSET', ks, 'pu', pu, 'pn', 1)
      local keep = pu
      if bs > 0 and bu + HISTORY > keep then keep = bu + HISTORY end
      redis.call('PEXPIRE', ks, keep - now + MARGIN)
    end
  end
  return 1, m, d, 0, 0, 0
end

local out = {}
for i = 1, #ARGV do
  local k = 3 * (i - 1)
  local now, a2, a3, a4, a5, op, short = string.match(ARGV[i], '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
  local ok, code, m, d, bs, bu, bl = pcall(step, KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], now, a2, a3, a4, a5, op, short)
  if ok then
    out[i] = string.format('%d %d %d %d %d %d', code, m, d, bs, bu, bl)
  else
    if type(code) == 'table' then code = code.err end
    out[i] = '! ' .. (string.gsub(tostring(code), '\\n', ' '))
  end
end
return table.concat(out, '\\n')
`

const SCRIPT_SHA = createHash('sha1').update(SCRIPT).digest('hex')

// A brace inside the subject would move or empty the hash tag and scatter the subject's keys
// over several slots; percent-escaping '%', '{' and '}' keeps the name injective.
function hashTag (subject: string): string {
  if (!subject.includes('{') && !subject.includes('}') && !subject.includes('%')) return subject
  return subject.replaceAll('%', '%25').replaceAll('{', '%7B').replaceAll('}', '%7D')
}

// A call's line of the reply: exactly what string.format('%d %d %d %d %d %d') writes.
const REPLY_LINE = /^(-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+)$/

/**
 * One call's line of a batch's reply: its decision, or the error its step raised (the script
 * writes '! ' and the error's text instead of the six numbers).
 */
function toRaw (line: string): RawDecision {
  if (line.startsWith('! ')) throw new Error(line.slice(2))
  const fields = REPLY_LINE.exec(line)
  if (fields === null) throw new Error('rate limit script returned an unexpected reply')
  const code = Number(fields[1])
  const outcome = OUTCOMES[code]
  if (outcome === undefined) throw new Error(`rate limit script returned outcome ${code}`)
  return {
    outcome,
    minuteCount: Number(fields[2]),
    dayCount: Number(fields[3]),
    banStartedAt: Number(fields[4]),
    banUntil: Number(fields[5]),
    banLevel: Number(fields[6])
  }
}

/**
 * At most this many calls go in one script call: a batch holds Redis's one thread for its whole
 * run (some 15 µs a call on the busy development machine), so other clients wait at most about a
 * millisecond behind it. More calls in one turn go in several batches, written together.
 */
const MAX_BATCH = 64

/** A call waiting for its batch to be sent, or for the reply. */
interface Pending {
  /** consume and peek: the quota the decision is built with; null for the writes (unban, restore, day). */
  quota: Quota | null
  /** The caller's clock when the call was made: the instant its decision is built for. */
  t: number
  span: RedisCallSpan | undefined
  resolve: (decision: Decision | undefined) => void
  reject: (err: unknown) => void
}

export function createRedisRateLimiter (options: RedisRateLimiterOptions): RateLimiter {
  const { redis, prefix } = options
  const now = options.now ?? Date.now
  const shortDay = options.shortDay ?? defaultShortDay
  // The script is sent in full once (EVAL caches it on the server), then by its SHA. A server
  // that lost its script cache (restart, failover, SCRIPT FLUSH) answers NOSCRIPT, and that one
  // batch is retried with EVAL: still one command per batch in the steady state.
  let loaded = false
  // Moves when the sentinel is found gone (needsBans): the counters went with it.
  let generation = 0

  // The calls made in this event-loop turn, their KEYS and their ARGV, sent together by one
  // script call when the turn ends (setImmediate: after the poll phase, so the requests read from
  // every socket that was ready are in it). Before, each call was a command of its own: the
  // client's per-command work (its write to the socket above all, then the command's object,
  // timeout timer, encoding and reply) cost some 23 µs of CPU per request (docs/performance.md).
  // A lone call waits for no timer, only for the end of the turn it was made in.
  let pending: Pending[] = []
  let keys: string[] = []
  let argv: string[] = []
  let scheduled = false

  function enqueue (
    call: Pending,
    subject: string,
    a2: number,
    a3: number,
    a4: number,
    a5: number,
    op: string,
    short: string
  ): void {
    const base = `${prefix}{${hashTag(subject)}}:`
    keys.push(`${base}m:${Math.floor(call.t / MINUTE_MS)}`, `${base}d:${Math.floor(call.t / DAY_MS)}`, `${base}s`)
    argv.push(`${call.t} ${a2} ${a3} ${a4} ${a5} ${op} ${short}`)
    pending.push(call)
    if (pending.length === MAX_BATCH) dispatch()
    else if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }

  function flush (): void {
    scheduled = false
    if (pending.length > 0) dispatch()
  }

  function dispatch (): void {
    const calls = pending
    const args = keys.concat(argv)
    pending = []
    keys = []
    argv = []
    void send(calls, args)
  }

  async function send (calls: Pending[], args: string[]): Promise<void> {
    let reply: unknown
    try {
      reply = await evaluate(calls, args)
    } catch (err) {
      // Redis unreachable, timed out, or any error of the command: each call fails with it, as
      // its own command would have (the fallback limiter then answers each).
      for (const call of calls) fail(call, err)
      return
    }
    const lines = typeof reply === 'string' ? reply.split('\n') : []
    if (lines.length !== calls.length) {
      const err = new Error('rate limit script returned an unexpected reply')
      for (const call of calls) fail(call, err)
      return
    }
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]!
      let raw: RawDecision
      try {
        raw = toRaw(lines[i]!)
      } catch (err) {
        fail(call, err)
        continue
      }
      if (call.quota === null) {
        call.span?.end(undefined)
        call.resolve(undefined)
      } else {
        call.span?.end(raw.outcome)
        call.resolve(buildDecision(raw, call.quota, call.t))
      }
    }
  }

  function fail (call: Pending, err: unknown): void {
    call.span?.end(undefined, err)
    call.reject(err)
  }

  async function evaluate (calls: Pending[], args: string[]): Promise<unknown> {
    if (loaded) {
      for (const call of calls) call.span?.sent('EVALSHA')
      try {
        return await redis.evalsha(SCRIPT_SHA, calls.length * 3, args)
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err
      }
    }
    for (const call of calls) call.span?.sent('EVAL')
    const reply = await redis.eval(SCRIPT, calls.length * 3, args)
    loaded = true
    return reply
  }

  /** Queues one call for this turn's batch; with tracing on and a trace to join, in a span of its own. */
  function call (
    operation: RedisScriptOperation,
    subject: string,
    quota: Quota | null,
    t: number,
    a2: number,
    a3: number,
    a4: number,
    a5: number
  ): Promise<Decision | undefined> {
    const tracing = redisTracing.current
    // Started now, in the caller's context, so that the span is the request's child. The server
    // it names: the client's own options (no password, no URL).
    const span = tracing === null
      ? undefined
      : tracing.start(operation, { address: redis.options.host ?? 'localhost', port: redis.options.port ?? 6379 })
    return new Promise((resolve, reject) => {
      enqueue(
        { quota, t, span, resolve, reject },
        subject,
        a2,
        a3,
        a4,
        a5,
        operation,
        quota !== null && shortDay(subject) ? '1' : '0'
      )
    })
  }

  function decide (subject: string, quota: Quota, op: 'consume' | 'peek'): Promise<Decision> {
    try {
      checkQuota(quota)
    } catch (err) {
      return Promise.reject(err)
    }
    const t = now()
    // A call with a quota settles with its decision (send).
    return call(
      op,
      subject,
      quota,
      t,
      quota.perMinute,
      quota.perDay,
      minuteResetAt(t),
      dayResetAt(t)
    ) as Promise<Decision>
  }

  return {
    consume: (subject, quota) => decide(subject, quota, 'consume'),
    peek: (subject, quota) => decide(subject, quota, 'peek'),

    async unban (subject: string): Promise<void> {
      // Quota arguments are unused by 'unban' but keep ARGV positions fixed.
      await call('unban', subject, null, now(), 0, 0, 0, 0)
    },

    // A ban from the database (restoreBans): in force unless the subject holds one that ends
    // later; an ended or lifted one as history only (the script keeps the later start).
    async restoreBan (subject: string, ban: RestoredBan): Promise<void> {
      const t = now()
      const end = ban.liftedAt == null ? ban.until : Math.min(ban.until, ban.liftedAt)
      if (end + BAN_ESCALATION_MS <= t) return
      await call('restore', subject, null, t, banLevelOf(ban.startedAt, ban.until), 0, ban.startedAt, end)
    },

    async restoreDay (subject: string, day: { at: number; count: number }): Promise<void> {
      const t = now()
      if (Math.floor(day.at / DAY_MS) !== Math.floor(t / DAY_MS) || day.count <= 0) return
      await call('day', subject, null, t, day.count, 0, 0, dayResetAt(t))
    },

    generation: () => generation,

    // The sentinel is set once the bans are (being) loaded; its absence means Redis lost its
    // state (FLUSHDB, a restart without persistence, eviction) or never had it. Set before the
    // reload, so a loss during the reload is seen by the next check.
    async needsBans (): Promise<boolean> {
      const lost = await redis.set(`${prefix}bans-loaded`, '1', 'NX') === 'OK'
      // The day counters went with the sentinel: their owners put them back (restoreDay).
      if (lost) generation++
      return lost
    },

    // The client belongs to the caller, who may share it. Calls of this turn are written now,
    // before the caller disconnects it, as they were when each was written at once.
    async close (): Promise<void> {
      if (pending.length > 0) dispatch()
    }
  }
}
