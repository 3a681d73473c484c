// A running instance loses Redis or PostgreSQL, then gets it back (docs/product.md sections 4 and 8).
// Each service sits behind a TCP proxy of the test's, which stands in for the network: cut, every
// connection through it is destroyed and new ones are closed at once; restored, it forwards again.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { openInfra } from '../../src/infra.ts'
import { systemClock } from '../../src/shared/clock.ts'
import { TEST_DATABASE_URL } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'
import {
  call,
  cleanupStack,
  cli,
  createKey,
  isolatedRedis,
  pollUntil,
  requireServices,
  schemaDatabaseUrl,
  startServerProcess,
  tcpProxy,
  TEST_REDIS_URL
} from './helpers.ts'

/** The `day` remaining count of the IETF RateLimit header (`"minute";r=..;t=.., "day";r=..;t=..`). */
function dayRemaining (headers: Headers): number {
  const match = /"day";r=(\d+)/.exec(headers.get('ratelimit') ?? '')
  assert.ok(match !== null, `no day window in RateLimit: ${headers.get('ratelimit')}`)
  return Number(match[1])
}

/** The key's allowed requests of today that the database holds (`keys usage --json`: what the usage flush wrote). */
async function recordedToday (env: Record<string, string>, keyId: number): Promise<number> {
  const [line] = await cli(env, ['keys', 'usage', String(keyId), '--json'])
  const report = JSON.parse(line!) as { days: Array<{ date: string; allowed: number }> }
  const today = new Date().toISOString().slice(0, 10)
  return report.days.find((d) => d.date === today)?.allowed ?? 0
}

/** Resolves once the database holds `count` of the key's requests of today (the usage flush runs every 2 s). */
async function awaitRecorded (env: Record<string, string>, keyId: number, count: number): Promise<void> {
  await pollUntil(
    async () => await recordedToday(env, keyId) === count ? true : undefined,
    { timeoutMs: 15_000, intervalMs: 200, message: `the database did not record ${count} requests of the key` }
  )
}

/** The ratelimit_backend_degraded gauge of GET /metrics (on the private listener). */
async function degradedGauge (url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const match = /^ratelimit_backend_degraded (\d+)$/m.exec(text)
  assert.ok(match !== null, 'no ratelimit_backend_degraded in /metrics')
  return Number(match[1])
}

