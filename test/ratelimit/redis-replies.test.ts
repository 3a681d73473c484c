// The Redis back end's edges (src/ratelimit/redis.ts), on the real Redis with a unique prefix:
// which failures of EVALSHA are retried with EVAL and which are not, replies the script cannot
// give being refused rather than read as an answer, the needsBans sentinel, restoreBan, and a
// caller's own shortDay rule. The script's replies are replaced on the client (as the NOSCRIPT
// test of redis.test.ts does) where a real server cannot be made to give them.
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createServer, type Socket } from 'node:net'
import { Redis, type Command } from 'ioredis'
import { DAY_MS, dayResetAt, type Decision, type RateLimiter } from '../../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from '../../src/ratelimit/redis.ts'
import { connectTestRedis, testRedisReason } from '../helpers/limiter.ts'
import { deleteRedisKeys, requireService } from '../helpers/services.ts'
import { START } from './contract.ts'

const QUOTA = { perMinute: 5, perDay: 100 }
const MINUTE = 60_000
const HOUR = 60 * MINUTE

async function open (t: TestContext): Promise<{ redis: Redis; prefix: string } | null> {
  if (!requireService(t, await testRedisReason())) return null
  const redis = await connectTestRedis()
  const prefix = `test:${randomUUID()}:`
  t.after(async () => { await deleteRedisKeys(redis, prefix); redis.disconnect() })
  return { redis, prefix }
}

/** Records the name of every command the client sends. */
function spy (redis: Redis): string[] {
  const sent: string[] = []
  const send = redis.sendCommand.bind(redis)
  redis.sendCommand = (command: Command, ...rest: unknown[]) => {
    sent.push(command.name)
    return send(command, ...(rest as [never]))
  }
  return sent
}

void test('redis: an EVALSHA failure other than NOSCRIPT is the caller\'s error, not retried with EVAL', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => START })
  await limiter.consume('key:1', QUOTA) // EVAL: the script is now loaded
  const sent = spy(redis)
  const evalsha = redis.evalsha.bind(redis)
  redis.evalsha = (async () => { throw new Error('READONLY You can\'t write against a read only replica.') }) as typeof redis.evalsha
  await assert.rejects(Promise.resolve(limiter.consume('key:1', QUOTA)), /READONLY/)
  redis.evalsha = (() => Promise.reject('NOSCRIPT as a bare string')) as typeof redis.evalsha
  await assert.rejects(Promise.resolve(limiter.consume('key:1', QUOTA)), (err) => err === 'NOSCRIPT as a bare string')
  assert.deepEqual(sent, []) // no EVAL was sent
  redis.evalsha = evalsha
  // Nothing was charged by the failed calls.
  assert.equal((await limiter.peek('key:1', QUOTA)).minute.remaining, 4)
})

void test('redis: a script reply of the wrong shape is refused, never read as a decision', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => START })
  await limiter.consume('key:1', QUOTA)
  // One line per call of the batch, six integers each (here a batch of one).
  const replies: unknown[] = [
    'OK',
    null,
    '',
    [0, 1, 1, 0, 0, 0],
    '0 1 1 0 0',
    '0 1 1 0 0 0 0',
    '0 1 x 0 0 0',
    '0 1 1e3 0 0 0',
    '0 1  1 0 0 0',
    '0 1 1 0 0 0\n0 1 1 0 0 0',
    '5 1 1 0 0 0',
    '-1 1 1 0 0 0'
  ]
  for (const reply of replies) {
    redis.evalsha = (async () => reply) as typeof redis.evalsha
    await assert.rejects(Promise.resolve(limiter.consume('key:1', QUOTA)), /rate limit script returned/, JSON.stringify(reply))
  }
  // Each outcome code the script does give is read as its outcome.
  const outcomes: [number[], string | null, boolean][] = [
    [[0, 1, 1, 0, 0, 0], null, true],
    [[1, 5, 5, 0, 0, 0], 'rate_limited', false],
    [[2, 0, 0, START, START + 15 * MINUTE, 1], 'api_key_banned', false],
    [[3, 0, 0, START, START + 15 * MINUTE, 1], 'api_key_banned', false],
    [[4, 0, 0, START, START + 15 * MINUTE, 1], 'api_key_banned', false]
  ]
  const seen = []
  for (const [reply] of outcomes) {
    redis.evalsha = (async () => reply.join(' ')) as typeof redis.evalsha
    const d = await limiter.consume('key:1', QUOTA)
    seen.push([d.code, d.allowed, d.banStarted, d.ban?.level ?? null, d.minute.remaining, d.day.remaining])
  }
  assert.deepEqual(seen, [
    [null, true, false, null, 4, 99],
    ['rate_limited', false, false, null, 0, 95],
    ['api_key_banned', false, false, 1, 5, 100],
    ['api_key_banned', false, true, 1, 5, 100],
    ['api_key_banned', false, false, null, 5, 100]
  ])
})

