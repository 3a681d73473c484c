// npm run bench [-- --duration 5 --connections 20 …]: how fast the API serves, on this machine,
// right now. Speed is measured here, not asserted in tests (docs: README "Performance").
//
// The machine is shared and noisy, so absolute req/s move from run to run, and even from second
// to second. Every scenario is therefore measured in short rounds that alternate with rounds of
// a bare node:http server under the same load generator, and reported as the median of the
// per-round ratios: that ratio is what compares across machines and runs. Each server runs in a
// child process (bench/server.ts, same Node binary), so autocannon in this process never shares
// an event loop with the server it measures. Latency percentiles come from every response time.
//
// Everything stays on loopback and cleans up after itself: the SQLite file lives in a temp dir,
// the PostgreSQL scenario works in a fresh schema that is dropped, and the Redis counters use a
// prefix of their own that is deleted. A scenario with a single error, timeout or non-2xx
// response fails the run (exit 1): a benchmark of 429s or 500s would be a lie.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import pg from 'pg'
import { createKeyAdmin } from '../src/keys/keys.service.ts'
import type { Quota, RateLimiter } from '../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../src/ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from '../src/ratelimit/redis.ts'
import { systemClock } from '../src/shared/clock.ts'
import { createPostgresStores } from '../src/storage/postgres/index.ts'
import { createSqliteStores } from '../src/storage/sqlite/index.ts'
import type { Stores } from '../src/storage/stores.ts'
import type { ChildMessage, PetstoreChildSettings } from './server.ts'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const SERVER_SCRIPT = path.join(HERE, 'server.ts')
const RESULTS_FILE = path.join(HERE, 'results', 'latest.json')

// ---------------------------------------------------------------------------------------------
// Options

const USAGE = `usage: npm run bench -- [options]
  --duration S        seconds of measured load per scenario (default 5), and as many of the
                      bare node:http server, interleaved with it
  --rounds N          slices the duration is cut into, alternating with the bare server (default 5)
  --warmup S          seconds of unmeasured load before each scenario (default 1)
  --connections N     concurrent connections (default 20)
  --log-level LEVEL   the servers' LOG_LEVEL (default info, the product default; logs go to /dev/null)
  --redis URL         Redis for the Redis-limiter scenario, or "off" (default redis://127.0.0.1:6379)
  --postgres URL      PostgreSQL for the PostgreSQL scenario, or "off" (default postgres://postgres@127.0.0.1:5432/test)
  --micro S           seconds per limiter micro-benchmark (default 2)`

interface Options {
  duration: number
  rounds: number
  warmup: number
  connections: number
  logLevel: string
  redisUrl: string | null
  postgresUrl: string | null
  microSeconds: number
}

function parseOptions (args: string[]): Options | null {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      duration: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '1' },
      connections: { type: 'string', default: '20' },
      'log-level': { type: 'string', default: 'info' },
      redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
      postgres: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
      micro: { type: 'string', default: '2' },
      help: { type: 'boolean', short: 'h', default: false }
    }
  })
  if (values.help) return null
  const number = (name: string, text: string, min: number, max: number): number => {
    const n = Number(text)
    if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`--${name} must be a number from ${min} to ${max}, got "${text}"`)
    return n
  }
  return {
    duration: number('duration', values.duration, 1, 600),
    rounds: Math.round(number('rounds', values.rounds, 1, 100)),
    warmup: number('warmup', values.warmup, 0, 60),
    connections: Math.round(number('connections', values.connections, 1, 1000)),
    logLevel: values['log-level'],
    redisUrl: values.redis === 'off' ? null : values.redis,
    postgresUrl: values.postgres === 'off' ? null : values.postgres,
    microSeconds: number('micro', values.micro, 0.1, 60)
  }
}

class UsageError extends Error {}

// ---------------------------------------------------------------------------------------------
// autocannon (CommonJS, no bundled types): the part of its programmatic API used here.

interface AutocannonOptions {
  url: string
  connections: number
  duration: number
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string
  /** Seconds before a request counts as a timeout. */
  timeout?: number
}

interface AutocannonResult {
  duration: number
  errors: number
  timeouts: number
  non2xx: number
  resets: number
  '2xx': number
  statusCodeStats: Record<string, { count: number }>
  requests: { total: number; sent: number }
}

interface AutocannonRun extends PromiseLike<AutocannonResult> {
  /** responseTime in ms (from process.hrtime), for every response, 2xx or not. */
  on (event: 'response', listener: (client: unknown, statusCode: number, bytes: number, responseTime: number) => void): this
}

