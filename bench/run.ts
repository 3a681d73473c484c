// npm run bench [-- --rounds 4 --slice 2 …]: how fast the API serves, on this machine, right now,
// next to a bare node:http server measured in the same run. Speed is measured here, not asserted
// in tests (README "Performance", docs/performance.md "How to run the benchmark").
//
// The jobs live apart: options.ts (the command line), processes.ts (server and generator
// processes, pinned to their cores), scenarios.ts (the catalogue and what each scenario sends),
// load.ts (wrk or autocannon, and the interleaved rounds), report.ts (rows, targets, tables,
// files), limiter.ts (the limiter without HTTP). This file runs them in order.
//
// Everything stays on loopback and cleans up after itself: the SQLite file lives in a temp dir,
// the PostgreSQL runs work in a fresh schema that is dropped, and the Redis counters use a key
// prefix of their own that is deleted. A scenario with a single error, timeout or non-2xx
// response fails the run (exit 1): a benchmark of 429s or 500s would be a lie.
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import type pg from 'pg'
import { createMemoryRateLimiter } from '../src/ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from '../src/ratelimit/redis.ts'
import { createPostgresStores } from '../src/storage/postgres/index.ts'
import { createSqliteStores } from '../src/storage/sqlite/index.ts'
import type { Stores } from '../src/storage/stores.ts'
import { deleteRedisKeys, postgresUnavailableReason, redisUnavailableReason, safeUrl, withPostgres } from '../scripts/services.ts'
import { microBenchmark } from './limiter.ts'
import {
  GeneratorMissing,
  measure,
  measureSideBySide,
  measureTogether,
  openGenerator,
  plainWrk,
  type Generator,
  type Load,
  type Measured,
  type Slice
} from './load.ts'
import { parseOptions, USAGE, type Options } from './options.ts'
import { hasCommand, killChildren, placement, startServer, type ChildServer, type Placement } from './processes.ts'
import {
  bareRow,
  failedRow,
  instanceTitles,
  logCostText,
  memoryRow,
  notesOf,
  referenceCheck,
  refusalCheck,
  keyedCheck,
  renderText,
  roundTripText,
  save,
  scenarioRow,
  SETUP_TITLES,
  successorCheck,
  toggleRow,
  versusRow,
  versusText,
  webhookText,
  type Document,
  type Memory,
  type MicroResult,
  type ReferenceCheck,
  type ReferencePair,
  type Row,
  type SetupId
} from './report.ts'
import {
  BARE_LOAD,
  BARE_PROBE,
  ORDER_STOCK,
  probe,
  scenarios,
  seed,
  type Probe,
  type Scenario,
  type Seeded
} from './scenarios.ts'
import { seedPeers, type PeerFiles } from './peers/seed.ts'
import type { PetstoreChildSettings, ProcessStats } from './server.ts'
import { instanceLayout, startInstances } from './instances.ts'
import { RECEIVER_HOST, stockOf, withWebhook } from './webhooks.ts'

const HERE = path.dirname(fileURLToPath(import.meta.url))

type Cleanup = () => Promise<unknown>

function describe (error: unknown): string {
  const { code, message } = error as { code?: string; message?: string }
  return code ?? message ?? String(error)
}

function gitCommit (): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: HERE, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return null
  }
}

/** The URL with the schema as search_path, the way the stores' own `schema` option does it. */
function withSearchPath (url: string, schema: string): string {
  const u = new URL(url)
  u.searchParams.set('options', `${u.searchParams.get('options') ?? ''} -c search_path=${schema}`.trim())
  return u.toString()
}

/** ioredis reads client options from the URL's query: every key of the server gets the prefix. */
function withKeyPrefix (url: string, prefix: string): string {
  const u = new URL(url)
  u.searchParams.set('keyPrefix', prefix)
  return u.toString()
}

async function seedStores (
  label: string,
  open: () => Promise<Stores>,
  pets: number,
  databaseUrl: string
): Promise<Seeded> {
  const started = performance.now()
  const stores = await open()
  const seeded = await seed(stores, pets, databaseUrl).finally(() => stores.close())
  process.stdout.write(`  (${label}: ${seeded.petIds.length.toLocaleString('en-US')} pets seeded in ${((performance.now() - started) / 1000).toFixed(1)} s)\n`)
  return seeded
}

interface Run {
  opts: Options
  place: Placement
  generator: Generator
  bare: { base: string; stats: () => Promise<ProcessStats>; slices: Slice[] }
  rows: Row[]
  memory: Memory[]
  /** The webhook receiver, started on the generator's core for the first webhooks scenario. */
  receiver: () => Promise<ChildServer>
  /** --peers: the two peers, started on the servers' core, measured beside the SQLite setup. */
  peers: Peers | null
}

interface Peer {
  setup: 'peer-afternoon' | 'peer-json-server'
  server: ChildServer
  load: (scenario: Scenario) => Load
  probe: (scenario: Scenario) => Probe
}
type Peers = Peer[]

/**
 * The peers of --peers on their seeded files, each the same read (a random pet of the catalogue)
 * and the same order (one unit of the stocked pet) as ours, by its own paths and key.
 */
