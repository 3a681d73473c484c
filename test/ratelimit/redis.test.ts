// Runs against the real Redis (PETSTORE_TEST_REDIS_URL, else 127.0.0.1:6379). Without it the
// suite is skipped with the reason, except under CI, where a missing Redis is a failure
// (test/helpers/services.ts).
import { after, before, describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import type { Command } from 'ioredis'
import { createRedisRateLimiter, redisClientOptions } from '../../src/ratelimit/redis.ts'
import { testRedisReason, TEST_REDIS_URL } from '../helpers/limiter.ts'
import { deleteRedisKeys, serviceGate } from '../helpers/services.ts'
import { runRateLimiterContract, START, MINUTE_END } from './contract.ts'

function connect (): Redis {
  // lazyConnect + await connect(): with enableOfflineQueue false, commands sent before the
  // connection is ready would be rejected.
  const client = new Redis(TEST_REDIS_URL, { ...redisClientOptions(), lazyConnect: true, commandTimeout: 2000 })
  client.on('error', () => {}) // connection errors surface as rejected commands
  return client
}

const redis = serviceGate(await testRedisReason())
const skip = redis.skip
if (redis.skip !== false) {
  // A skipped test shows in the run's summary, where a skipped suite alone would not.
  void test('redis back end: Redis answers', { skip: redis.skip }, () => {})
} else {
  // Under CI with Redis missing, this one fails with the reason (the suite's own tests fail too).
  void test('redis back end: Redis answers', () => { redis.check() })
}

void describe('redis back end', { skip }, () => {
  const clients: Redis[] = []

  async function client (): Promise<Redis> {
    const c = connect()
    clients.push(c)
    await c.connect()
    return c
  }

  let shared: Redis
  before(async () => {
    shared = await client()
  })
  after(() => {
    for (const c of clients) c.disconnect()
  })

  function uniquePrefix (): string {
    return `test:${randomUUID()}:`
  }

  const QUOTA_20 = { perMinute: 20, perDay: 1000 }

  /** Records the name of every command the client sends. */
  /** A limiter on a fresh prefix whose script is already loaded (one EVAL done), and the commands sent after. */
  async function loadedLimiter (t: TestContext): Promise<{
    limiter: ReturnType<typeof createRedisRateLimiter>
    sent: string[]
  }> {
    const prefix = uniquePrefix()
    t.after(() => deleteRedisKeys(shared, prefix))
    const c = await client()
    const limiter = createRedisRateLimiter({ redis: c, prefix, now: () => START })
    await limiter.peek('key:0', QUOTA_20) // EVAL: the script is now loaded
    return { limiter, sent: spy(c) }
  }

  function spy (c: Redis): string[] {
    const sent: string[] = []
    const send = c.sendCommand.bind(c)
    c.sendCommand = (command: Command, ...rest: unknown[]) => {
      sent.push(command.name)
      return send(command, ...(rest as [never]))
    }
    return sent
  }

  runRateLimiterContract('redis', async (now) => {
    const prefix = uniquePrefix()
    return {
      limiter: createRedisRateLimiter({ redis: shared, prefix, now }),
      cleanup: async () => { await deleteRedisKeys(shared, prefix) }
    }
  })

  void test('two instances on two connections share counters exactly: 30 + 30 interleaved calls at 50/min allow 50', async (t) => {
    const prefix = uniquePrefix()
    t.after(() => deleteRedisKeys(shared, prefix))
    const [a, b] = [await client(), await client()]
    const now = () => START
    const one = createRedisRateLimiter({ redis: a, prefix, now })
    const two = createRedisRateLimiter({ redis: b, prefix, now })
    const quota = { perMinute: 50, perDay: 1000 }
    const calls = []
    for (let i = 0; i < 30; i++) calls.push(one.consume('key:1', quota), two.consume('key:1', quota))
    const decisions = await Promise.all(calls)
    assert.equal(decisions.filter((d) => d.allowed).length, 50)
    assert.deepEqual(decisions.filter((d) => d.allowed).map((d) => d.minute.remaining).sort((x, y) => x - y),
      Array.from({ length: 50 }, (_, i) => i))
    const peeked = await one.peek('key:1', quota)
    assert.deepEqual([peeked.minute.remaining, peeked.day.remaining], [0, 950])
  })

  void test('a ban started through one instance is enforced by another, and lifted through either', async (t) => {
    const prefix = uniquePrefix()
    t.after(() => deleteRedisKeys(shared, prefix))
    let now = START
    const one = createRedisRateLimiter({ redis: await client(), prefix, now: () => now })
    const two = createRedisRateLimiter({ redis: await client(), prefix, now: () => now })
    const quota = { perMinute: 1, perDay: 100 }
    let started
    for (let i = 0; i < 22; i++) started = await one.consume('key:1', quota)
    assert.equal(started?.banStarted, true)
    now += 1000
    const seen = await two.consume('key:1', quota)
    assert.deepEqual([seen.code, seen.ban, seen.retryAfterSeconds], ['api_key_banned', started?.ban, 899])
    await two.unban('key:1')
    const lifted = await one.consume('key:1', quota)
    assert.deepEqual([lifted.code, lifted.ban], ['rate_limited', null])
  })

  void test('consume, peek and unban are each one command (one round trip), EVAL once then EVALSHA', async (t) => {
    const prefix = uniquePrefix()
    t.after(() => deleteRedisKeys(shared, prefix))
    const c = await client()
    const sent = spy(c)
    const limiter = createRedisRateLimiter({ redis: c, prefix, now: () => START })
    const quota = { perMinute: 2, perDay: 100 }
    await limiter.consume('key:1', quota)
    assert.deepEqual(sent.splice(0), ['eval'])
    for (let i = 0; i < 4; i++) {
      await limiter.consume('key:1', quota)
      assert.deepEqual(sent.splice(0), ['evalsha'])
    }
    await limiter.peek('key:1', quota)
    assert.deepEqual(sent.splice(0), ['evalsha'])
    await limiter.unban('key:1')
    assert.deepEqual(sent.splice(0), ['evalsha'])
  })

  void test('the calls of one event-loop turn go in one command, each decided in call order: 50 concurrent calls on two keys at 20/min allow exactly 20 each', async (t) => {
    const { limiter, sent } = await loadedLimiter(t)
    const decisions = await Promise.all(Array.from({ length: 50 }, (_, i) => limiter.consume(`key:${i % 2 + 1}`, QUOTA_20)))
    assert.deepEqual(sent, ['evalsha'], 'one command for the 50 calls')
    for (const key of [0, 1]) {
      const own = decisions.filter((_, i) => i % 2 === key)
      // As if each had been sent alone, in order: the first 20 allowed counting down, then 429s.
      assert.deepEqual(own.map((d) => d.allowed ? d.minute.remaining : d.code),
        [...Array.from({ length: 20 }, (_, i) => 19 - i), ...Array.from({ length: 5 }, () => 'rate_limited')])
    }
    const after = await Promise.all([limiter.peek('key:1', QUOTA_20), limiter.peek('key:2', QUOTA_20)])
    assert.deepEqual(after.map((d) => [d.minute.remaining, d.day.remaining]), [[0, 980], [0, 980]])
  })

  void test('150 calls in one turn are sent as batches of at most 64 (three commands), the counts exact', async (t) => {
    const { limiter, sent } = await loadedLimiter(t)
    const quota = { perMinute: 140, perDay: 1000 }
    const decisions = await Promise.all(Array.from({ length: 150 }, () => limiter.consume('key:1', quota)))
    assert.deepEqual(sent, ['evalsha', 'evalsha', 'evalsha'])
    assert.deepEqual(decisions.map((d) => d.allowed ? d.minute.remaining : d.code),
      [...Array.from({ length: 140 }, (_, i) => 139 - i), ...Array.from({ length: 10 }, () => 'rate_limited')])
  })

  void test('exactly 64 calls in one turn are one command: the full batch leaves nothing for the end of the turn', async (t) => {
    // Fault caught: the turn's end sending an empty script call after a full batch went out.
    const { limiter, sent } = await loadedLimiter(t)
    const decisions = await Promise.all(Array.from({ length: 64 }, () =>
      limiter.consume('key:1', { perMinute: 100, perDay: 1000 })))
    await new Promise((resolve) => setImmediate(resolve))
    assert.deepEqual(sent, ['evalsha'])
    assert.deepEqual(
      decisions.map((d) => d.allowed && d.minute.remaining),
      Array.from({ length: 64 }, (_, i) => 99 - i)
    )
  })

  void test('after the server loses its script cache (NOSCRIPT), the call is resent with EVAL and answers', async (t) => {
    const prefix = uniquePrefix()
    t.after(() => deleteRedisKeys(shared, prefix))
    const c = await client()
    const limiter = createRedisRateLimiter({ redis: c, prefix, now: () => START })
    const quota = { perMinute: 5, perDay: 100 }
    await limiter.consume('key:1', quota)
    // Simulated rather than with SCRIPT FLUSH, which would hit every other user of this server.
    let noscripts = 0
    c.evalsha = (async () => {
      noscripts++
      throw new Error('NOSCRIPT No matching script. Please use EVAL.')
    }) as typeof c.evalsha
    const d = await limiter.consume('key:1', quota)
    assert.deepEqual([noscripts, d.allowed, d.minute.remaining], [1, true, 3])
  })

  void test('keys share the subject\'s hash tag and expire by themselves', async (t) => {
    const prefix = uniquePrefix()
    t.after(() => deleteRedisKeys(shared, prefix))
    const limiter = createRedisRateLimiter({ redis: shared, prefix, now: () => START })
    const quota = { perMinute: 1, perDay: 100 }
    for (let i = 0; i < 22; i++) await limiter.consume('key:{7}', quota)
    const keys = (await shared.keys(`${prefix}*`)).sort()
    const base = `${prefix}{key:%7B7%7D}:`
    assert.deepEqual(keys, [`${base}d:20778`, `${base}m:29921040`, `${base}s`])
    const margin = 60_000
    const ttls = await Promise.all(keys.map((k) => shared.pttl(k)))
    const expected = [
      Date.UTC(2026, 10, 22) - START + margin, // day counter: end of the UTC day
      MINUTE_END - START + margin, // minute counter: end of the minute
      15 * 60_000 + 24 * 3_600_000 + margin // ban state: 24 h after the 15 min ban ends
    ]
    for (const [i, ttl] of ttls.entries()) {
      const want = expected[i] ?? 0
      assert.ok(ttl <= want && ttl > want - 5000, `${keys[i]}: PTTL ${ttl}, expected about ${want}`)
    }
  })
})