const autocannon = createRequire(import.meta.url)('autocannon') as (options: AutocannonOptions) => AutocannonRun

// ---------------------------------------------------------------------------------------------
// Child servers

interface ChildServer {
  base: string
  /** Limiter state changes the child reported (a Redis that dropped out, and came back). */
  limiterEvents: { state: string; reason?: string; at: number }[]
  stop (): Promise<void>
}

const children = new Set<ChildProcess>()

async function startChild (label: string, args: string[]): Promise<ChildServer> {
  const child = spawn(process.execPath, [SERVER_SCRIPT, ...args], {
    // stdout carries the pino logs: to /dev/null, so logging costs what it costs in production
    // (serialising and writing) without this process reading it during the measurement.
    stdio: ['ignore', 'ignore', 'pipe', 'ipc']
  })
  children.add(child)
  let stderr = ''
  child.stderr?.setEncoding('utf8')
  child.stderr?.on('data', (chunk: string) => { if (stderr.length < 10_000) stderr += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { children.delete(child); resolve(code) }))
  const limiterEvents: ChildServer['limiterEvents'] = []

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} server did not start within 30 s${stderr ? `: ${stderr.trim()}` : ''}`)), 30_000)
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'ready') { clearTimeout(timer); resolve(message.port) }
      if (message.type === 'limiter') limiterEvents.push({ state: message.state, ...(message.reason !== undefined && { reason: message.reason }), at: Date.now() })
    })
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`${label} server exited with code ${code}${stderr ? `: ${stderr.trim()}` : ''}`)) })
  }).catch(async (error: unknown) => { child.kill('SIGKILL'); await exited; throw error })

  return {
    base: `http://127.0.0.1:${port}`,
    limiterEvents,
    async stop () {
      if (child.exitCode !== null || child.signalCode !== null) return
      if (child.connected) child.send('stop')
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(killer)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Data

const SEED_CATEGORIES = ['Dogs', 'Cats', 'Birds', 'Fish', 'Reptiles', 'Rabbits', 'Rodents', 'Horses', 'Amphibians', 'Insects']
const SEED_PETS = 1000
/** An enterprise key's quotas, far above anything a run can send, so nothing is refused. */
const HUGE_QUOTA: Quota = { perMinute: 1_000_000_000, perDay: 1_000_000_000 }
/** The stock of the pet the order scenario buys (the most a stock may be). */
const ORDER_STOCK = 1_000_000

interface Seeded {
  apiKey: string
  keyId: number
  /** A pet in the middle of the catalogue, for GET /pets/{petId}. */
  readPetId: number
  /** An available pet with ORDER_STOCK in stock, for POST /store/orders. */
  orderPetId: number
}

/**
 * ~1,000 pets over 10 categories (interleaved, so a page spans categories), a tenth pending and
 * a tenth sold like a real shop, through the stores' own methods (no SQL here).
 */
async function seed (stores: Stores): Promise<Seeded> {
  const categoryIds: number[] = []
  for (const name of SEED_CATEGORIES) categoryIds.push((await stores.categories.createCategory({ name, description: `Benchmark ${name.toLowerCase()}.` })).id)
  const petIds: number[] = []
  const createPet = async (i: number): Promise<number> => {
    const status = i % 10 === 7 ? 'pending' : i % 10 === 9 ? 'sold' : 'available'
    const { record } = await stores.pets.createPet({ name: `${SEED_CATEGORIES[i % SEED_CATEGORIES.length]!.slice(0, -1)} ${i + 1}`, categoryId: categoryIds[i % categoryIds.length]!, status }, null)
    if (status !== 'available') await stores.inventory.setStock(record.id, 0, null)
    return record.id
  }
  // A few at a time: PostgreSQL overlaps the round trips; SQLite runs them one by one anyway.
  for (let i = 0; i < SEED_PETS; i += 8) {
    petIds.push(...await Promise.all(Array.from({ length: Math.min(8, SEED_PETS - i) }, (_, j) => createPet(i + j))))
  }
  petIds.sort((a, b) => a - b)
  const { record: stocked } = await stores.pets.createPet({ name: 'Bench goldfish', categoryId: categoryIds[3]!, status: 'available' }, null)
  await stores.inventory.setStock(stocked.id, ORDER_STOCK, null)
  const { record: key, key: apiKey } = await createKeyAdmin(stores.keys, systemClock).create({
    role: 'customer', plan: 'enterprise', name: 'bench', perMinute: HUGE_QUOTA.perMinute, perDay: HUGE_QUOTA.perDay
  })
  return { apiKey, keyId: key.id, readPetId: petIds[Math.floor(petIds.length / 2)]!, orderPetId: stocked.id }
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface Target {
  id: string
  title: string
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  body?: string
  expectStatus: number
  /** A look at one response before the load, so the run measures what it claims to; null when right. */
  check (response: Response, body: unknown): string | null
  note?: string
}

interface ScenarioResult {
  id: string
  title: string
  method: string
  path: string
  status: 'ok' | 'failed' | 'skipped'
  reason?: string
  note?: string
  reqPerSec: number | null
  p50Ms: number | null
  p99Ms: number | null
  /** Median over the rounds of (this scenario's req/s / the bare server's req/s in the same round). */
  ratioToBare: number | null
  /** The smallest and largest of those per-round ratios: how much the machine moved. */
  ratioRange: [number, number] | null
  requests: number
  non2xx: number
  errors: number
  timeouts: number
  statusCodes: Record<string, number>
}

const headerCheck = (response: Response, names: string[]): string | null => {
  const missing = names.filter((name) => !response.headers.has(name))
  return missing.length === 0 ? null : `response lacks ${missing.join(', ')}`
}

function listTarget (id: string, title: string, apiKey: string, note?: string): Target {
  return {
    id, title, method: 'GET', path: '/v1/pets?limit=20', headers: { 'x-api-key': apiKey }, expectStatus: 200,
    check: (response, body) => Array.isArray(body) && body.length === 20
      ? headerCheck(response, ['x-ratelimit-remaining', 'ratelimit', 'link'])
      : 'expected a page of 20 pets',
    ...(note !== undefined && { note })
  }
}

const BARE_TARGET: Target = { id: 'bare', title: 'bare node:http, fixed JSON (baseline)', method: 'GET', path: '/', headers: {}, expectStatus: 200, check: () => null }

/** What some slices of load added up to. */
interface Tally {
  requests: number
  seconds: number
  twoxx: number
  non2xx: number
  errors: number
  timeouts: number
  resets: number
  statusCodes: Record<string, number>
  /** Response times in ms, times[0..n). */
  times: Float64Array
  n: number
}

const newTally = (): Tally => ({ requests: 0, seconds: 0, twoxx: 0, non2xx: 0, errors: 0, timeouts: 0, resets: 0, statusCodes: {}, times: new Float64Array(1 << 15), n: 0 })

function record (tally: Tally, time: number): void {
  if (tally.n === tally.times.length) {
    const bigger = new Float64Array(tally.times.length * 2)
    bigger.set(tally.times)
    tally.times = bigger
  }
  tally.times[tally.n++] = time
}

/** One slice of load; adds it to the tallies given (none for a warm-up) and returns its req/s. */
async function drive (base: string, target: Target, connections: number, seconds: number, tallies: Tally[]): Promise<number> {
  const instance = autocannon({
    url: base + target.path, connections, duration: seconds, method: target.method, timeout: 10,
    headers: { ...target.headers, ...(target.body !== undefined && { 'content-type': 'application/json' }) },
    ...(target.body !== undefined && { body: target.body })
  })
  // autocannon's own percentiles are whole milliseconds; a sub-millisecond p50 needs the raw times.
  if (tallies.length > 0) instance.on('response', (_client, _status, _bytes, time) => { for (const t of tallies) record(t, time) })
  const result = await instance
  for (const t of tallies) {
    t.requests += result.requests.total
    t.seconds += result.duration
    t.twoxx += result['2xx']
    t.non2xx += result.non2xx
    t.errors += result.errors
    t.timeouts += result.timeouts
    t.resets += result.resets
    for (const [code, { count }] of Object.entries(result.statusCodeStats)) t.statusCodes[code] = (t.statusCodes[code] ?? 0) + count
  }
  return result.requests.total / result.duration
}

function percentile (sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The row of a tally; failed when a single response was not a 2xx or did not arrive. */
function toResult (target: Target, tally: Tally, ratios: number[] | null): ScenarioResult {
  const sorted = tally.times.subarray(0, tally.n).sort()
  const row: ScenarioResult = {
    id: target.id, title: target.title, method: target.method, path: target.path, status: 'ok',
    ...(target.note !== undefined && { note: target.note }),
    reqPerSec: tally.seconds > 0 ? tally.requests / tally.seconds : null,
    p50Ms: percentile(sorted, 0.50),
    p99Ms: percentile(sorted, 0.99),
    ratioToBare: ratios === null ? 1 : median(ratios),
    ratioRange: ratios === null ? null : [Math.min(...ratios), Math.max(...ratios)],
    requests: tally.requests, non2xx: tally.non2xx, errors: tally.errors, timeouts: tally.timeouts, statusCodes: tally.statusCodes
  }
  const problems: string[] = []
  if (tally.twoxx === 0) problems.push('no 2xx response at all')
  if (tally.non2xx > 0) problems.push(`${tally.non2xx} non-2xx responses (${Object.entries(tally.statusCodes).filter(([c]) => !c.startsWith('2')).map(([c, k]) => `${k} x ${c}`).join(', ')})`)
  if (tally.errors > 0) problems.push(`${tally.errors} connection errors`)
  if (tally.timeouts > 0) problems.push(`${tally.timeouts} timeouts`)
  if (tally.resets > 0) problems.push(`${tally.resets} connection resets`)
  return problems.length === 0 ? row : { ...row, status: 'failed', reason: problems.join('; ') }
}

/** Sends one request and checks its answer, so the load measures what the row claims. */
async function probe (base: string, target: Target): Promise<string | null> {
  const response = await fetch(base + target.path, {
    method: target.method,
    headers: { ...target.headers, ...(target.body !== undefined && { 'content-type': 'application/json' }) },
    ...(target.body !== undefined && { body: target.body })
  })
  const text = await response.text()
  let body: unknown = null
  try { body = JSON.parse(text) } catch { /* the check reports it */ }
  return response.status !== target.expectStatus
    ? `the probe request answered ${response.status}, expected ${target.expectStatus}: ${text.slice(0, 200)}`
    : target.check(response, body)
}

interface Baseline { base: string; tally: Tally }

/**
 * Warms the scenario up, then measures it in rounds that alternate with rounds of the bare
 * server (ABBA order, so neither side always goes first). On a shared machine the load from
 * elsewhere changes from second to second; pairing each slice with a bare slice next to it in
 * time, and taking the median of the per-round ratios, keeps that noise out of the ratio.
 */
async function measure (base: string, target: Target, options: Options, baseline: Baseline): Promise<ScenarioResult> {
  const wrong = await probe(base, target)
  if (wrong !== null) return { ...toResult(target, newTally(), []), status: 'failed', reason: wrong, reqPerSec: null, p50Ms: null, p99Ms: null, ratioToBare: null, ratioRange: null }
  if (options.warmup > 0) await drive(base, target, options.connections, options.warmup, [])
  const tally = newTally()
  const ratios: number[] = []
  const slice = options.duration / options.rounds
  for (let round = 0; round < options.rounds; round++) {
    const bareFirst = round % 4 === 0 || round % 4 === 3
    let bare = 0
    if (bareFirst) bare = await drive(baseline.base, BARE_TARGET, options.connections, slice, [baseline.tally])
    const mine = await drive(base, target, options.connections, slice, [tally])
    if (!bareFirst) bare = await drive(baseline.base, BARE_TARGET, options.connections, slice, [baseline.tally])
    ratios.push(mine / bare)
  }
  return toResult(target, tally, ratios)
}

function skipped (id: string, title: string, method: string, path: string, reason: string): ScenarioResult {
  return { id, title, method, path, status: 'skipped', reason, reqPerSec: null, p50Ms: null, p99Ms: null, ratioToBare: null, ratioRange: null, requests: 0, non2xx: 0, errors: 0, timeouts: 0, statusCodes: {} }
}

// ---------------------------------------------------------------------------------------------
// Redis and PostgreSQL: used when they answer, skipped with the reason when they do not.

async function redisUnavailableReason (url: string): Promise<string | null> {
  const redis = new Redis(url, { ...redisClientOptions(), lazyConnect: true, retryStrategy: () => null })
  // The socket's error (ECONNREFUSED) says more than the rejection ("Connection is closed.").
  let socketError: unknown = null
  redis.on('error', (error) => { socketError ??= error })
  try {
    await redis.connect()
    await redis.ping()
    return null
  } catch (error) {
    return `Redis at ${safeUrl(url)} is unreachable (${describe(socketError ?? error)})`
  } finally {
    redis.disconnect()
  }
}

async function postgresUnavailableReason (url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return null
  } catch (error) {
    return `PostgreSQL at ${safeUrl(url)} is unreachable (${describe(error)})`
  } finally {
    await client.end().catch(() => {})
  }
}

async function postgresAdmin (url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
  client.on('error', () => {})
  await client.connect()
  try { await client.query(statement) } finally { await client.end().catch(() => {}) }
}

/** The URL with the schema as search_path, the way the stores' own `schema` option does it. */
function withSearchPath (url: string, schema: string): string {
  const u = new URL(url)
  u.searchParams.set('options', `${u.searchParams.get('options') ?? ''} -c search_path=${schema}`.trim())
  return u.toString()
}

async function deleteRedisKeys (url: string, prefix: string): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, retryStrategy: () => null })
  redis.on('error', () => {})
  await redis.connect()
  try {
    let cursor = '0'
    let deleted = 0
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      cursor = next
      if (keys.length > 0) deleted += await redis.del(...keys)
    } while (cursor !== '0')
    return deleted
  } finally {
    redis.disconnect()
  }
}