async function startPeers (place: Placement, files: PeerFiles, seeded: Seeded): Promise<Peers> {
  const orderBody = JSON.stringify({ petId: seeded.orderPetId, quantity: 1 })
  const probeId = seeded.petIds[Math.floor(seeded.petIds.length / 2)]!
  const peer = (
    setup: Peer['setup'],
    server: ChildServer,
    paths: { pet: string; orders: string },
    headers: Record<string, string>
  ): Peer => ({
    setup,
    server,
    load: (scenario) => scenario.id === 'get'
      ? { kind: 'paths', paths: seeded.petIds.map((id) => `${paths.pet}${id}`), headers }
      : { kind: 'static', method: 'POST', path: paths.orders, body: orderBody, headers },
    probe: (scenario) => scenario.id === 'get'
      ? {
          method: 'GET', path: `${paths.pet}${probeId}`, expectStatus: 200,
          check: (_r, body) => (body as { id?: number } | null)?.id === probeId ? null : 'expected the pet'
        }
      : { method: 'POST', path: paths.orders, body: orderBody, expectStatus: 201, check: () => null }
  })
  const [afternoon, jsonServer] = await Promise.all([
    startServer('afternoon app', place.server, { peer: 'afternoon', file: files.afternoonFile }),
    startServer('json-server', place.server, { peer: 'json-server', file: files.jsonServerFile })
  ])
  return [
    peer('peer-afternoon', afternoon, { pet: '/v1/pets/', orders: '/v1/store/orders' }, { 'x-api-key': files.afternoonKey }),
    peer('peer-json-server', jsonServer, { pet: '/pets/', orders: '/orders' }, {})
  ]
}

function report (run: Run, row: Row): void {
  run.rows.push(row)
  const where = row.setup === 'bare' ? '' : `${SETUP_TITLES[row.setup]}, `
  const cpu = row.cpuUsPerReq === null || row.cpuUsPerReq === undefined
    ? ''
    : `, CPU ${row.cpuUsPerReq.toFixed(1)} µs/req (${row.cpuRatio?.toFixed(2) ?? '-'}x of bare's)`
  const p99 = row.p99Ratio === null || row.p99Ratio === undefined
    ? ''
    : ` (${row.p99Ratio.toFixed(2)}x bare's ${row.bareP99Ms?.toFixed(2) ?? '-'} ms)`
  const rate = `${Math.round(row.reqPerSec ?? 0).toLocaleString('en-US')} ${row.webhook === undefined ? 'req/s' : 'orders/s'}`
  const hooks = row.webhook !== undefined
    ? `; ${webhookText(row.webhook)}`
    : row.versus !== undefined
      ? `; ${versusText(row.versus)}`
      : row.logCost !== undefined ? `; ${logCostText(row.logCost)}` : ''
  const figures = row.status === 'ok'
    ? `${rate}, p50 ${row.p50Ms?.toFixed(2)} ms, p99 ${row.p99Ms?.toFixed(2)} ms${p99}, ${row.ratio?.toFixed(2)}x of bare node:http${cpu}${hooks}`
    : `${row.status.toUpperCase()}: ${row.reason ?? ''}`
  const target = row.target === null ? '' : `; target ${row.target}: ${row.met === true ? 'met' : 'MISSED'}`
  process.stdout.write(`  ${where}${row.title}: ${figures}${target}\n`)
}

