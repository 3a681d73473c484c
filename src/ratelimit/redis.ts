// Redis back end: counters and bans shared by every instance, checked and updated atomically in
// one round trip by a Lua script (docs/product.md section 4).
//
// Keys of one subject, all with the hash tag {subject} so that they share a cluster slot and one
// script may touch them all:
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
const SCRIPT = `
local now = tonumber(ARGV[1])
local perMinute = tonumber(ARGV[2])
local perDay = tonumber(ARGV[3])
local minuteReset = tonumber(ARGV[4])
local dayReset = tonumber(ARGV[5])
local op = ARGV[6]
local STRIKES = ${BAN_STRIKES}
local BASE = ${BAN_BASE_MS}
local MAX = ${BAN_MAX_MS}
local MAX_LEVEL = ${BAN_MAX_LEVEL}
local HISTORY = ${BAN_ESCALATION_MS}
local MARGIN = ${KEY_MARGIN_MS}
local DAY = ${DAY_MS}

local st = redis.call('HMGET', KEYS[3], 'pu', 'pn', 'bs', 'bu', 'bl')
local pu = tonumber(st[1]) or 0
local pn = tonumber(st[2]) or 0
local bs = tonumber(st[3]) or 0
local bu = tonumber(st[4]) or 0
local bl = tonumber(st[5]) or 0

if op == 'unban' then
  redis.call('HDEL', KEYS[3], 'pu', 'pn')
  if bu > now then
    redis.call('HSET', KEYS[3], 'bu', now)
    redis.call('PEXPIRE', KEYS[3], HISTORY + MARGIN)
  end
  return {0, 0, 0, 0, 0, 0}
end

if op == 'restore' then
  local rs = tonumber(ARGV[4])
  local ru = tonumber(ARGV[5])
  if ru > now and ru > bu then
    redis.call('HSET', KEYS[3], 'bs', rs, 'bu', ru, 'bl', tonumber(ARGV[2]))
    redis.call('PEXPIRE', KEYS[3], ru + HISTORY - now + MARGIN)
  elseif ru <= now and bu <= now and rs > bs and ru + HISTORY > now then
    redis.call('HSET', KEYS[3], 'bs', rs, 'bu', ru, 'bl', tonumber(ARGV[2]))
    local keep = ru + HISTORY - now + MARGIN
    if redis.call('PTTL', KEYS[3]) < keep then redis.call('PEXPIRE', KEYS[3], keep) end
  end
  return {0, 0, 0, 0, 0, 0}
end

if op == 'day' then
  local count = tonumber(ARGV[2])
  if count > (tonumber(redis.call('GET', KEYS[2])) or 0) then
    redis.call('SET', KEYS[2], count, 'PX', dayReset - now + MARGIN)
  end
  return {0, 0, 0, 0, 0, 0}
end

local charge = op == 'consume'
local m = tonumber(redis.call('GET', KEYS[1])) or 0
local d = tonumber(redis.call('GET', KEYS[2])) or 0

if bu > now then return {2, m, d, bs, bu, bl} end

local inPeriod = pu > now
if inPeriod and pn >= STRIKES then
  local level = 1
  if bs > 0 and now - bs < HISTORY then level = math.min(bl + 1, MAX_LEVEL) end
  local untilAt = now + math.min(BASE * 2 ^ (level - 1), MAX)
  if not charge then return {4, m, d, now, untilAt, level} end
  redis.call('HDEL', KEYS[3], 'pu', 'pn')
  redis.call('HSET', KEYS[3], 'bs', now, 'bu', untilAt, 'bl', level)
  redis.call('PEXPIRE', KEYS[3], untilAt + HISTORY - now + MARGIN)
  return {3, m, d, now, untilAt, level}
end

if m < perMinute and d < perDay then
  if not charge then return {0, m, d, 0, 0, 0} end
  m = redis.call('INCR', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], minuteReset - now + MARGIN)
  d = redis.call('INCR', KEYS[2])
  local dayTtl = dayReset - now
  if ARGV[7] == '1' and perDay > 0 then
    local need = math.ceil(d * DAY / perDay)
    if need < dayTtl then dayTtl = need end
  end
  redis.call('PEXPIRE', KEYS[2], dayTtl + MARGIN)
  if inPeriod then redis.call('HINCRBY', KEYS[3], 'pn', 1) end
  return {0, m, d, 0, 0, 0}
end

if charge then
  if inPeriod then
    redis.call('HINCRBY', KEYS[3], 'pn', 1)
  else
    local retryAt = 0
    if m >= perMinute then retryAt = minuteReset end
    if d >= perDay and dayReset > retryAt then retryAt = dayReset end
    local wait = math.ceil((retryAt - now) / 1000)
    if wait < 1 then wait = 1 end
    pu = now + wait * 1000
    redis.call('HSET', KEYS[3], 'pu', pu, 'pn', 1)
    local keep = pu
    if bs > 0 and bu + HISTORY > keep then keep = bu + HISTORY end
    redis.call('PEXPIRE', KEYS[3], keep - now + MARGIN)
  end
end
return {1, m, d, 0, 0, 0}
`

const SCRIPT_SHA = createHash('sha1').update(SCRIPT).digest('hex')