/** The sum of the day counters under the prefix: proof that the requests went through Redis. */
async function redisDayCount (url: string, prefix: string): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, retryStrategy: () => null })
  redis.on('error', () => {})
  await redis.connect()
  try {
    let cursor = '0'
    let total = 0
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*:d:*`, 'COUNT', 1000)
      cursor = next
      for (const key of keys) total += Number(await redis.get(key) ?? 0)
    } while (cursor !== '0')
    return total
  } finally {
    redis.disconnect()
  }
}

// ---------------------------------------------------------------------------------------------
// The limiter alone: consume() calls per second, without HTTP around it.

interface MicroResult {
  backend: 'memory' | 'redis'
  inFlight: number
  status: 'ok' | 'failed' | 'skipped'
  reason?: string
  callsPerSec: number | null
  /** Mean time one call takes (for inFlight 1, the round trip itself). */
  meanUs: number | null
}

async function microBenchmark (backend: MicroResult['backend'], limiter: RateLimiter, inFlight: number, seconds: number): Promise<MicroResult> {
  const subjects = Array.from({ length: inFlight }, (_, i) => `bench:${i}`)
  for (const subject of subjects) await limiter.consume(subject, HUGE_QUOTA) // connection, script load
  const start = performance.now()
  const deadline = start + seconds * 1000
  let calls = 0
  let refused = 0
  await Promise.all(subjects.map(async (subject) => {
    while (performance.now() < deadline) {
      for (let i = 0; i < 100; i++) if (!(await limiter.consume(subject, HUGE_QUOTA)).allowed) refused++
      calls += 100
    }
  }))
  const elapsedMs = performance.now() - start
  if (refused > 0) return { backend, inFlight, status: 'failed', reason: `${refused} calls were refused`, callsPerSec: null, meanUs: null }
  return { backend, inFlight, status: 'ok', callsPerSec: calls / (elapsedMs / 1000), meanUs: (elapsedMs * 1000 * inFlight) / calls }
}

// ---------------------------------------------------------------------------------------------
// Output

const fmtInt = (n: number | null): string => n === null ? '-' : Math.round(n).toLocaleString('en-US')
const fmtMs = (n: number | null): string => n === null ? '-' : n < 10 ? n.toFixed(2) : n.toFixed(1)
const fmtRatio = (n: number | null): string => n === null ? '-' : `${n.toFixed(2)}x`

function table (header: string[], rows: string[][], alignRight: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) => cells.map((c, i) => alignRight[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)).join('  ').trimEnd()
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

function describe (error: unknown): string {
  const { code, message } = error as { code?: string; message?: string }
  return code ?? message ?? String(error)
}

/** Never print a password. */
function safeUrl (url: string): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.hostname}${u.port ? ':' + u.port : ''}${u.pathname === '/' ? '' : u.pathname}`
  } catch {
    return '(invalid URL)'
  }
}