void test('redis: a call whose step fails in Redis (WRONGTYPE) fails alone; the other calls of its batch are answered and charged once', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => START })
  await redis.set(`${prefix}{key:bad}:s`, 'not a hash') // the state hash of key:bad, damaged
  const sent = spy(redis)
  const [one, bad, two] = await Promise.allSettled([
    limiter.consume('key:1', QUOTA),
    limiter.consume('key:bad', QUOTA),
    limiter.consume('key:2', QUOTA)
  ])
  assert.equal(sent.length, 1, 'the three calls went in one command')
  assert.ok(
    bad.status === 'rejected' && bad.reason instanceof Error && /WRONGTYPE/.test(bad.reason.message),
    String(bad.status === 'rejected' ? bad.reason : bad.value)
  )
  assert.deepEqual([one, two].map((r) => r.status === 'fulfilled' ? r.value.minute.remaining : r.reason), [4, 4])
  assert.deepEqual(
    [(await limiter.peek('key:1', QUOTA)).minute.remaining, (await limiter.peek('key:2', QUOTA)).minute.remaining],
    [4, 4]
  )
})

// The script reads each key once per batch and keeps what it wrote (src/ratelimit/redis.ts):
// a subject's later calls in the batch must see the earlier ones' counts, wait period and ban.
// Fault caught: a state kept after a write to it (the wait period never reaching a ban, or a
// lifted ban still refusing), or a count not updated after its INCR (more allowed than the quota).
void test('redis: one batch holding a subject\'s calls through its limit, wait period, ban and lift decides each call as the in-process limiter does', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const quota = { perMinute: 2, perDay: 100 }
  const calls: Array<(l: RateLimiter) => unknown> = []
  for (let i = 0; i < 25; i++) calls.push((l) => l.consume('key:1', quota), (l) => l.peek('key:2', quota))
  calls.push(
    (l) => l.unban('key:1'),
    (l) => l.peek('key:1', quota),
    (l) => l.consume('key:1', quota),
    (l) => l.consume('key:2', quota),
    (l) => l.consume('key:2', quota)
  )
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => START })
  const sent = spy(redis)
  const viaRedis = await Promise.all(calls.map((c) => c(limiter)))
  assert.equal(sent.length, 1, `the ${calls.length} calls went in one command`)
  const memory = createMemoryRateLimiter({ now: () => START })
  const inProcess = []
  for (const c of calls) inProcess.push(await c(memory))
  assert.deepEqual(viaRedis, inProcess)
  // The sequence is the one meant: two allowed, refusals into a ban, the lift, then refused again.
  const ones = viaRedis.slice(0, 50).filter((_, i) => i % 2 === 0) as Decision[]
  assert.deepEqual(
    [ones.filter((d) => d.allowed).length, ones.filter((d) => d.banStarted).length, ones.at(-1)?.code],
    [2, 1, 'api_key_banned']
  )
  assert.deepEqual(viaRedis.slice(51).map((d) => (d as Decision).code), ['rate_limited', 'rate_limited', null, null])
})

void test('redis: needsBans answers true once per prefix, until the sentinel is lost', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => START })
  assert.equal(await limiter.needsBans!(), true)
  assert.equal(await limiter.needsBans!(), false)
  assert.equal(await redis.get(`${prefix}bans-loaded`), '1')
  const other = createRedisRateLimiter({ redis, prefix: `${prefix}other:`, now: () => START })
  assert.equal(await other.needsBans!(), true)
  await redis.del(`${prefix}bans-loaded`) // what FLUSHDB or a restart without persistence does
  assert.equal(await limiter.needsBans!(), true)
})

