// Bans in force wherever the limiter is (docs/product.md 4.12): with Redis, the bans recorded in
// the database are put back into the limiter on start, after Redis lost its state (FLUSHDB, a
// restart without persistence: the `bans-loaded` sentinel is gone), on the fall-back to
// in-process counters, and on an instance restart. A Redis server of the test's own (another
// port, no persistence) is flushed, stopped and started again; the shared one is never touched.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Redis } from 'ioredis'
import { createBanSync, restoreBans } from '../../src/access/ban-sync.ts'
import { subjectOfKey } from '../../src/accounts/keys.rules.ts'
import { createFallbackRateLimiter, type FallbackRateLimiter } from '../../src/ratelimit/fallback.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from '../../src/ratelimit/redis.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'
import { cleanupStack, pollUntil } from '../scale/helpers.ts'
import { freePort, ownRedis, requireRedisServer } from './own-redis.ts'

test('with Redis, a banned key stays banned until its end: after FLUSHDB, with Redis down, after a Redis restart and after an instance restart', { timeout: 60_000 }, async (t) => {
  if (!await requireRedisServer(t)) return
  const cleanup = cleanupStack(t)
  const port = await freePort()
  let server = await ownRedis(port)
  cleanup(() => server.stop())
  const prefix = `test:bans:${process.pid}:`
  const stores = createSqliteStores(':memory:')
  cleanup(() => stores.close())
  const admin = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0 })
  admin.on('error', () => {})
  cleanup(() => admin.disconnect())

  // One instance as infra.ts builds it: Redis through the fall-back limiter, the ban poll.
  let clockNow = () => T0
  const instance = async (): Promise<TestApp & {
    tick (): Promise<number>
    inRedis (subject: string): Promise<boolean>
  }> => {
    const client = new Redis(port, '127.0.0.1', { ...redisClientOptions() })
    client.on('error', () => {})
    cleanup(() => client.disconnect())
    await pollUntil(async () => client.status === 'ready' ? true : undefined, { timeoutMs: 5000, intervalMs: 20, message: 'client not ready' })
    const redisLimiter = createRedisRateLimiter({ redis: client, prefix, now: () => clockNow() })
    const app = await buildTestApp(t, {
      stores,
      limiter: (now) => createFallbackRateLimiter({
        primary: redisLimiter,
        fallback: createMemoryRateLimiter({ now }),
        now,
        probe: () => client.ping()
      })
    })
    clockNow = app.clock.now
    await restoreBans(stores.keys, app.limiter, app.clock.now())
    const banSync = createBanSync(stores.keys, app.limiter, { now: app.clock.now })
    return {
      ...app,
      tick: () => banSync.tick(),
      // What Redis itself holds, read without the fall-back limiter's in-process copy.
      inRedis: async (subject) => (await redisLimiter.peek(subject, { perMinute: 1, perDay: 1 })).ban !== null
    }
  }
  const codeOf = async (app: TestApp, key: string) => {
    const res = await app.call({ method: 'GET', url: '/v1/pets', key })
    return res.statusCode === 429 ? String(res.json().code) : String(res.statusCode)
  }

  // Ban B is recorded in the database by another instance before this one starts.
  const admin1 = await buildTestApp(t, { stores })
  const a = await admin1.makeKey('customer', 'enterprise', { perMinute: 1, perDay: 1000 })
  const b = await admin1.makeKey('customer', 'enterprise', { perMinute: 1, perDay: 1000 })
  const c = await admin1.makeKey('customer', 'enterprise', { perMinute: 1, perDay: 1000 })
  const END = T0 + 15 * 60_000
  await stores.keys.recordBan({ keyId: b.id, subject: subjectOfKey(b.id), startedAt: T0, endsAt: END, reason: 'test' })

  // Start: the bans in the database are loaded into Redis.
  let one = await instance()
  assert.equal(await codeOf(one, b.key), 'api_key_banned', 'on start')
  assert.ok(await one.inRedis(subjectOfKey(b.id)))
  // Ban A starts on this instance.
  const codes = []
  for (let i = 0; i < 22; i++) codes.push(await codeOf(one, a.key))
  assert.equal(codes.at(-1), 'api_key_banned')
  const banned = async (app: TestApp, keys: Array<{ key: string }>, when: string) => {
    for (const k of keys) assert.equal(await codeOf(app, k.key), 'api_key_banned', when)
  }

  // FLUSHDB: Redis forgets everything; the bans are still answered, and the next poll puts them back.
  await admin.flushdb()
  await banned(one, [a, b], 'after FLUSHDB')
  assert.equal(await one.inRedis(subjectOfKey(a.id)), false)
  await one.tick()
  assert.ok(await one.inRedis(subjectOfKey(a.id)), 'A back in Redis after the poll')
  assert.ok(await one.inRedis(subjectOfKey(b.id)), 'B back in Redis after the poll')

  // Redis down: the fall-back counters hold the bans, those recorded meanwhile elsewhere too.
  await server.stop()
  await banned(one, [a, b], 'Redis down')
  await stores.keys.recordBan({ keyId: c.id, subject: subjectOfKey(c.id), startedAt: T0, endsAt: END, reason: 'test' })
  await one.tick()
  await banned(one, [a, b, c], 'Redis down, after the poll')

  // Redis restarts empty (no persistence); the client reconnects by itself.
  server = await ownRedis(port)
  await pollUntil(async () => admin.status === 'ready' ? true : undefined, { timeoutMs: 10_000, intervalMs: 20, message: 'admin client not back' })
  await pollUntil(async () => {
    one.clock.advance(1001) // the fall-back limiter tries Redis again at most once a second
    return (await (one.limiter as FallbackRateLimiter).check()).status === 'ok' ? true : undefined
  }, { timeoutMs: 10_000, intervalMs: 100, message: 'the instance did not reconnect' })
  await banned(one, [a, b, c], 'after a Redis restart')
  await one.tick()
  for (const k of [a, b, c]) assert.ok(await one.inRedis(subjectOfKey(k.id)), 'back in Redis after the restart and a poll')

  // An instance restart, on a Redis that lost its state meanwhile.
  await one.app.close()
  await admin.flushdb()
  one = await instance()
  await banned(one, [a, b, c], 'after an instance restart')
  for (const k of [a, b, c]) assert.ok(await one.inRedis(subjectOfKey(k.id)))

  // Until their end, and no longer.
  one.clock.set(END)
  for (const k of [b, c]) assert.equal(await codeOf(one, k.key), '200', 'the ban is over')
})
