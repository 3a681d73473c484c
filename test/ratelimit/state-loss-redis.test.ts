// Quotas and ban escalation survive Redis losing its state (issue 30 item 5, docs/product.md
// 4.14): a key's day count continues from the usage recorded in the database (key_usage), and a
// subject's next ban escalates from the bans recorded there, after a FLUSHDB, a Redis restart
// without persistence, and in fall-back mode (Redis down, in-process counters). On a redis-server
// of the test's own; the usage flush runs as the job does (every 20 ms here), the ban poll is
// ticked by the test where the server's job would tick within 2 s.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { Redis } from 'ioredis'
import { createBanSync, restoreBans } from '../../src/access/ban-sync.ts'
import { utcDay } from '../../src/accounts/keys.rules.ts'
import { createFallbackRateLimiter, type FallbackRateLimiter } from '../../src/ratelimit/fallback.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from '../../src/ratelimit/redis.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'
import { cleanupStack, pollUntil } from '../scale/helpers.ts'
import { freePort, ownRedis, requireRedisServer } from './own-redis.ts'

async function setup (t: TestContext) {
  const cleanup = cleanupStack(t)
  const port = await freePort()
  const redis = { server: await ownRedis(port) }
  cleanup(() => redis.server.stop())
  const stores = createSqliteStores(':memory:')
  cleanup(() => stores.close())
  const admin = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0 })
  admin.on('error', () => {})
  cleanup(() => admin.disconnect())
  const client = new Redis(port, '127.0.0.1', { ...redisClientOptions() })
  client.on('error', () => {})
  cleanup(() => client.disconnect())
  await pollUntil(async () => client.status === 'ready' ? true : undefined, { timeoutMs: 5000, intervalMs: 20, message: 'client not ready' })
  let clockNow = () => T0
  const primary = createRedisRateLimiter({ redis: client, prefix: `test:loss:${process.pid}:`, now: () => clockNow() })
  const app: TestApp = await buildTestApp(t, {
    stores,
    deps: { usageFlushMs: 20 },
    limiter: (now) => createFallbackRateLimiter({
      primary,
      fallback: createMemoryRateLimiter({ now }),
      now,
      probe: () => client.ping()
    })
  })
  clockNow = app.clock.now
  await restoreBans(stores.keys, app.limiter, app.clock.now())
  const banSync = createBanSync(stores.keys, app.limiter, { now: app.clock.now })
  const statusOf = async (key: string) => {
    const res = await app.call({ method: 'GET', url: '/v1/pets', key })
    return res.statusCode === 429 ? String(res.json().code) : String(res.statusCode)
  }
  /** Waits until the database holds `count` allowed requests of the key today (the usage flush). */
  const recorded = async (id: number, count: number) => {
    await pollUntil(
      async () => (await stores.keys.usage(id, utcDay(app.clock.now()))).reduce((n, r) => n + r.allowed, 0) >= count
        ? true
        : undefined,
      { timeoutMs: 5000, intervalMs: 20, message: 'usage not flushed' }
    )
  }
  const restartRedis = async () => {
    await redis.server.stop()
    redis.server = await ownRedis(port)
    await pollUntil(async () => {
      app.clock.advance(1001) // the fall-back limiter tries Redis again at most once a second
      return (await (app.limiter as FallbackRateLimiter).check()).status === 'ok' ? true : undefined
    }, { timeoutMs: 10_000, intervalMs: 100, message: 'the instance did not reconnect' })
  }
  return { app, admin, redis, port, tick: () => banSync.tick(), statusOf, recorded, restartRedis }
}

/** Requests until one is refused: how many were served first (the slack: at most 2). */
async function servedBeforeRefusal (statusOf: (key: string) => Promise<string>, key: string): Promise<number> {
  for (let served = 0; served < 10; served++) {
    const status = await statusOf(key)
    if (status === 'rate_limited') return served
    assert.equal(status, '200')
  }
  return Infinity
}

test('a key that spent its day quota is still refused after FLUSHDB, a Redis restart and in fall-back mode, within the slack of a request or two', { timeout: 90_000 }, async (t) => {
  if (!await requireRedisServer(t)) return
  const { app, admin, redis, tick, statusOf, recorded, restartRedis } = await setup(t)
  const { id, key } = await app.makeKey('customer', 'enterprise', { perMinute: 5, perDay: 5 })
  for (let i = 0; i < 5; i++) assert.equal(await statusOf(key), '200')
  assert.equal(await statusOf(key), 'rate_limited')
  await recorded(id, 5)

  // FLUSHDB: the ban poll notices (the sentinel is gone), and the day count comes back from the database.
  await admin.flushdb()
  await tick()
  assert.ok(await servedBeforeRefusal(statusOf, key) <= 1, 'after FLUSHDB')
  for (let i = 0; i < 5; i++) assert.equal(await statusOf(key), 'rate_limited', 'and it stays refused')

  // Redis down: the fall-back counters start from nothing, and are given the day count too.
  await redis.server.stop()
  assert.ok(await servedBeforeRefusal(statusOf, key) <= 2, 'in fall-back mode')
  assert.equal((app.limiter as FallbackRateLimiter).state().status, 'degraded')
  for (let i = 0; i < 5; i++) assert.equal(await statusOf(key), 'rate_limited', 'and it stays refused')

  // Redis back, empty (no persistence).
  await restartRedis()
  await tick()
  assert.ok(await servedBeforeRefusal(statusOf, key) <= 1, 'after a Redis restart')
  for (let i = 0; i < 5; i++) assert.equal(await statusOf(key), 'rate_limited', 'and it stays refused')
})

test('a second ban after Redis lost its state lasts 30 minutes, not 15: escalation continues from the bans in the database', { timeout: 90_000 }, async (t) => {
  if (!await requireRedisServer(t)) return
  const { app, admin, redis, tick, restartRedis } = await setup(t)
  const MINUTE = 60_000
  const banOf = async (key: string) => {
    const codes: string[] = []
    let retryAfter = ''
    for (let i = 0; i < 30 && codes.at(-1) !== 'api_key_banned'; i++) {
      const res = await app.call({ method: 'GET', url: '/v1/pets', key })
      codes.push(res.statusCode === 429 ? String(res.json().code) : String(res.statusCode))
      retryAfter = String(res.headers['retry-after'])
    }
    assert.equal(codes.at(-1), 'api_key_banned', codes.join(' '))
    return Number(retryAfter)
  }
  const cases: Array<[string, () => Promise<void>]> = [
    ['FLUSHDB', async () => { await admin.flushdb() }],
    ['a Redis restart', restartRedis],
    ['fall-back mode', async () => { await redis.server.stop() }]
  ]
  for (const [when, lose] of cases) {
    const { key } = await app.makeKey('customer', 'enterprise', { perMinute: 1, perDay: 1000 })
    assert.equal(await banOf(key), 15 * 60, `first ban (${when})`)
    app.clock.advance(16 * MINUTE) // the ban is over; its record stays in the database
    await lose()
    // The first request notices an outage (fall-back mode); the poll puts the history back.
    await app.call({ method: 'GET', url: '/v1/pets', key })
    await tick()
    app.clock.advance(MINUTE)
    assert.equal(await banOf(key), 30 * 60, `second ban after ${when}`)
    app.clock.advance(31 * MINUTE)
  }
})