void test('redis: restoreBan enforces a ban with its level on every instance; an ended ban sends nothing', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const now = START
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => now })
  await limiter.restoreBan!('key:1', { startedAt: now - 10 * MINUTE, until: now + 50 * MINUTE }) // a 1 h ban: level 3
  const d = await limiter.consume('key:1', QUOTA)
  assert.deepEqual(
    [d.code, d.ban?.startedAt, d.ban?.until, d.ban?.level, d.retryAfterSeconds],
    ['api_key_banned', now - 10 * MINUTE, now + 50 * MINUTE, 3, 3000]
  )
  const sent = spy(redis)
  await limiter.restoreBan!('key:2', { startedAt: now - DAY_MS - HOUR, until: now - DAY_MS })
  assert.deepEqual(sent, [], 'a ban that ended 24 h ago changes no answer')
  assert.equal((await limiter.consume('key:2', QUOTA)).allowed, true)
  // Ended or lifted within 24 h: history, not in force; the next ban escalates from it.
  await limiter.restoreBan!('key:3', { startedAt: now - 2 * HOUR, until: now - HOUR })
  await limiter.restoreBan!('key:4', { startedAt: now - 10 * MINUTE, until: now + 20 * MINUTE, liftedAt: now - MINUTE })
  for (const subject of ['key:3', 'key:4']) {
    assert.equal((await limiter.consume(subject, QUOTA)).allowed, true)
    let banned
    do banned = await limiter.consume(subject, QUOTA)
    while (!banned.banStarted)
    assert.equal(banned.ban?.level, subject === 'key:3' ? 4 : 3)
  }
})

void test('redis: restoreDay puts back a day count as a floor, for the current UTC day only', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => START })
  const quota = { perMinute: 10, perDay: 5 }
  await limiter.consume('key:1', quota)
  await limiter.restoreDay!('key:1', { at: START, count: 4 })
  assert.equal((await limiter.consume('key:1', quota)).day.remaining, 0)
  assert.equal((await limiter.consume('key:1', quota)).code, 'rate_limited')
  await limiter.restoreDay!('key:1', { at: START, count: 2 })
  assert.equal((await limiter.peek('key:1', quota)).day.remaining, 0, 'a lower count changes nothing')
  const day = Math.floor(START / DAY_MS)
  assert.ok(await redis.pttl(`${prefix}{key:1}:d:${day}`) > dayResetAt(START) - START, 'kept until the day ends')
  await limiter.restoreDay!('key:2', { at: START - DAY_MS, count: 5 })
  assert.equal((await limiter.consume('key:2', quota)).allowed, true)
})

void test('redis: a caller\'s own shortDay rule replaces the default one', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => START, shortDay: (s) => s.startsWith('key:') })
  await limiter.consume('ip:192.0.2.1', QUOTA)
  await limiter.consume('key:1', QUOTA)
  const day = Math.floor(START / DAY_MS)
  const ipTtl = await redis.pttl(`${prefix}{ip:192.0.2.1}:d:${day}`)
  const keyTtl = await redis.pttl(`${prefix}{key:1}:d:${day}`)
  assert.ok(ipTtl > dayResetAt(START) - START, `the address's day counter lives until the day ends: ${ipTtl} ms`)
  assert.ok(keyTtl <= DAY_MS / QUOTA.perDay + MINUTE, `the key's day counter lives one request's share of the day: ${keyTtl} ms`)
})

void test('redis: a subject with a lone brace or a percent sign is escaped in its keys, so its hash tag stays whole and no two subjects share keys', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => START })
  for (const subject of ['key:{a', 'key:a}', 'key:50%', 'key:plain']) await limiter.consume(subject, QUOTA)
  const tags = (await redis.keys(`${prefix}*:s`)).concat(await redis.keys(`${prefix}*:m:*`))
    .map((k) => k.slice(prefix.length, k.indexOf('}') + 1)).sort()
  assert.deepEqual([...new Set(tags)], ['{key:50%25}', '{key:a%7D}', '{key:plain}', '{key:%7Ba}'].sort())
})

void test('redis: consume and peek refuse a quota that is not whole numbers >= 0 before sending anything', async (t) => {
  const fixture = await open(t)
  if (fixture === null) return
  const { redis, prefix } = fixture
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => START })
  const sent = spy(redis)
  await assert.rejects(Promise.resolve().then(() => limiter.consume('key:1', { perMinute: 1.5, perDay: 10 })), RangeError)
  await assert.rejects(Promise.resolve().then(() => limiter.peek('key:1', { perMinute: 1, perDay: -1 })), RangeError)
  assert.deepEqual(sent, [])
})

void test('redisClientOptions: a command sent before the connection is made rejects at once instead of waiting in a queue', async (t) => {
  // A server that accepts connections and never answers: a queued command would wait on it.
  const sockets: Socket[] = []
  let accepted = 0
  const server = createServer((socket) => { accepted++; sockets.push(socket) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => { for (const s of sockets) s.destroy(); server.close() })
  const port = (server.address() as { port: number }).port
  const redis = new Redis(port, '127.0.0.1', { ...redisClientOptions(), retryStrategy: () => null })
  redis.on('error', () => {})
  t.after(() => redis.disconnect())
  const acceptedWhenRefused = await redis.get('x').then(() => -1, () => accepted)
  assert.equal(acceptedWhenRefused, 0)
})