function gitCommit (): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: HERE, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------------------------

async function main (): Promise<number> {
  let options: Options | null
  try {
    options = parseOptions(process.argv.slice(2))
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`)
    return 2
  }
  if (options === null) { process.stdout.write(`${USAGE}\n`); return 0 }
  const opts = options

  const cleanups: (() => Promise<unknown>)[] = []
  const cleanUp = async (): Promise<void> => {
    for (const fn of cleanups.splice(0).reverse()) await fn().catch((error: unknown) => process.stderr.write(`cleanup: ${describe(error)}\n`))
  }
  process.once('SIGINT', () => {
    process.stderr.write('\ninterrupted: stopping the servers and cleaning up\n')
    for (const child of children) child.kill('SIGTERM')
    void cleanUp().finally(() => process.exit(130))
  })

  const cpus = os.cpus()
  const machine = {
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30 * 10) / 10,
    loadAverageAtStart: os.loadavg().map((l) => Math.round(l * 100) / 100),
    loadAverageAtEnd: [] as number[]
  }
  const startedAt = new Date()
  process.stdout.write(`Petstore API benchmark, ${startedAt.toISOString()}, commit ${gitCommit() ?? 'unknown'}\n`)
  process.stdout.write(`node ${machine.node} on ${machine.platform}, ${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, load average ${machine.loadAverageAtStart.join(' ')}\n`)
  process.stdout.write(`autocannon: ${opts.connections} connections, loopback; per scenario ${opts.warmup} s warm-up, then ${opts.duration} s in ${opts.rounds} rounds alternating with as much bare node:http; server LOG_LEVEL=${opts.logLevel}\n\n`)

  const results: ScenarioResult[] = []
  let baseline: Baseline | null = null
  const report = (row: ScenarioResult): void => {
    results.push(row)
    const figures = row.status === 'ok'
      ? `${fmtInt(row.reqPerSec)} req/s, p50 ${fmtMs(row.p50Ms)} ms, p99 ${fmtMs(row.p99Ms)} ms, ${fmtRatio(row.ratioToBare)} of bare node:http`
      : `${row.status.toUpperCase()}: ${row.reason ?? ''}`
    process.stdout.write(`  ${row.title}: ${figures}\n`)
  }
  const micro: MicroResult[] = []
  const failures = (): string[] => [
    ...results.filter((r) => r.status === 'failed').map((r) => `${r.title}: ${r.reason ?? 'failed'}`),
    ...micro.filter((m) => m.status === 'failed').map((m) => `limiter ${m.backend} x${m.inFlight}: ${m.reason ?? 'failed'}`)
  ]

  try {
    // 1. The baseline, on this machine, now: measured in slices beside every other scenario.
    const bare = await startChild('bare node:http', ['bare'])
    cleanups.push(() => bare.stop())
    const bareWrong = await probe(bare.base, BARE_TARGET)
    if (bareWrong !== null) throw new Error(`the bare node:http server: ${bareWrong}`)
    if (opts.warmup > 0) await drive(bare.base, BARE_TARGET, opts.connections, opts.warmup, [])
    baseline = { base: bare.base, tally: newTally() }

    // 2-4. SQLite (WAL, synchronous=FULL) with the memory limiter.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'petstore-bench-'))
    cleanups.push(() => rm(dir, { recursive: true, force: true }))
    const file = path.join(dir, 'petstore.db')
    let seedStarted = performance.now()
    const sqliteStores = createSqliteStores(file)
    const sqliteSeed = await seed(sqliteStores).finally(() => sqliteStores.close())
    process.stdout.write(`  (SQLite seeded with ${SEED_PETS + 1} pets in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s)\n`)
    const sqliteEnv = { DATABASE_URL: `sqlite:${file}`, LOG_LEVEL: opts.logLevel }
    const sqlite = await startChild('SQLite', ['petstore', JSON.stringify({ env: sqliteEnv, redisPrefix: 'unused:' } satisfies PetstoreChildSettings)])
    cleanups.push(() => sqlite.stop())
    const key = { 'x-api-key': sqliteSeed.apiKey }
    report(await measure(sqlite.base, listTarget('sqlite-list', 'GET /v1/pets?limit=20, SQLite, memory limiter', sqliteSeed.apiKey), opts, baseline))
    report(await measure(sqlite.base, {
      id: 'sqlite-get', title: 'GET /v1/pets/{id} (deprecated), SQLite', method: 'GET', path: `/v1/pets/${sqliteSeed.readPetId}`, headers: key, expectStatus: 200,
      check: (response, body) => (body as { id?: number } | null)?.id === sqliteSeed.readPetId ? headerCheck(response, ['deprecation', 'sunset', 'warning', 'link', 'etag']) : 'expected the pet',
      note: 'the deprecated operation: also sets Deprecation, Sunset, Warning and Link on every response'
    }, opts, baseline))
    report(await measure(sqlite.base, {
      id: 'sqlite-order', title: 'POST /v1/store/orders, SQLite synchronous=FULL', method: 'POST', path: '/v1/store/orders', headers: key,
      body: JSON.stringify({ petId: sqliteSeed.orderPetId, quantity: 1 }), expectStatus: 201,
      check: (response) => headerCheck(response, ['location']),
      note: 'writes: one transaction per order, committed with an fsync of the WAL (synchronous=FULL), on one connection'
    }, opts, baseline))
    await sqlite.stop()

    // 5. The same read with the Redis limiter: one EVALSHA round trip per request.
    const redisTitle = 'GET /v1/pets?limit=20, SQLite, Redis limiter'
    const redisReason = opts.redisUrl === null ? 'turned off with --redis off' : await redisUnavailableReason(opts.redisUrl)
    if (redisReason !== null || opts.redisUrl === null) {
      report(skipped('redis-list', redisTitle, 'GET', '/v1/pets?limit=20', redisReason ?? 'no Redis'))
    } else {
      const redisUrl = opts.redisUrl
      const prefix = `petstore:bench:${randomBytes(6).toString('hex')}:`
      cleanups.push(() => deleteRedisKeys(redisUrl, prefix))
      const redis = await startChild('SQLite + Redis', ['petstore', JSON.stringify({ env: { ...sqliteEnv, REDIS_URL: redisUrl }, redisPrefix: prefix } satisfies PetstoreChildSettings)])
      cleanups.push(() => redis.stop())
      let row = await measure(redis.base, listTarget('redis-list', redisTitle, sqliteSeed.apiKey, 'one EVALSHA round trip to Redis per request'), opts, baseline)
      const counted = await redisDayCount(redisUrl, prefix)
      if (row.status === 'ok' && redis.limiterEvents.length > 0) {
        row = { ...row, status: 'failed', reason: `the limiter left Redis during the run (${redis.limiterEvents.map((e) => `${e.state}${e.reason ? `: ${e.reason}` : ''}`).join(', ')}), so these figures are partly the in-process fallback's` }
      } else if (row.status === 'ok' && counted < row.requests) {
        row = { ...row, status: 'failed', reason: `Redis counted ${counted} requests, fewer than the ${row.requests} measured: some were served by the in-process fallback` }
      }
      report(row)
      await redis.stop()
    }

    // 6. The same read on PostgreSQL, in a fresh schema dropped afterwards.
    const pgTitle = 'GET /v1/pets?limit=20, PostgreSQL, memory limiter'
    const pgReason = opts.postgresUrl === null ? 'turned off with --postgres off' : await postgresUnavailableReason(opts.postgresUrl)
    if (pgReason !== null || opts.postgresUrl === null) {
      report(skipped('postgres-list', pgTitle, 'GET', '/v1/pets?limit=20', pgReason ?? 'no PostgreSQL'))
    } else {
      const pgUrl = opts.postgresUrl
      const schema = `petstore_bench_${randomBytes(6).toString('hex')}`
      await postgresAdmin(pgUrl, `CREATE SCHEMA ${schema}`)
      cleanups.push(() => postgresAdmin(pgUrl, `DROP SCHEMA IF EXISTS ${schema} CASCADE`))
      seedStarted = performance.now()
      const pgStores = await createPostgresStores(pgUrl, { schema, poolMax: 4 })
      const pgSeed = await seed(pgStores).finally(() => pgStores.close())
      process.stdout.write(`  (PostgreSQL schema ${schema} seeded with ${SEED_PETS + 1} pets in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s)\n`)
      const postgres = await startChild('PostgreSQL', ['petstore', JSON.stringify({ env: { DATABASE_URL: withSearchPath(pgUrl, schema), LOG_LEVEL: opts.logLevel }, redisPrefix: 'unused:' } satisfies PetstoreChildSettings)])
      cleanups.push(() => postgres.stop())
      report(await measure(postgres.base, listTarget('postgres-list', pgTitle, pgSeed.apiKey, 'pg pool of 10 connections (the default)'), opts, baseline))
      await postgres.stop()
    }

    await bare.stop()

    // The limiter alone.
    process.stdout.write('\n  limiter consume(), no HTTP:\n')
    // In-process counters: one call at a time is all there is (no I/O to overlap).
    const memory = createMemoryRateLimiter()
    const m = await microBenchmark('memory', memory, 1, opts.microSeconds)
    micro.push(m)
    process.stdout.write(`    memory: ${m.status === 'ok' ? `${fmtInt(m.callsPerSec)} calls/s` : `FAILED: ${m.reason ?? ''}`}\n`)
    await memory.close()
    const microRedisReason = opts.redisUrl === null ? 'turned off with --redis off' : await redisUnavailableReason(opts.redisUrl)
    if (microRedisReason !== null || opts.redisUrl === null) {
      micro.push({ backend: 'redis', inFlight: 1, status: 'skipped', reason: microRedisReason ?? 'no Redis', callsPerSec: null, meanUs: null })
    } else {
      const redisUrl = opts.redisUrl
      const prefix = `petstore:bench:${randomBytes(6).toString('hex')}:`
      cleanups.push(() => deleteRedisKeys(redisUrl, prefix))
      const client = new Redis(redisUrl, { ...redisClientOptions(), lazyConnect: true })
      client.on('error', () => {})
      await client.connect()
      cleanups.push(async () => { client.disconnect() })
      const limiter = createRedisRateLimiter({ redis: client, prefix })
      for (const inFlight of [1, opts.connections]) {
        const m = await microBenchmark('redis', limiter, inFlight, opts.microSeconds).catch((error: unknown): MicroResult => ({ backend: 'redis', inFlight, status: 'failed', reason: describe(error), callsPerSec: null, meanUs: null }))
        micro.push(m)
        process.stdout.write(`    redis, ${inFlight} in flight: ${m.status === 'ok' ? `${fmtInt(m.callsPerSec)} calls/s` : `FAILED: ${m.reason ?? ''}`}\n`)
      }
    }
  } catch (error) {
    results.push({ ...skipped('run', 'the run itself', '-', '-', describe(error)), status: 'failed' })
    process.stderr.write(`\nbench: ${(error as Error).stack ?? describe(error)}\n`)
  } finally {
    await cleanUp()
    for (const child of children) child.kill('SIGKILL')
  }
  machine.loadAverageAtEnd = os.loadavg().map((l) => Math.round(l * 100) / 100)

  // The baseline's row: every bare slice of the run together.
  if (baseline !== null && baseline.tally.requests > 0) results.unshift(toResult(BARE_TARGET, baseline.tally, null))

  const rows = results.filter((r) => r.id !== 'run')
  process.stdout.write(`\n${table(
    ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'ratio (median of rounds)', 'rounds'],
    rows.map((r) => r.status === 'ok'
      ? [r.title, fmtInt(r.reqPerSec), fmtMs(r.p50Ms), fmtMs(r.p99Ms), r.ratioRange === null ? '(the baseline)' : `${fmtRatio(r.ratioToBare)} of bare node:http`, r.ratioRange === null ? '' : `${fmtRatio(r.ratioRange[0])}-${fmtRatio(r.ratioRange[1])}`]
      : [r.title, '-', '-', '-', r.status === 'skipped' ? 'skipped (below)' : 'FAILED (below)', '']),
    [false, true, true, true, false, false]
  )}\n`)
  if (micro.length > 0) {
    process.stdout.write(`\n${table(
      ['limiter consume()', 'in flight', 'calls/s', 'mean µs/call'],
      micro.map((m) => m.status === 'ok'
        ? [m.backend, String(m.inFlight), fmtInt(m.callsPerSec), m.meanUs!.toFixed(1)]
        : [m.backend, String(m.inFlight), '-', m.status === 'skipped' ? 'skipped (below)' : 'FAILED (below)']),
      [false, true, true, true]
    )}\n`)
  }
  const notes = [
    ...rows.filter((r) => r.status === 'ok' && r.note !== undefined).map((r) => `${r.title}: ${r.note!}`),
    ...rows.filter((r) => r.status === 'skipped').map((r) => `${r.title}: skipped, ${r.reason ?? ''}`),
    ...micro.filter((m) => m.status === 'skipped').map((m) => `limiter ${m.backend}: skipped, ${m.reason ?? ''}`)
  ]
  if (notes.length > 0) process.stdout.write(`\n${notes.join('\n')}\n`)
  process.stdout.write('\nEach ratio is the median, over the rounds, of the scenario\'s req/s over the bare server\'s in the\nsame round; "rounds" is their range. Compare ratios across machines and runs, not req/s.\n')
  process.stdout.write(`load average at start ${machine.loadAverageAtStart.join(' ')}, at end ${machine.loadAverageAtEnd.join(' ')} (${machine.cpus} CPUs)\n`)

  const problems = failures()
  const document = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    commit: gitCommit(),
    machine,
    options: { duration: opts.duration, rounds: opts.rounds, warmup: opts.warmup, connections: opts.connections, logLevel: opts.logLevel, microSeconds: opts.microSeconds },
    baselineReqPerSec: results.find((r) => r.id === 'bare')?.reqPerSec ?? null,
    scenarios: results,
    limiter: micro,
    ok: problems.length === 0,
    failures: problems
  }
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true })
  await writeFile(RESULTS_FILE, JSON.stringify(document, null, 2) + '\n')
  process.stdout.write(`results written to ${path.relative(process.cwd(), RESULTS_FILE) || RESULTS_FILE}\n`)

  if (problems.length > 0) {
    process.stderr.write(`\nbench FAILED:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`)
    return 1
  }
  return 0
}

process.exitCode = await main()
