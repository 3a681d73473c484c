// GET /metrics: exact counts with bounded labels, the limiter's degraded state, no key anywhere;
// and a server that drains the request in flight when it is closed.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { collectDefaultMetrics, Registry } from 'prom-client'
import { loadConfig } from '../../src/config.ts'
import { createMetrics } from '../../src/ops/metrics.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { createFallbackRateLimiter, RETRY_INTERVAL_MS } from '../../src/ratelimit/fallback.ts'
import type { RateLimiter } from '../../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { startServer } from '../../src/server.ts'
import { systemClock } from '../../src/shared/clock.ts'
import { buildTestApp } from '../helpers/app.ts'

type Samples = { name: string; labels: Record<string, string>; value: number }[]

/** Parses the Prometheus text format (one sample a line; label values here never hold quotes). */
function parse (text: string): Samples {
  const samples: Samples = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    assert.ok(match !== null, `not a Prometheus sample: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, name, value] of (match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels[name!] = value!
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

/** The value of the sample with exactly these labels, or undefined. */
function valueOf (samples: Samples, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = JSON.stringify(Object.entries(labels).sort())
  return samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === wanted)?.value
}

async function scrape (app: FastifyInstance): Promise<{ text: string; samples: Samples }> {
  const res = await app.inject({ method: 'GET', url: '/metrics' })
  assert.equal(res.statusCode, 200)
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/)
  return { text: res.body, samples: parse(res.body) }
}

test('GET /metrics counts requests by operation, method and status, rate-limit decisions, bans and deprecated calls per key, and holds no key', async (t) => {
  const { app, call, makeKey, keys, stores } = await buildTestApp(t)
  const free = await makeKey('customer', 'free')
  const migrating = await makeKey('customer')

  assert.equal((await call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
  assert.equal((await call({ method: 'GET', url: '/v1/nope/42' })).statusCode, 404)
  assert.equal((await call({ method: 'GET', url: '/v1/pets/1', key: migrating.key })).statusCode, 404)
  assert.equal((await call({ method: 'OPTIONS', url: '/v1/pets', key: null, headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET' } })).statusCode, 204)
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
  // The free plan's 60 a minute, then 20 refusals and the 21st, which starts a ban.
  for (let i = 0; i < 60; i++) assert.equal((await call({ method: 'GET', url: '/v1/categories', key: free.key })).statusCode, 200)
  const codes: string[] = []
  for (let i = 0; i < 21; i++) codes.push((await call({ method: 'GET', url: '/v1/categories', key: free.key })).json().code)
  assert.deepEqual(codes, [...Array(20).fill('rate_limited'), 'api_key_banned'])

  const { text, samples } = await scrape(app)
  const requests = (operation: string, method: string, status: number) =>
    valueOf(samples, 'http_requests_total', { operation, method, status: String(status) })
  assert.equal(requests('listPets', 'GET', 200), 1)
  assert.equal(requests('unknown', 'GET', 404), 1, 'an unmatched path is counted as unknown, not by its URL')
  assert.equal(requests('getPet', 'GET', 404), 1, 'a 404 of a known operation keeps its operationId')
  assert.equal(requests('preflight', 'OPTIONS', 204), 1)
  assert.equal(requests('/healthz', 'GET', 200), 1)
  assert.equal(requests('listCategories', 'GET', 200), 60)
  assert.equal(requests('listCategories', 'GET', 429), 21)
  assert.equal(samples.filter((s) => s.name === 'http_requests_total').length, 7, 'no other series')
  assert.equal(valueOf(samples, 'http_request_duration_seconds_count', { operation: 'listCategories', method: 'GET' }), 81)
  assert.equal(valueOf(samples, 'http_request_duration_seconds_bucket', { operation: 'listCategories', method: 'GET', le: '+Inf' }), 81)
  assert.ok(valueOf(samples, 'http_request_duration_seconds_sum', { operation: 'listPets', method: 'GET' })! > 0)

  // Allowed: listPets, the 404, getPet and 60 categories; the preflight and /healthz cost nothing.
  assert.equal(valueOf(samples, 'ratelimit_decisions_total', { decision: 'allowed' }), 63)
  assert.equal(valueOf(samples, 'ratelimit_decisions_total', { decision: 'limited' }), 20)
  assert.equal(valueOf(samples, 'ratelimit_decisions_total', { decision: 'banned' }), 1)
  assert.equal(valueOf(samples, 'ratelimit_bans_total'), 1)
  assert.equal(valueOf(samples, 'deprecated_operation_calls_total', { operation: 'getPet', key_id: String(migrating.id) }), 1)
  assert.equal(valueOf(samples, 'ratelimit_backend_degraded'), 0)

  // Node's default metrics, and the pool where there is one.
  assert.ok(valueOf(samples, 'process_cpu_user_seconds_total')! > 0)
  assert.ok(valueOf(samples, 'nodejs_heap_size_used_bytes')! > 0)
  // Every family of prom-client's defaults but its per-GC histogram (src/ops/metrics.ts, PROCESS_METRICS).
  const everyDefault = new Registry()
  collectDefaultMetrics({ register: everyDefault })
  const families = (exposition: string) => new Set([...exposition.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!))
  const ours = families(text)
  const missing = [...families(await everyDefault.metrics())].filter((name) => !ours.has(name))
  assert.deepEqual(missing, ['nodejs_gc_duration_seconds'])
  if (stores.engine === 'postgres') {
    assert.ok(valueOf(samples, 'db_pool_connections', { state: 'total' })! >= 1)
    assert.equal(typeof valueOf(samples, 'db_pool_connections', { state: 'idle' }), 'number')
    assert.equal(valueOf(samples, 'db_pool_connections', { state: 'waiting' }), 0)
  } else {
    assert.doesNotMatch(text, /db_pool_connections/, 'SQLite has no pool')
  }

  for (const key of [...Object.values(keys), free.key, migrating.key]) assert.ok(!text.includes(key), 'an API key is in /metrics')
  assert.doesNotMatch(text, /psk_|\/v1\/nope|\/v1\/pets\/1/)
})

test('http_requests_total counts each request once, however many scrapes come between: a later scrape adds only the new requests', async (t) => {
  const { app, call } = await buildTestApp(t)
  const listPets = async () => valueOf((await scrape(app)).samples, 'http_requests_total', { operation: 'listPets', method: 'GET', status: '200' })
  for (let i = 0; i < 3; i++) assert.equal((await call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
  assert.equal(await listPets(), 3)
  assert.equal(await listPets(), 3, 'a scrape with no request between counts nothing again')
  for (let i = 0; i < 2; i++) assert.equal((await call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
  const { samples } = await scrape(app)
  assert.equal(valueOf(samples, 'http_requests_total', { operation: 'listPets', method: 'GET', status: '200' }), 5)
  assert.equal(valueOf(samples, 'http_request_duration_seconds_count', { operation: 'listPets', method: 'GET' }), 5)
  assert.equal(valueOf(samples, 'http_requests_total', { operation: '/metrics', method: 'GET', status: '200' }), 2, 'the two scrapes before this one')
})

test('ratelimit_backend_degraded is 1 while the limiter has fallen back to memory and 0 once the shared store answers', async (t) => {
  const metrics = createMetrics()
  const control = { down: true }
  const { app, call, clock } = await buildTestApp(t, {
    deps: { metrics, events: metrics.events },
    limiter: (now) => {
      // A stand-in for Redis that refuses connections while `down`.
      const shared = createMemoryRateLimiter({ now })
      const guard = <T>(answer: () => Promise<T>): Promise<T> => control.down
        ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:6379'), { code: 'ECONNREFUSED' }))
        : answer()
      const primary: RateLimiter = {
        consume: (s, q) => guard(async () => shared.consume(s, q)),
        peek: (s, q) => guard(async () => shared.peek(s, q)),
        unban: (s) => guard(() => shared.unban(s)),
        close: () => shared.close()
      }
      return createFallbackRateLimiter({
        primary,
        fallback: createMemoryRateLimiter({ now }),
        now,
        onStateChange: metrics.onLimiterState
      })
    }
  })

  assert.equal((await call({ method: 'GET', url: '/v1/pets' })).statusCode, 200, 'the API keeps serving')
  assert.equal(valueOf((await scrape(app)).samples, 'ratelimit_backend_degraded'), 1)

  control.down = false
  clock.advance(RETRY_INTERVAL_MS)
  assert.equal((await call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
  const { samples } = await scrape(app)
  assert.equal(valueOf(samples, 'ratelimit_backend_degraded'), 0)
  assert.equal(valueOf(samples, 'ratelimit_decisions_total', { decision: 'allowed' }), 2, 'the events given are counted in the metrics given')
})

test('startServer serves /metrics over HTTP on its private listener, not the public one, and close() lets the request in flight finish before it stops', async (t) => {
  const server = await startServer(loadConfig({ DATABASE_URL: 'sqlite::memory:', PORT: '0', LOG_LEVEL: 'silent' }))
  t.after(() => server.close())
  const { key } = await createKeyAdmin(server.infra.stores.keys, systemClock).create({ role: 'customer', plan: 'free' })

  assert.equal((await fetch(`${server.url}/v1/categories`, { headers: { 'x-api-key': key } })).status, 200)
  assert.equal((await fetch(`${server.url}/metrics`)).status, 404)
  const text = await (await fetch(`${server.metricsUrl}/metrics`)).text()
  const samples = parse(text)
  assert.equal(valueOf(samples, 'http_requests_total', { operation: 'listCategories', method: 'GET', status: '200' }), 1)
  assert.equal(valueOf(samples, 'ratelimit_decisions_total', { decision: 'allowed' }), 1)
  assert.equal(valueOf(samples, 'ratelimit_backend_degraded'), 0)
  assert.ok(!text.includes(key))

  // A slow list: the request is in flight when the server is told to stop.
  const pets = server.infra.stores.pets
  const listPets = pets.listPets.bind(pets)
  let entered!: () => void
  const inFlight = new Promise<void>((resolve) => { entered = resolve })
  pets.listPets = async (...args) => {
    entered()
    await new Promise((resolve) => setTimeout(resolve, 200))
    return listPets(...args)
  }
  const slow = fetch(`${server.url}/v1/pets`, { headers: { 'x-api-key': key } })
  await inFlight
  const stopAt = Date.now()
  const closed = server.close()
  const res = await slow
  assert.equal(res.status, 200)
  assert.deepEqual(await res.json(), [])
  await closed
  // Not held by the client's keep-alive connection (Fastify keeps one open for 72 s).
  assert.ok(Date.now() - stopAt < 5000, `the stop took ${Date.now() - stopAt} ms`)
  await assert.rejects(fetch(`${server.url}/healthz`), 'the server no longer accepts connections')
})