/** Starts the API on this setup, measures every scenario against it, and records its memory. */
async function runSetup (
  run: Run,
  setup: SetupId,
  env: Record<string, string>,
  seeded: Seeded,
  start?: (settings: PetstoreChildSettings) => Promise<ChildServer>
): Promise<Row[]> {
  // One key places every order of a run: the enterprise cap (1,000 open orders) is lifted as
  // ORDER_LIMITS allows, so the run measures placing orders, not refusing them.
  // WEBHOOK_ALLOWED_HOSTS lets the webhooks scenario's endpoint point at the receiver on loopback
  // (docs/configuration.md); it changes nothing for the other scenarios.
  const settings = {
    petstore: {
      env: {
        ...env,
        ORDER_LIMITS: 'enterprise=none',
        LOG_LEVEL: run.opts.logLevel,
        WEBHOOK_ALLOWED_HOSTS: RECEIVER_HOST,
        ...run.opts.serverEnv
      }
    }
  }
  // A first start, stopped at once, fills Node's compile cache (NODE_COMPILE_CACHE in the start
  // command): the measured server then starts as every later start of an installed server does,
  // from the cache, without loading the type stripper (docs/performance.md, "Memory").
  await (await startServer(SETUP_TITLES[setup], run.place.server, settings)).stop()
  const server = start === undefined
    ? await startServer(SETUP_TITLES[setup], run.place.server, settings)
    : await start(settings.petstore)
  const rows: Row[] = []
  const all = scenarios(seeded, run.opts.only, run.opts.connections)
  // A scenario with an environment of its own (the refusal row's cap) runs on a server of its
  // own, after this one has stopped, on the same database.
  const apart = all.filter((scenario) => scenario.serverEnv !== undefined)
  // A row of two servers (the request log on vs off) runs on two fresh ones, after this one.
  const toggled = all.filter((scenario) => scenario.versusEnv !== undefined)
  try {
    const rssStart = await server.rss()
    const together = all.filter((scenario) => scenario.serverEnv === undefined && scenario.versusEnv === undefined)
    await measureOn(run, setup, server, together, rows)
    successorCheck(rows)
    keyedCheck(rows)
    run.memory.push(memoryRow(setup, rssStart, await server.rss()))
  } finally {
    await server.stop()
  }
  // The request log's row: two fresh servers on the same database, one with the scenario's
  // versusEnv, after the setup's server has stopped. The setup's server ran every scenario before
  // (a larger heap, a webhook backlog still draining): beside a fresh one it made the log look
  // 10 to 13% dearer than it is.
  for (const scenario of toggled) {
    const own = { petstore: { env: { ...settings.petstore.env, ...scenario.versusEnv } } }
    const label = `${SETUP_TITLES[setup]}, ${Object.entries(scenario.versusEnv!).map(([k, v]) => `${k}=${v}`).join(' ')}`
    const on = start === undefined
      ? await startServer(SETUP_TITLES[setup], run.place.server, settings)
      : await start(settings.petstore)
    try {
      const other = start === undefined
        ? await startServer(label, run.place.server, own)
        : await start(own.petstore)
      try {
        const loadAverage = Math.round(os.loadavg()[0]! * 10) / 10
        const row = await measureToggle(run, setup, scenario, on, other)
        row.loadAverage = loadAverage
        rows.push(row)
        report(run, row)
      } finally {
        await other.stop()
      }
    } finally {
      await on.stop()
    }
  }
  for (const scenario of apart) {
    const own = { petstore: { env: { ...settings.petstore.env, ...scenario.serverEnv } } }
    const alone = start === undefined
      ? await startServer(SETUP_TITLES[setup], run.place.server, own)
      : await start(own.petstore)
    try {
      await measureOn(run, setup, alone, [scenario], rows)
    } finally {
      await alone.stop()
    }
  }
  refusalCheck(rows)
  return rows
}

/** Measures the scenarios, one after the other, against one server; adds their rows to `rows`. */
async function measureOn (run: Run, setup: SetupId, server: ChildServer, list: Scenario[], rows: Row[]): Promise<void> {
  for (const scenario of list) {
    const headers = scenario.load.headers
    let row: Row
    const loadAverage = Math.round(os.loadavg()[0]! * 10) / 10
    const prepared = await scenario.prepare?.(server.base).catch((error: unknown) => `preparing failed: ${describe(error)}`) ?? null
    if (prepared !== null) {
      row = failedRow(setup, scenario, prepared)
      row.loadAverage = loadAverage
      rows.push(row)
      report(run, row)
      continue
    }
    const peers = setup === 'sqlite' && (scenario.id === 'get' || scenario.id === 'orders') ? run.peers : null
    if (peers !== null) {
      for (const r of await measureWithPeers(run, setup, scenario, server, headers, peers)) {
        r.loadAverage = loadAverage
        rows.push(r)
        report(run, r)
      }
      continue
    }
    const probeAndMeasure = async (verify?: (measured: Measured) => Promise<string | null>): Promise<Row> => {
      const wrong = await probe(server.base, headers, scenario.probe).catch((error: unknown) => `the probe failed: ${describe(error)}`)
      if (wrong !== null) return failedRow(setup, scenario, wrong)
      const slice = scenario.id === 'mixed' ? run.opts.mixedSlice : run.opts.slice
      // GC pauses are reported for the mixed run's rounds only; observing them costs (bench/server.ts).
      const watchGc = scenario.id === 'mixed'
      if (watchGc) server.watchGc(true)
      return await measure(
        run.generator,
        { base: server.base, stats: () => server.stats() },
        scenario.load,
        { ...run.bare, load: BARE_LOAD },
        { ...run.opts, slice }
      ).then(
        async (measured) => {
          const wrongCount = verify === undefined ? null : await verify(measured)
          return wrongCount === null ? scenarioRow(setup, scenario, measured) : failedRow(setup, scenario, wrongCount)
        },
        (error: unknown) => failedRow(setup, scenario, describe(error))
      ).finally(() => { if (watchGc) server.watchGc(false) })
    }
    if (scenario.stockPetId !== undefined) {
      const petId = scenario.stockPetId
      const before = await stockOf(server.base, headers, petId)
      row = await probeAndMeasure(async (measured) => {
        // 1: the probe. An order in flight when a wrk run stops is placed but not counted, so the
        // stock may lose more than was counted, never less.
        const counted = 1 + (measured.warmupRequests ?? 0) + measured.slices.reduce((n, s) => n + s.requests, 0)
        const lost = before - await stockOf(server.base, headers, petId)
        return lost >= counted ? null : `${counted} orders answered, ${lost} taken from the stock: ${counted - lost} or more were replays of a key sent before`
      })
    } else if (scenario.webhookPetId === undefined) {
      row = await probeAndMeasure()
    } else {
      const petId = scenario.webhookPetId
      row = await run.receiver()
        .then((receiver) => withWebhook(
          { base: server.base, headers },
          receiver,
          { hookPath: `/hooks/${setup}`, petId, drainSeconds: run.opts.drain },
          probeAndMeasure
        ))
        .then(({ result, webhook }) => {
          const measured: Row = { ...result, webhook }
          if (result.status === 'ok' && webhook.drainSeconds === null) {
            return { ...measured, status: 'failed' as const, reason: `${webhook.delivered} of ${webhook.orders} order.created reached the receiver within ${run.opts.drain} s after the load (--drain)` }
          }
          return measured
        }, (error: unknown) => failedRow(setup, scenario, describe(error)))
    }
    row.loadAverage = loadAverage
    rows.push(row)
    report(run, row)
  }
}