test('Redis unreachable: the instance keeps serving on its own counters, says so, and returns to Redis by itself', { timeout: 60_000 }, async (t) => {
  if (!await requireServices(t, ['redis'])) return
  const cleanup = cleanupStack(t)
  const dir = tempDir(t, 'petstore-faults-')
  const proxy = await tcpProxy(cleanup, TEST_REDIS_URL)
  const redis = isolatedRedis(cleanup)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, REDIS_URL: redis.url(proxy.via(TEST_REDIS_URL)) }
  // Counted on the day window (the minute one could roll over mid-test; the day one only at
  // midnight UTC).
  const perDay = 10_000
  const customer = await createKey(env, 'customer', 'enterprise', { perMinute: 1000, perDay })
  const server = await startServerProcess(cleanup, env)
  const dayKey = () => `${redis.prefix}petstore:rl:{key:${customer.id}}:d:${Math.floor(Date.now() / 86_400_000)}`
  const redisCount = async () => Number(await redis.client.get(dayKey()))

  // Shared counters: three calls are three in Redis.
  for (let i = 1; i <= 3; i++) {
    assert.equal(dayRemaining((await call(server.url, '/v1/pets', { key: customer.key })).headers), perDay - i)
  }
  assert.equal(await redis.client.get(dayKey()), '3')
  assert.deepEqual(
    (await call(server.url, '/readyz')).body,
    { status: 'ok', checks: { database: { status: 'ok' }, redis: { status: 'ok' } } }
  )
  // The day count survives the switches below through the database (docs/product.md 4.14): wait
  // for the usage flush to hold the three, so that what is put back is known.
  await awaitRecorded(env, customer.id, 3)

  proxy.setUp(false)
  // Readiness sees it before any request does (it pings Redis, at most once a second), and says why.
  const { value: degraded } = await pollUntil(async () => {
    const r = await call(server.url, '/readyz')
    return r.body.status === 'degraded' ? r : undefined
  }, { timeoutMs: 5000, intervalMs: 100, message: '/readyz did not say degraded' })
  assert.equal(degraded.status, 200)
  assert.equal(degraded.body.status, 'degraded')
  const check = (degraded.body.checks as Record<string, { status: string; reason?: string }>).redis
  assert.equal(check?.status, 'degraded')
  assert.match(check.reason ?? '', /^Redis is unreachable/)
  // Requests keep succeeding, counted by the instance itself, without waiting on Redis (a dead
  // Redis costs at most its 250 ms command timeout, once a second). The instance's count starts
  // from the database's 3 (4.14), put back off the request path on the first request: that one
  // is decided before the read answers when it finds the fall-back already chosen (fresh count),
  // after it when it tries Redis first.
  const remaining: number[] = []
  for (let i = 1; i <= 3; i++) {
    const r = await call(server.url, '/v1/pets', { key: customer.key })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    remaining.push(dayRemaining(r.headers))
    assert.ok(r.ms < 1000, `a request took ${Math.round(r.ms)} ms while Redis was cut`)
  }
  const fresh = [perDay - 1, perDay - 4, perDay - 5]
  const seeded = [perDay - 4, perDay - 5, perDay - 6]
  assert.ok(
    [fresh, seeded].some((expected) => remaining.every((r, i) => r === expected[i])),
    `day remaining while degraded: ${remaining.join(', ')}; expected ${fresh.join(', ')} or ${seeded.join(', ')}`
  )
  assert.equal(await redis.client.get(dayKey()), '3')
  const warning = await server.logLine((l) => l.level === 40 && /redis/i.test(String(l.msg)))
  assert.match(String(warning.reason), /^rate limit store unavailable: /)
  assert.equal(await degradedGauge(await server.metricsUrl()), 1)
  await awaitRecorded(env, customer.id, 6)

  proxy.setUp(true)
  // No traffic needed: readiness itself finds Redis again.
  const back = await pollUntil(async () => {
    const r = await call(server.url, '/readyz')
    return r.body.status === 'ok' ? r : undefined
  }, { timeoutMs: 10_000, intervalMs: 100, message: '/readyz did not return to ok after Redis came back' })
  t.diagnostic(`/readyz ok ${back.ms} ms after Redis came back`)
  await server.logLine((l) => l.level === 30 && /Redis is back/.test(String(l.msg)))
  assert.equal(await degradedGauge(await server.metricsUrl()), 0)
  // Shared again: Redis counts the call, and its stale 3 is raised to the database's 6 (the
  // three counted while degraded), put back off the request path: the call is decided on Redis's
  // 3 + 1 when it is counted before the floor lands, on 6 + 1 after.
  const first = dayRemaining((await call(server.url, '/v1/pets', { key: customer.key })).headers)
  t.diagnostic(`day remaining while degraded ${remaining.join(', ')}, then ${first} after`)
  assert.ok(first === perDay - 4 || first === perDay - 7, `day remaining of the first call after Redis came back: ${first}`)
  const settled = Math.max(perDay - first, 6)
  await pollUntil(
    async () => await redisCount() === settled ? true : undefined,
    { timeoutMs: 5000, intervalMs: 50, message: `Redis's day count did not become ${settled} (the database's 6 put back)` }
  )
  // And from then on every call is one more in Redis, and the answer says so.
  assert.equal(dayRemaining((await call(server.url, '/v1/pets', { key: customer.key })).headers), perDay - settled - 1)
  assert.equal(await redisCount(), settled + 1)

  assert.equal(await server.stop(), 0)
})