// A brace inside the subject would move or empty the hash tag and scatter the subject's keys
// over several slots; percent-escaping '%', '{' and '}' keeps the name injective.
function hashTag (subject: string): string {
  if (!subject.includes('{') && !subject.includes('}') && !subject.includes('%')) return subject
  return subject.replaceAll('%', '%25').replaceAll('{', '%7B').replaceAll('}', '%7D')
}

function toRaw (reply: unknown): RawDecision {
  if (!Array.isArray(reply) || reply.length !== 6 || !reply.every((v) => typeof v === 'number')) {
    throw new Error('rate limit script returned an unexpected reply')
  }
  const [code, minuteCount, dayCount, banStartedAt, banUntil, banLevel] = reply as number[]
  const outcome = OUTCOMES[code ?? -1]
  if (outcome === undefined) throw new Error(`rate limit script returned outcome ${code}`)
  return {
    outcome,
    minuteCount: minuteCount ?? 0,
    dayCount: dayCount ?? 0,
    banStartedAt: banStartedAt ?? 0,
    banUntil: banUntil ?? 0,
    banLevel: banLevel ?? 0
  }
}

/** A reply's outcome name for its span, or undefined when it is not a reply toRaw would take. */
function outcomeOf (reply: unknown): string | undefined {
  return Array.isArray(reply) && typeof reply[0] === 'number' ? OUTCOMES[reply[0]] : undefined
}

export function createRedisRateLimiter (options: RedisRateLimiterOptions): RateLimiter {
  const { redis, prefix } = options
  const now = options.now ?? Date.now
  const shortDay = options.shortDay ?? defaultShortDay
  // The script is sent in full once (EVAL caches it on the server), then by its SHA. A server
  // that lost its script cache (restart, failover, SCRIPT FLUSH) answers NOSCRIPT, and that one
  // call is retried with EVAL: still one command per request in the steady state.
  let loaded = false
  // Moves when the sentinel is found gone (needsBans): the counters went with it.
  let generation = 0

  async function send (keys: [string, string, string], args: (string | number)[], span: RedisCallSpan | undefined): Promise<unknown> {
    if (loaded) {
      span?.sent('EVALSHA')
      try {
        return await redis.evalsha(SCRIPT_SHA, 3, ...keys, ...args)
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err
      }
    }
    span?.sent('EVAL')
    const reply = await redis.eval(SCRIPT, 3, ...keys, ...args)
    loaded = true
    return reply
  }

  /** One script call; with tracing on and a trace to join, in a span of its own. */
  async function run (operation: RedisScriptOperation, keys: [string, string, string], args: (string | number)[]): Promise<unknown> {
    const tracing = redisTracing.current
    // The server the span names: the client's own options (no password, no URL).
    const span = tracing === null ? undefined : tracing.start(operation, { address: redis.options.host ?? 'localhost', port: redis.options.port ?? 6379 })
    if (span === undefined) return await send(keys, args, undefined)
    try {
      const reply = await send(keys, args, span)
      span.end(operation === 'consume' || operation === 'peek' ? outcomeOf(reply) : undefined)
      return reply
    } catch (err) {
      span.end(undefined, err)
      throw err
    }
  }

  function keysOf (subject: string, t: number): [string, string, string] {
    const base = `${prefix}{${hashTag(subject)}}:`
    return [`${base}m:${Math.floor(t / MINUTE_MS)}`, `${base}d:${Math.floor(t / DAY_MS)}`, `${base}s`]
  }

  async function decide (subject: string, quota: Quota, op: 'consume' | 'peek'): Promise<Decision> {
    checkQuota(quota)
    const t = now()
    const reply = await run(op, keysOf(subject, t), [t, quota.perMinute, quota.perDay, minuteResetAt(t), dayResetAt(t), op, shortDay(subject) ? '1' : '0'])
    return buildDecision(toRaw(reply), quota, t)
  }

  return {
    consume: (subject, quota) => decide(subject, quota, 'consume'),
    peek: (subject, quota) => decide(subject, quota, 'peek'),

    async unban (subject: string): Promise<void> {
      const t = now()
      // Quota arguments are unused by 'unban' but keep ARGV positions fixed.
      await run('unban', keysOf(subject, t), [t, 0, 0, 0, 0, 'unban'])
    },

    // A ban from the database (restoreBans): in force unless the subject holds one that ends
    // later; an ended or lifted one as history only (the script keeps the later start).
    async restoreBan (subject: string, ban: RestoredBan): Promise<void> {
      const t = now()
      const end = ban.liftedAt == null ? ban.until : Math.min(ban.until, ban.liftedAt)
      if (end + BAN_ESCALATION_MS <= t) return
      await run('restore', keysOf(subject, t), [t, banLevelOf(ban.startedAt, ban.until), 0, ban.startedAt, end, 'restore'])
    },

    async restoreDay (subject: string, day: { at: number; count: number }): Promise<void> {
      const t = now()
      if (Math.floor(day.at / DAY_MS) !== Math.floor(t / DAY_MS) || day.count <= 0) return
      await run('day', keysOf(subject, t), [t, day.count, 0, 0, dayResetAt(t), 'day'])
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

    // The client belongs to the caller, who may share it; nothing of ours to release.
    async close (): Promise<void> {}
  }
}