/**
 * Waits until each server spends under 2% of a core for two seconds in a row (at most 60 s):
 * background work a fresh start inherits, measured against one server and not the other, would
 * be charged to the wrong one.
 */
async function untilIdle (servers: ChildServer[]): Promise<void> {
  const deadline = Date.now() + 60_000
  for (const server of servers) await server.stats()
  let quiet = 0
  while (quiet < 2 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const spent = await Promise.all(servers.map((server) => server.stats()))
    quiet = spent.every((stats) => stats.cpuUs < 20_000) ? quiet + 1 : 0
  }
}

/**
 * The request log's row: the same load against `on` and `off` (two fresh servers, `off` started
 * with the scenario's versusEnv) in the same rounds; the row is `on`'s, with the CPU `off` spared.
 */
async function measureToggle (
  run: Run,
  setup: SetupId,
  scenario: Scenario,
  on: ChildServer,
  off: ChildServer
): Promise<Row> {
  for (const server of [on, off]) {
    const wrong = await probe(server.base, scenario.load.headers, scenario.probe)
      .catch((error: unknown) => `the probe failed: ${describe(error)}`)
    if (wrong !== null) return failedRow(setup, scenario, wrong)
  }
  try {
    // Both servers idle first: the first started may still be catching up on the setup's
    // leftovers (a webhook backlog, a prune of a grown table), which is not the log's cost.
    await untilIdle([on, off])
    const targets = [on, off].map((server) => ({
      target: { base: server.base, stats: () => server.stats() },
      load: scenario.load
    }))
    // The row's req/s and latency: each server alone, beside the bare one, as every row.
    const bare = { ...run.bare, load: BARE_LOAD }
    const [onMeasured, offMeasured] = await measureTogether(run.generator, targets, bare, run.opts)
    // The log's share: both at once, twice the rounds of a row (six by default), their median too.
    const rounds = run.opts.rounds * 2
    const [onSide, offSide] = await measureSideBySide(run.generator, targets, { ...run.opts, rounds })
    return toggleRow(scenarioRow(setup, scenario, onMeasured!), offMeasured!, [onSide!, offSide!])
  } catch (error) {
    return failedRow(setup, scenario, describe(error))
  }
}

/**
 * --peers: our scenario and each peer's, in the same rounds (measureTogether); our row, then each
 * peer's row with our ratio to it.
 */
async function measureWithPeers (
  run: Run,
  setup: SetupId,
  scenario: Scenario,
  server: ChildServer,
  headers: Record<string, string>,
  peers: Peers
): Promise<Row[]> {
  const peerScenario = (of: Scenario): Scenario => ({ ...scenario, title: of.id === 'get' ? 'GET a pet by id' : 'POST an order',
    note: of.id === 'get'
      ? 'the same random pet per request as ours, by the peer\'s own path; the afternoon app is bench/peers/afternoon.ts '
      + '(Fastify, node:sqlite, a key lookup per request, X-RateLimit-Limit and -Remaining), json-server runs at its '
      + 'defaults (request log, CORS, gzip, lowdb file)'
      : 'one unit of the same pet per order, by the peer\'s own path: the afternoon app commits each order alone '
        + '(synchronous=FULL, an fsync per order); json-server rewrites its db.json, keeps no stock'
  })
  const wrong = await probe(server.base, headers, scenario.probe).catch((error: unknown) => `the probe failed: ${describe(error)}`)
  if (wrong !== null) return [failedRow(setup, scenario, wrong)]
  const measured: Peer[] = []
  const failed: Row[] = []
  for (const peer of peers) {
    const peerWrong = await probe(peer.server.base, peer.load(scenario).headers, peer.probe(scenario))
      .catch((error: unknown) => `the probe failed: ${describe(error)}`)
    if (peerWrong === null) measured.push(peer)
    else failed.push(failedRow(peer.setup, peerScenario(scenario), peerWrong))
  }
  let results: Measured[]
  try {
    results = await measureTogether(
      run.generator,
      [
        { target: { base: server.base, stats: () => server.stats() }, load: scenario.load },
        ...measured.map((peer) => ({
          target: { base: peer.server.base, stats: () => peer.server.stats() },
          load: peer.load(scenario)
        }))
      ],
      { ...run.bare, load: BARE_LOAD },
      run.opts
    )
  } catch (error) {
    return [failedRow(setup, scenario, describe(error)), ...failed]
  }
  const ours = scenarioRow(setup, scenario, results[0]!)
  return [
    ours,
    ...measured.map((peer, i) => {
      const theirs = results[i + 1]!
      return versusRow(scenarioRow(peer.setup, peerScenario(scenario), theirs), ours, theirs, results[0]!)
    }),
    ...failed
  ]
}