test('an instance whose Redis answers counts in Redis from its first request (start waits for the first connection)', { timeout: 10_000 }, async (t) => {
  if (!await requireServices(t, ['redis'])) return
  const cleanup = cleanupStack(t)
  const redis = isolatedRedis(cleanup)
  const changes: string[] = []
  const infra = await openInfra(
    loadConfig({ DATABASE_URL: 'sqlite::memory:', REDIS_URL: redis.url() }),
    { clock: systemClock, onLimiterState: (state) => changes.push(state) }
  )
  cleanup(() => infra.close())
  const decision = await infra.limiter.consume('key:1', { perMinute: 5, perDay: 50 })
  assert.equal(decision.day.remaining, 49)
  assert.deepEqual(changes, [])
  assert.equal(await redis.client.get(`${redis.prefix}petstore:rl:{key:1}:d:${Math.floor(Date.now() / 86_400_000)}`), '1')
})

test('PostgreSQL unreachable: requests answer 503 with Retry-After at once, /readyz 503, and service resumes without a restart', { timeout: 30_000 }, async (t) => {
  if (!await requireServices(t, ['postgres'])) return
  const cleanup = cleanupStack(t)
  const proxy = await tcpProxy(cleanup, TEST_DATABASE_URL)
  const db = await schemaDatabaseUrl(t)
  const env = { DATABASE_URL: db.url(proxy.via(TEST_DATABASE_URL)), LOG_LEVEL: 'warn' }
  const staff = await createKey(env, 'staff', 'enterprise', { perMinute: 100_000, perDay: 100_000 })
  const server = await startServerProcess(cleanup, env)
  const category = await call(server.url, '/v1/categories', { method: 'POST', key: staff.key, body: { name: 'Dogs' } })
  assert.equal(category.status, 201)
  assert.equal((await call(server.url, '/readyz')).status, 200)

  proxy.setUp(false)
  // Reads and writes, with the key still in the instance's 2 s key cache and past it.
  const requests = [
    () => call(server.url, '/v1/pets', { key: staff.key }),
    () => call(server.url, `/v1/categories/${category.body.id}`, { key: staff.key }),
    () => call(server.url, '/v1/pets', { method: 'POST', key: staff.key, body: { name: 'Rex', categoryId: category.body.id } })
  ]
  const deadline = Date.now() + 3000
  let n = 0
  while (Date.now() < deadline || n < requests.length) {
    const r = await requests[n++ % requests.length]!()
    assert.equal(r.status, 503, JSON.stringify(r.body))
    assert.equal(r.body.code, 'service_unavailable')
    assert.equal(r.body.status, 503)
    assert.equal(typeof r.body.message, 'string')
    assert.equal(typeof r.body.requestId, 'string')
    assert.match(r.headers.get('retry-after') ?? '', /^\d+$/)
    assert.ok(r.ms < 3000, `a request took ${Math.round(r.ms)} ms while the database was cut`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const down = await call(server.url, '/readyz')
  assert.equal(down.status, 503)
  assert.equal((down.body.checks as Record<string, { status: string }>).database?.status, 'down')
  assert.ok(down.ms < 3000)

  proxy.setUp(true)
  const back = await pollUntil(async () => {
    const r = await call(server.url, '/v1/pets', { method: 'POST', key: staff.key, body: { name: 'Rex', categoryId: category.body.id } })
    return r.status === 201 ? r : undefined
  }, { timeoutMs: 5000, intervalMs: 100, message: 'the instance did not serve again within 5 s of the database coming back' })
  t.diagnostic(`serving again ${back.ms} ms after the database came back`)
  // /readyz checks at most once a second.
  await pollUntil(
    async () => (await call(server.url, '/readyz')).status === 200 ? true : undefined,
    { timeoutMs: 2000, intervalMs: 100, message: '/readyz not 200 within 2 s' }
  )
  assert.equal((await call(server.url, '/v1/pets', { key: staff.key })).body.length, 1)

  assert.equal(await server.stop(), 0)
})