/** The sum of the day counters under the prefix: proof that the requests went through Redis. */
async function redisDayCount (client: Redis, prefix: string): Promise<number> {
  let cursor = '0'
  let total = 0
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*:d:*`, 'COUNT', 1000)
    cursor = next
    for (const key of keys) total += Number(await client.get(key) ?? 0)
  } while (cursor !== '0')
  return total
}

/**
 * `--instances N` (issue 34): one instance, then N, behind the same proxy (nginx with
 * deploy/nginx.conf, or bench/proxy.ts), on one PostgreSQL schema and one Redis prefix; reads by
 * id and orders. Each instance's CPU is summed into the row's CPU µs/req.
 */
async function runInstances (run: Run, cleanups: Cleanup[], redisReason: string | null): Promise<void> {
  const { opts } = run
  const why = opts.postgresUrl === null
    ? 'turned off with --postgres off'
    : opts.redisUrl === null
      ? 'turned off with --redis off'
      : await postgresUnavailableReason(opts.postgresUrl) ?? redisReason
  if (why !== null || opts.postgresUrl === null || opts.redisUrl === null) {
    report(run, failedRow('instances-n', { id: 'all', title: 'every scenario' }, why ?? 'no PostgreSQL or Redis', 'skipped'))
    return
  }
  const pgUrl = opts.postgresUrl
  const schema = `petstore_bench_${randomBytes(6).toString('hex')}`
  await withPostgres(pgUrl, (c) => c.query(`CREATE SCHEMA ${schema}`))
  cleanups.push(() => withPostgres(pgUrl, (c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)))
  const schemaUrl = withSearchPath(pgUrl, schema)
  const seeded = await seedStores(
    `PostgreSQL schema ${schema}`,
    () => createPostgresStores(pgUrl, { schema, poolMax: 16 }),
    opts.pets,
    schemaUrl
  )
  const prefix = `petstore:bench:${randomBytes(6).toString('hex')}:`
  const client = new Redis(opts.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null })
  client.on('error', () => {})
  await client.connect()
  cleanups.push(async () => { await deleteRedisKeys(client, prefix); client.disconnect() })
  // As compose.yaml runs them: TRUST_PROXY, since only the proxy reaches the instances.
  const env = { DATABASE_URL: schemaUrl, REDIS_URL: withKeyPrefix(opts.redisUrl, prefix), TRUST_PROXY: 'true' }
  const only = new Set([...opts.only].filter((id) => id === 'get' || id === 'orders'))
  instanceTitles(opts.instances, hasCommand('nginx', ['-v']) ? 'nginx' : 'a node:http proxy')
  for (const [setup, count] of [['instances-1', 1], ['instances-n', opts.instances]] as const) {
    const layout = instanceLayout(count, opts.pin)
    await runSetup({ ...run, opts: { ...opts, only } }, setup, env, seeded, async (settings) => {
      const started = await startInstances(SETUP_TITLES[setup], layout, settings)
      process.stdout.write(`  (${count} instance${count === 1 ? '' : 's'} behind ${started.proxy}; ${layout.describe})\n`)
      return started
    })
  }
}

async function main (): Promise<number> {
  let opts: Options | null
  try {
    opts = parseOptions(process.argv.slice(2))
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`)
    return 2
  }
  if (opts === null) { process.stdout.write(`${USAGE}\n`); return 0 }

  const cleanups: Cleanup[] = []
  const cleanUp = async (): Promise<void> => {
    for (const fn of cleanups.splice(0).reverse()) {
      await fn().catch((error: unknown) => process.stderr.write(`cleanup: ${describe(error)}\n`))
    }
  }
  process.once('SIGINT', () => {
    process.stderr.write('\ninterrupted: stopping the servers and cleaning up\n')
    killChildren('SIGTERM')
    void cleanUp().finally(() => process.exit(130))
  })

  const place = placement(opts.pin)
  let generator: Generator
  try {
    generator = await openGenerator(opts.generator, place.generator)
  } catch (error) {
    if (error instanceof GeneratorMissing) { process.stderr.write(`bench: ${error.message}\n`); return 2 }
    throw error
  }
  cleanups.push(() => generator.close())

  const cpus = os.cpus()
  const machine = {
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30 * 10) / 10,
    loadAverageAtStart: os.loadavg().map((l) => Math.round(l * 100) / 100),
    loadAverageAtEnd: [] as number[],
    postgresRoundTripUs: null as number | null
  }
  const referencePairs: Omit<ReferencePair, 'differencePct'>[] = []
  let reference: ReferenceCheck | null = null
  const checkReference = generator.name === 'wrk' && opts.reference > 0
  // Plain wrk and the bench's own load on the bare server, one right after the other (at the end
  // in the other order, so that a steady drift does not favour one of them).
  const plainReference = async (base: string, when: 'start' | 'end'): Promise<void> => {
    if (!checkReference) return
    const scripted = async (): Promise<number> => {
      const s = await generator.run(base, BARE_LOAD, opts.connections, opts.reference)
      return s.requests / s.seconds
    }
    const benchFirst = when === 'end' ? await scripted() : null
    const plain = await plainWrk(place.generator, `${base}/`, opts.connections, opts.reference)
    const benchReqPerSec = benchFirst ?? await scripted()
    referencePairs.push({ when, plain, benchReqPerSec })
    process.stdout.write(`  reference at the ${when}: plain wrk ${Math.round(plain.reqPerSec).toLocaleString('en-US')} req/s, p99 ${plain.p99Ms?.toFixed(2) ?? '-'} ms (${plain.command}); `
      + `the bench's load ${Math.round(benchReqPerSec).toLocaleString('en-US')} req/s\n`)
  }
  const startedAt = new Date()
  const commit = gitCommit()
  process.stdout.write(`Petstore API benchmark, ${startedAt.toISOString()}, commit ${commit ?? 'unknown'}\n`)
  process.stdout.write(`node ${machine.node} on ${machine.platform}, ${machine.cpus} x ${machine.cpuModel}, `
    + `${machine.memoryGiB} GiB, load average ${machine.loadAverageAtStart.join(' ')}\n`)
  process.stdout.write(`load generator: ${generator.describe}\n${place.describe}\n`)
  if (Object.keys(opts.serverEnv).length > 0) {
    process.stdout.write(`API servers' extra environment (--server-env): ${Object.entries(opts.serverEnv).map(([k, v]) => `${k}=${v}`).join(' ')}\n`)
  }
  process.stdout.write(`${opts.connections} connections on loopback; per scenario ${opts.warmup} s warm-up, then ${opts.rounds} rounds of ${opts.slice} s (the mixed run: ${opts.mixedSlice} s), each beside as long of bare node:http; server LOG_LEVEL=${opts.logLevel}\n`)
  process.stdout.write(checkReference
    ? `reference check: at the start and the end, plain wrk (no script) and the bench's own load, ${opts.reference} s each, one right after the other against bare node:http; each pair must agree within ${opts.tolerance}%\n\n`
    : `reference check: not run (${generator.name === 'wrk' ? '--reference 0' : 'it needs wrk'})\n\n`)

  const rows: Row[] = []
  const memory: Memory[] = []
  const limiter: MicroResult[] = []
  const bareSlices: Slice[] = []
  try {
    // The reference, on this machine, now: measured in rounds beside every other scenario. It
    // starts while the catalogue is seeded.
    const bareStarting = startServer('bare node:http', place.server, { bare: true })
    cleanups.push(async () => { await (await bareStarting.catch(() => null))?.stop() })

    // SQLite (WAL, synchronous=FULL), the in-process limiter: what `petstore serve` runs by default.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'petstore-bench-'))
    cleanups.push(() => rm(dir, { recursive: true, force: true }))
    const file = path.join(dir, 'petstore.db')
    const sqliteUrl = `sqlite:${file}`
    let sqliteSeed: Seeded | null = null
    if (opts.instances === 1) {
      // Seeding commits some 12,000 times, each with an fsync: on tmpfs those cost nothing. The
      // server then runs on a copy on the real disk, where its own commits pay for durability.
      const seedDir = await mkdtemp(path.join(existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'petstore-bench-seed-'))
      cleanups.push(() => rm(seedDir, { recursive: true, force: true }))
      const seedFile = path.join(seedDir, 'petstore.db')
      sqliteSeed = await seedStores('SQLite', async () => createSqliteStores(seedFile), opts.pets, `sqlite:${seedFile}`)
      for (const suffix of ['', '-wal', '-shm']) if (existsSync(seedFile + suffix)) await copyFile(seedFile + suffix, file + suffix)
      await rm(seedDir, { recursive: true, force: true })
    }

    const bare = await bareStarting
    const bareWrong = await probe(bare.base, {}, BARE_PROBE)
    if (bareWrong !== null) throw new Error(`the bare node:http server: ${bareWrong}`)
    if (opts.warmup > 0) await generator.run(bare.base, BARE_LOAD, opts.connections, opts.warmup)
    await plainReference(bare.base, 'start')
    // The webhook receiver shares the generator's core: what it spends is not the server's.
    let receiver: Promise<ChildServer> | null = null
    const startReceiver = (): Promise<ChildServer> => {
      if (receiver === null) {
        receiver = startServer('webhook receiver', place.generator, { receiver: true })
        const started = receiver
        cleanups.push(async () => { await (await started.catch(() => null))?.stop() })
      }
      return receiver
    }
    const run: Run = {
      opts,
      place,
      generator,
      bare: { base: bare.base, stats: () => bare.stats(), slices: bareSlices },
      rows,
      memory,
      receiver: startReceiver,
      peers: null
    }
    if (opts.peers && opts.instances === 1) {
      // The peers' files on the real disk beside ours: their commits pay for durability as ours do.
      const files = await seedPeers(dir, sqliteSeed!.pets, sqliteSeed!.orderPetId, ORDER_STOCK)
      const peers = await startPeers(place, files, sqliteSeed!)
      cleanups.push(() => Promise.all(peers.map((peer) => peer.server.stop())))
      run.peers = peers
      process.stdout.write(`  (peers: ${peers.map((peer) => SETUP_TITLES[peer.setup]).join('; ')}; on SQLite's reads by id and orders, in the same rounds)\n`)
    }
    const redisReason = opts.redisUrl === null ? 'turned off with --redis off' : await redisUnavailableReason(opts.redisUrl)
    if (opts.instances > 1) {
      await runInstances(run, cleanups, redisReason)
    } else {
      if (opts.setups.has('sqlite')) await runSetup(run, 'sqlite', { DATABASE_URL: sqliteUrl }, sqliteSeed!)

      // PostgreSQL, in a fresh schema dropped afterwards.
      const pgReason = !opts.setups.has('postgres')
        ? 'left out with --setups'
        : opts.postgresUrl === null ? 'turned off with --postgres off' : await postgresUnavailableReason(opts.postgresUrl)
      if (pgReason !== null || opts.postgresUrl === null) {
        report(run, failedRow('postgres', { id: 'all', title: 'every scenario' }, pgReason ?? 'no PostgreSQL', 'skipped'))
      } else {
        const pgUrl = opts.postgresUrl
        const schema = `petstore_bench_${randomBytes(6).toString('hex')}`
        await withPostgres(pgUrl, (c) => c.query(`CREATE SCHEMA ${schema}`))
        cleanups.push(() => withPostgres(pgUrl, (c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)))
        const schemaUrl = withSearchPath(pgUrl, schema)
        machine.postgresRoundTripUs = await withPostgres(pgUrl, postgresRoundTrip)
        process.stdout.write(`  (${roundTripText(machine.postgresRoundTripUs)})\n`)
        const pgSeed = await seedStores(
          `PostgreSQL schema ${schema}`,
          () => createPostgresStores(pgUrl, { schema, poolMax: 16 }),
          opts.pets,
          schemaUrl
        )
        await runSetup(run, 'postgres', { DATABASE_URL: schemaUrl }, pgSeed)
        // The same PostgreSQL setup with the Redis limiter (issue 20 item 5: "the same table with
        // the Redis limiter"), on the two scenarios that item names: reads by id and orders.
        const pgRedisReason = opts.redisUrl === null ? 'turned off with --redis off' : await redisUnavailableReason(opts.redisUrl)
        if (pgRedisReason !== null || opts.redisUrl === null) {
          report(run, failedRow('postgres-redis', { id: 'all', title: 'every scenario' }, pgRedisReason ?? 'no Redis', 'skipped'))
        } else {
          const prefix = `petstore:bench:${randomBytes(6).toString('hex')}:`
          const client = new Redis(opts.redisUrl, {
            lazyConnect: true,
            maxRetriesPerRequest: 1,
            retryStrategy: () => null
          })
          client.on('error', () => {})
          await client.connect()
          cleanups.push(async () => { await deleteRedisKeys(client, prefix); client.disconnect() })
          const only = new Set([...opts.only].filter((id) => id === 'get' || id === 'orders'))
          if (only.size > 0) {
            await runSetup(
              { ...run, opts: { ...opts, only } },
              'postgres-redis',
              { DATABASE_URL: schemaUrl, REDIS_URL: withKeyPrefix(opts.redisUrl, prefix) },
              pgSeed
            )
          }
        }
      }

      // The SQLite setup again, with the Redis limiter: one round trip per request.
      if (!opts.setups.has('sqlite')) {
        report(run, failedRow('redis', { id: 'all', title: 'every scenario' }, 'left out with --setups', 'skipped'))
      } else if (redisReason !== null || opts.redisUrl === null) {
        report(run, failedRow('redis', { id: 'all', title: 'every scenario' }, redisReason ?? 'no Redis', 'skipped'))
      } else {
        const redisUrl = opts.redisUrl
        const prefix = `petstore:bench:${randomBytes(6).toString('hex')}:`
        const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null })
        client.on('error', () => {})
        await client.connect()
        cleanups.push(async () => { await deleteRedisKeys(client, prefix); client.disconnect() })
        // The webhooks scenario runs on SQLite and PostgreSQL only (issue 31), and so do the
        // refusal at the cap (issue 51: the store's count, which the limiter does not change) and
        // the request log's row (its cost is the recording and the flush, not the limiter), and the
        // keyed orders (the key's cost is the store's).
        const only = new Set([...opts.only].filter((id) => id !== 'webhooks' && id !== 'refused' && id !== 'log' && id !== 'keyed'))
        const redisRows = await runSetup(
          { ...run, opts: { ...opts, only } },
          'redis',
          { DATABASE_URL: sqliteUrl, REDIS_URL: withKeyPrefix(redisUrl, prefix) },
          sqliteSeed!
        )
        // A "Redis" figure measured on the in-process fallback would be a lie: every charged request
        // must have reached Redis's day counter.
        const charged = redisRows.filter((r) => r.status === 'ok' && r.scenario !== 'rate_limit').reduce((n, r) => n + r.requests, 0)
        const counted = await redisDayCount(client, prefix)
        if (counted < charged) {
          for (const r of redisRows) if (r.status === 'ok') Object.assign(r, { status: 'failed', reason: `Redis counted ${counted} requests, fewer than the ${charged} measured: some were served by the in-process fallback` })
        }
      }
    }

    await plainReference(bare.base, 'end')
    await bare.stop()

    if (opts.microSeconds > 0) {
      const memoryLimiter = createMemoryRateLimiter()
      limiter.push(await microBenchmark('memory', memoryLimiter, 1, opts.microSeconds))
      await memoryLimiter.close()
      if (opts.redisUrl !== null && redisReason === null) {
        const redisUrl = opts.redisUrl
        const prefix = `petstore:bench:${randomBytes(6).toString('hex')}:`
        const client = new Redis(redisUrl, { ...redisClientOptions(), lazyConnect: true })
        client.on('error', () => {})
        await client.connect()
        cleanups.push(async () => { await deleteRedisKeys(client, prefix); client.disconnect() })
        const redisLimiter = createRedisRateLimiter({ redis: client, prefix })
        for (const inFlight of [1, opts.connections]) {
          limiter.push(await microBenchmark('redis', redisLimiter, inFlight, opts.microSeconds)
            .catch((error: unknown): MicroResult => ({
              backend: 'redis',
              inFlight,
              status: 'failed',
              reason: describe(error),
              callsPerSec: null,
              meanUs: null
            })))
        }
      }
    }
  } catch (error) {
    rows.push(failedRow('sqlite', { id: 'all', title: 'the run itself' }, describe(error)))
    process.stderr.write(`\nbench: ${(error as Error).stack ?? describe(error)}\n`)
  } finally {
    await cleanUp()
    killChildren('SIGKILL')
  }
  machine.loadAverageAtEnd = os.loadavg().map((l) => Math.round(l * 100) / 100)

  if (bareSlices.length > 0) {
    const bareFigures = bareRow(bareSlices)
    rows.unshift(bareFigures)
    if (referencePairs.length > 0 && bareFigures.reqPerSec !== null) {
      reference = referenceCheck(referencePairs, bareFigures.reqPerSec, opts.tolerance)
    }
  }
  const failures = [
    ...(reference !== null && !reference.ok
      ? reference.pairs.filter((p) => p.differencePct > reference!.tolerancePct).map((p) =>
          `the reference at the ${p.when}: the bench's load on bare node:http (${Math.round(p.benchReqPerSec)} req/s) is `
          + `${p.differencePct.toFixed(1)}% from plain wrk's beside it (${Math.round(p.plain.reqPerSec)} req/s), `
          + `more than the ${reference!.tolerancePct}% allowed`)
      : []),
    ...rows.filter((r) => r.status === 'failed').map((r) => `${r.setup === 'bare' ? '' : SETUP_TITLES[r.setup] + ', '}${r.title}: ${r.reason ?? 'failed'}`),
    ...limiter.filter((m) => m.status === 'failed').map((m) => `limiter ${m.backend} x${m.inFlight}: ${m.reason ?? 'failed'}`)
  ]
  const doc: Document = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    commit,
    machine,
    generator: generator.describe,
    placement: place.describe,
    options: {
      ...(Object.keys(opts.serverEnv).length > 0 && { serverEnv: opts.serverEnv }),
      drain: opts.drain,
      instances: opts.instances,
      rounds: opts.rounds,
      slice: opts.slice,
      mixedSlice: opts.mixedSlice,
      warmup: opts.warmup,
      reference: opts.reference,
      tolerance: opts.tolerance,
      connections: opts.connections,
      pets: opts.pets,
      only: [...opts.only],
      logLevel: opts.logLevel,
      redis: opts.redisUrl === null ? 'off' : safeUrl(opts.redisUrl),
      postgres: opts.postgresUrl === null ? 'off' : safeUrl(opts.postgresUrl),
      micro: opts.microSeconds
    },
    rows,
    memory,
    limiter,
    reference,
    notes: notesOf(rows, limiter),
    ok: failures.length === 0,
    failures
  }
  process.stdout.write(`\n${renderText(doc)}`)
  const files = await save(opts.outDir ?? path.join(HERE, 'results'), doc)
  process.stdout.write(`results written to ${files.map((f) => path.relative(process.cwd(), f) || f).join(' and ')}\n`)
  if (failures.length > 0) {
    process.stderr.write(`\nbench FAILED:\n${failures.map((p) => `  - ${p}`).join('\n')}\n`)
    return 1
  }
  return 0
}

/**
 * The median of 1,000 `SELECT 1` round trips on `client`, in µs, after 200 unmeasured: what one
 * statement costs this machine before any work (170 to 560 µs on session 29's VM, tens elsewhere).
 */
async function postgresRoundTrip (client: pg.Client): Promise<number> {
  for (let i = 0; i < 200; i++) await client.query('SELECT 1')
  const times: number[] = []
  for (let i = 0; i < 1000; i++) {
    const at = performance.now()
    await client.query('SELECT 1')
    times.push(performance.now() - at)
  }
  times.sort((a, b) => a - b)
  return Math.round(times[500]! * 10_000) / 10
}

process.exitCode = await main()
