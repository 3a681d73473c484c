// The load: what a scenario sends, the generators that send it (wrk, or autocannon in a child
// process when wrk is missing), and the interleaved rounds that turn slices of load into a ratio.
//
// Both generators report a slice the same way: request and error counts, and the latency
// distribution as values at the quantiles of LATENCY_GRID (finer in the tail, where p99 is), so
// that slices from several rounds merge into one distribution without shipping every sample.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { hasCommand, runToEnd } from './processes.ts'
import type { ProcessStats } from './server.ts'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const AUTOCANNON_SCRIPT = path.join(HERE, 'autocannon.ts')

/** What one scenario sends; headers go on every request. */
export type Load =
  | {
    kind: 'static'
    method: 'GET' | 'POST'
    path: string
    body?: string
    headers: Record<string, string>
    /**
     * The status every answer must have when it is not a 2xx (the refusal row: 409): an answer
     * with any other counts as a status error, and one with this status does not.
     */
    expectStatus?: number
    /**
     * Each request sends an Idempotency-Key of its own (a prefix drawn per generator run, then a
     * count), as our client and the MCP door do with every order: none is ever a replay.
     */
    freshIdempotencyKeys?: boolean
  }
  /** GET one of the paths per request, picked at random (so a cache sees the whole catalogue). */
  | { kind: 'paths'; paths: string[]; headers: Record<string, string> }
  /** Orders (a POST) on `orderers` connections, while the others GET the paths as 'paths' does. */
  | {
    kind: 'mixed'
    paths: string[]
    orderers: number
    order: { path: string; body: string }
    headers: Record<string, string>
  }

/** Request count, failures and latency of one kind of request in a mixed slice. */
export interface Part { count: number; bad: number; latencyUs: number[] }

export interface Slice {
  requests: number
  seconds: number
  errors: { connect: number; read: number; write: number; status: number; timeout: number }
  /** Latency in µs at each quantile of LATENCY_GRID. */
  latencyUs: number[]
  /** Mixed loads only: the reads and the orders apart. */
  reads?: Part
  orders?: Part
  /** What the server process spent during the slice (CPU time, event-loop delay, GC). */
  server?: ProcessStats
}

/**
 * Quantiles (percent) with the share of requests each stands for: 99 points for the body, 10 for
 * p99–p99.9, 10 for the last 0.1%. Masses add up to 1.
 */
export const LATENCY_GRID: readonly { p: number; mass: number }[] = [
  ...Array.from({ length: 99 }, (_, i) => ({ p: i + 0.5, mass: 0.01 })),
  ...Array.from({ length: 9 }, (_, i) => ({ p: 99 + (i + 0.5) / 10, mass: 0.001 })),
  ...Array.from({ length: 10 }, (_, i) => ({ p: 99.9 + (i + 0.5) / 100, mass: 0.0001 }))
]

/** The quantile q (0–1) of the distribution the slices' latency grids make together, in ms. */
export function mergedQuantileMs (parts: { count: number; latencyUs: number[] }[], q: number): number | null {
  const points: { value: number; weight: number }[] = []
  for (const part of parts) {
    if (part.count === 0) continue
    LATENCY_GRID.forEach(({ mass }, i) => points.push({ value: part.latencyUs[i] ?? 0, weight: mass * part.count }))
  }
  if (points.length === 0) return null
  points.sort((a, b) => a.value - b.value)
  const total = points.reduce((sum, p) => sum + p.weight, 0)
  let seen = 0
  for (const point of points) {
    seen += point.weight
    if (seen >= q * total - 1e-9) return point.value / 1000
  }
  return points[points.length - 1]!.value / 1000
}

/** The grid's values from sorted samples (autocannon's response times). */
export function gridFromSorted (sorted: ArrayLike<number>): number[] {
  if (sorted.length === 0) return LATENCY_GRID.map(() => 0)
  return LATENCY_GRID.map(({ p }) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p / 100 * sorted.length) - 1))]!)
}

// ---------------------------------------------------------------------------------------------
// Generators

export interface Generator {
  name: 'wrk' | 'autocannon'
  /** One line for the report: which generator, and why. */
  describe: string
  run (base: string, load: Load, connections: number, seconds: number): Promise<Slice>
  close (): Promise<void>
}

export class GeneratorMissing extends Error {}

/** wrk when asked or when installed; autocannon when asked or when wrk is missing (and it says so). */
export async function openGenerator (choice: 'auto' | 'wrk' | 'autocannon', cpus: string | null): Promise<Generator> {
  const haveWrk = choice !== 'autocannon' && hasCommand('wrk')
  if (choice === 'wrk' && !haveWrk) throw new GeneratorMissing('--generator wrk, but wrk is not installed (Debian: apt-get install wrk)')
  if (haveWrk) return openWrk(cpus)
  const why = choice === 'autocannon' ? 'asked for with --generator autocannon' : 'wrk is not installed (Debian: apt-get install wrk), so autocannon stands in; its ceiling on a small machine is lower, and ratios to bare node:http come out higher than wrk\'s'
  return {
    name: 'autocannon',
    describe: `autocannon in a child process (${why})`,
    run: (base, load, connections, seconds) => runAutocannon(cpus, base, load, connections, seconds),
    async close () {}
  }
}

const RESULT_MARK = 'BENCH_RESULT '

function parseResult (output: string, what: string): Slice {
  const line = output.split('\n').find((l) => l.startsWith(RESULT_MARK))
  if (line === undefined) throw new Error(`${what} printed no result: ${output.slice(-500).trim()}`)
  const raw = JSON.parse(line.slice(RESULT_MARK.length)) as Omit<Slice, 'seconds'> & { durationUs: number }
  const { durationUs, ...rest } = raw
  return { ...rest, seconds: durationUs / 1e6 }
}

// wrk --------------------------------------------------------------------------------------------

/** A Lua string literal: printable ASCII as is, every other byte as \ddd. */
function lua (text: string): string {
  let out = '"'
  for (const byte of Buffer.from(text, 'utf8')) {
    // Three digits always: Lua reads up to three, so "\\10" before a digit would swallow it.
    out += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c
      ? String.fromCharCode(byte)
      : `\\${String(byte).padStart(3, '0')}`
  }
  return out + '"'
}

const LUA_COMMON = `
local GRID = { ${LATENCY_GRID.map(({ p }) => String(p)).join(', ')} }
local function errors_json (e)
  return string.format('{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}', e.connect, e.read, e.write, e.status, e.timeout)
end
local function grid_of_stats (latency)
  local out = {}
  for i = 1, #GRID do out[i] = string.format('%d', math.floor(latency:percentile(GRID[i]))) end
  return '[' .. table.concat(out, ',') .. ']'
end
local function grid_of_sorted (sorted)
  local out = {}
  local n = #sorted
  for i = 1, #GRID do
    local value = 0
    if n > 0 then value = sorted[math.max(1, math.min(n, math.ceil(GRID[i] / 100 * n)))] end
    out[i] = string.format('%d', math.floor(value))
  end
  return '[' .. table.concat(out, ',') .. ']'
end
local function summary_json (summary, latency)
  return string.format('"requests":%d,"durationUs":%d,"errors":%s,"latencyUs":%s',
    summary.requests, summary.duration, errors_json(summary.errors), grid_of_stats(latency))
end
`

function luaHeaders (headers: Record<string, string>): string {
  return Object.entries(headers).map(([name, value]) => `wrk.headers[${lua(name)}] = ${lua(value)}\n`).join('')
}

function wrkScript (load: Load): string {
  const head = `-- Written by bench/load.ts for one slice of load (${load.kind}).\n${LUA_COMMON}${luaHeaders(load.headers)}`
  if (load.kind === 'static') {
    const body = `wrk.method = ${lua(load.method)}\n`
      + (load.body === undefined ? '' : `wrk.body = ${lua(load.body)}\nwrk.headers["content-type"] = "application/json"\n`)
      // A key per request: the request is formatted in a request() callback, which costs the
      // generator (one thread), not the server. The prefix differs per run of wrk (each round).
      + (load.freshIdempotencyKeys !== true
        ? ''
        : `
local key_prefix, key_count = nil, 0
function init (args)
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
  key_prefix = string.format('bench-%x-%x%x-', os.time(), math.random(0, 1073741823), math.random(0, 1073741823))
end
function request ()
  key_count = key_count + 1
  wrk.headers['idempotency-key'] = key_prefix .. key_count
  return wrk.format()
end
`)
    if (load.expectStatus === undefined) {
      return head + body + `
function done (summary, latency, requests)
  io.write('${RESULT_MARK}{' .. summary_json(summary, latency) .. '}\\n')
end
`
    }
    // wrk counts every answer >= 400 as a status error: here only those without the expected
    // status are. The per-reply callback costs the generator (one thread, -t1), not the server.
    return head + body + `
unexpected = 0
function response (status, headers, body)
  if status ~= ${load.expectStatus} and (status < 200 or status > 299) then unexpected = unexpected + 1 end
end
function done (summary, latency, requests)
  summary.errors.status = unexpected
  io.write('${RESULT_MARK}{' .. summary_json(summary, latency) .. '}\\n')
end
`
  }
  // The paths are split once per thread; each request is formatted when first picked, so that
  // 50 threads (the mixed run) do not each format 10,000 requests before the first is sent.
  // Each thread compiles the script: the paths' common prefix is written once.
  const prefix = commonPrefix(load.paths)
  const pathsPart = `
local PREFIX = ${lua(prefix)}
local SUFFIXES = ${lua(load.paths.map((p) => p.slice(prefix.length)).join('\n'))}
local paths, requests = {}, {}
local function load_paths ()
  for p in (SUFFIXES .. '\\n'):gmatch('([^\\n]*)\\n') do paths[#paths + 1] = PREFIX .. p end
end
local function random_request ()
  local i = math.random(#paths)
  local r = requests[i]
  if r == nil then
    r = wrk.format('GET', paths[i])
    requests[i] = r
  end
  return r
end
`
  if (load.kind === 'paths') {
    return head + pathsPart + `
function init (args)
  load_paths()
  math.randomseed(1)
end
function request ()
  return random_request()
end
function done (summary, latency, requests)
  io.write('${RESULT_MARK}{' .. summary_json(summary, latency) .. '}\\n')
end
`
  }
  // Mixed: one connection per wrk thread (-t = -c), so in each thread's Lua state a response
  // always belongs to the request just sent, and reads and orders can be timed apart (wrk's own
  // histogram mixes them). This per-reply callback costs the generator CPU: the reference stays
  // the plain run (bench/run.ts). The clock is CLOCK_MONOTONIC through LuaJIT's FFI.
  return head + pathsPart + `
local ffi = require('ffi')
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime (int clock, bench_timespec *tp);
]]
local ts = ffi.new('bench_timespec')
local function now_us ()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1000000 + tonumber(ts.tv_nsec) / 1000
end
local ORDERERS = ${Math.max(1, Math.round(load.orderers))}
local threads = {}
function setup (thread)
  threads[#threads + 1] = thread
  thread:set('seed', #threads)
end
reads, orders, reads_bad, orders_bad = {}, {}, 0, 0
local order_request, ordering, kind, started
function init (args)
  load_paths()
  math.randomseed(seed or 1)
  -- wrk.format's headers replace wrk.headers: the key goes in again.
  local headers = {}
  for name, value in pairs(wrk.headers) do headers[name] = value end
  headers['content-type'] = 'application/json'
  order_request = wrk.format('POST', ${lua(load.order.path)}, headers, ${lua(load.order.body)})
  -- The first ORDERERS connections order, the others read.
  ordering = (seed or 1) <= ORDERERS
end
function request ()
  started = now_us()
  if ordering then kind = 'order' return order_request end
  kind = 'read'
  return random_request()
end
function response (status, headers, body)
  local took = now_us() - started
  local bad = status < 200 or status > 299
  if kind == 'read' then
    reads[#reads + 1] = took
    if bad then reads_bad = reads_bad + 1 end
  elseif kind == 'order' then
    orders[#orders + 1] = took
    if bad then orders_bad = orders_bad + 1 end
  end
  kind = nil
end
local function part (name, bad_name)
  local all, bad = {}, 0
  for _, thread in ipairs(threads) do
    local mine = thread:get(name)
    for i = 1, #mine do all[#all + 1] = mine[i] end
    bad = bad + thread:get(bad_name)
  end
  table.sort(all)
  return string.format('{"count":%d,"bad":%d,"latencyUs":%s}', #all, bad, grid_of_sorted(all))
end
function done (summary, latency, requests)
  io.write('${RESULT_MARK}{' .. summary_json(summary, latency) .. ',"reads":' .. part('reads', 'reads_bad') .. ',"orders":' .. part('orders', 'orders_bad') .. '}\\n')
end
`
}

function commonPrefix (texts: string[]): string {
  let prefix = texts[0] ?? ''
  for (const text of texts) while (!text.startsWith(prefix)) prefix = prefix.slice(0, -1)
  return prefix
}

async function openWrk (cpus: string | null): Promise<Generator> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'petstore-bench-wrk-'))
  let scripts = 0
  return {
    name: 'wrk',
    describe: 'wrk (-t1, except the mixed run: one thread per connection)',
    async run (base, load, connections, seconds) {
      const script = path.join(dir, `load-${++scripts}.lua`)
      await writeFile(script, wrkScript(load))
      const threads = load.kind === 'mixed' ? connections : 1
      const url = base + (load.kind === 'static' ? load.path : '/')
      const args = ['-t', String(threads), '-c', String(connections), '-d', `${seconds}s`, '--timeout', '10s', '-s', script, url]
      const { code, stdout, stderr } = await runToEnd(cpus, 'wrk', args, seconds * 1000 + 60_000)
      if (code !== 0) throw new Error(`wrk exited with code ${code}: ${(stderr || stdout).trim().slice(-500)}`)
      await rm(script, { force: true })
      return parseResult(stdout, 'wrk')
    },
    close: () => rm(dir, { recursive: true, force: true })
  }
}

/** What plain wrk (no script) measured: the reference check's figure. */
export interface PlainRun {
  requests: number
  seconds: number
  reqPerSec: number
  p99Ms: number | null
  command: string
}

/**
 * `wrk -t1 -c<connections> -d<seconds>s --latency URL`, no Lua at all, pinned like every other
 * run: what anyone would measure by hand. The bench's own reference must agree with it.
 */
export async function plainWrk (
  cpus: string | null,
  url: string,
  connections: number,
  seconds: number
): Promise<PlainRun> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', url]
  const { code, stdout, stderr } = await runToEnd(cpus, 'wrk', args, seconds * 1000 + 60_000)
  if (code !== 0) throw new Error(`wrk exited with code ${code}: ${(stderr || stdout).trim().slice(-500)}`)
  const counted = /(\d+) requests in ([\d.]+)(m?s|m)\b/.exec(stdout)
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(stdout)
  if (counted === null || rate === null) throw new Error(`plain wrk printed no figures: ${stdout.slice(-300)}`)
  const unit = counted[3]!
  const duration = Number(counted[2]) * (unit === 'ms' ? 1e-3 : unit === 'm' ? 60 : 1)
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s)\s*$/m.exec(stdout)
  const p99Ms = p99 === null ? null : Number(p99[1]) * (p99[2] === 'us' ? 1e-3 : p99[2] === 's' ? 1000 : 1)
  const errors = /Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)/.exec(stdout)
  if (errors !== null) throw new Error(`plain wrk saw errors: ${errors[0]}`)
  return {
    requests: Number(counted[1]),
    seconds: duration,
    reqPerSec: Number(rate[1]),
    p99Ms,
    command: `${cpus === null ? '' : `taskset -c ${cpus} `}wrk ${args.slice(0, -1).join(' ')}`
  }
}

// autocannon ------------------------------------------------------------------------------------

/** What bench/autocannon.ts takes, as JSON in argv[2]. */
export interface AutocannonJob { base: string; load: Load; connections: number; seconds: number }

async function runAutocannon (
  cpus: string | null,
  base: string,
  load: Load,
  connections: number,
  seconds: number
): Promise<Slice> {
  const job: AutocannonJob = { base, load, connections, seconds }
  const { code, stdout, stderr } = await runToEnd(
    cpus,
    process.execPath,
    [AUTOCANNON_SCRIPT, JSON.stringify(job)],
    seconds * 1000 + 60_000
  )
  if (code !== 0) throw new Error(`autocannon exited with code ${code}: ${(stderr || stdout).trim().slice(-500)}`)
  return parseResult(stdout, 'autocannon')
}

export const formatResult = (slice: Omit<Slice, 'seconds'> & { durationUs: number }): string => `${RESULT_MARK}${JSON.stringify(slice)}\n`

// ---------------------------------------------------------------------------------------------
// Rounds

export interface Measured {
  slices: Slice[]
  /** The bare server's slices of the same rounds. */
  bare: Slice[]
  /** Per round: this scenario's req/s over the bare server's in the same round. */
  ratios: number[]
  /** The requests the warm-up completed (not measured; the keyed orders' count of orders). */
  warmupRequests?: number
}

/**
 * Warms the scenario up, then measures it in rounds that alternate with rounds of the bare
 * server (ABBA order, so neither side always goes first). On a shared machine the load from
 * elsewhere changes from second to second; pairing each slice with a bare slice next to it in
 * time, and taking the median of the per-round ratios, keeps that noise out of the ratio.
 */
/** A server under load, and how to ask it what it spent. */
export interface Target { base: string; stats?: () => Promise<ProcessStats> }

/** One slice of load, with what the server spent during it. */
async function slice (
  generator: Generator,
  target: Target,
  load: Load,
  connections: number,
  seconds: number
): Promise<Slice> {
  await target.stats?.()
  const measured = await generator.run(target.base, load, connections, seconds)
  const stats = await target.stats?.()
  return stats === undefined ? measured : { ...measured, server: stats }
}

/**
 * Several servers under the same load in the same rounds (--peers: ours and the peers): each round
 * runs the bare server and every target one after the other, in an order that reverses every
 * other round (ABBA, as measure), so each target's per-round ratio is to the bare slice of its
 * own round, and two targets' per-round ratios to each other compare slices a few seconds apart.
 */
export async function measureTogether (
  generator: Generator,
  targets: { target: Target; load: Load }[],
  bare: Target & { load: Load; slices: Slice[] },
  options: { connections: number; slice: number; rounds: number; warmup: number }
): Promise<Measured[]> {
  for (const { target, load } of targets) {
    if (options.warmup > 0) await generator.run(target.base, load, options.connections, options.warmup)
  }
  const out: Measured[] = targets.map(() => ({ slices: [], bare: [], ratios: [] }))
  for (let round = 0; round < options.rounds; round++) {
    const order = [-1, ...targets.keys()]
    if (!(round % 4 === 0 || round % 4 === 3)) order.reverse()
    const mine: Slice[] = []
    let bareSlice: Slice | null = null
    for (const i of order) {
      if (i === -1) bareSlice = await slice(generator, bare, bare.load, options.connections, options.slice)
      else mine[i] = await slice(generator, targets[i]!.target, targets[i]!.load, options.connections, options.slice)
    }
    bare.slices.push(bareSlice!)
    const bareRate = bareSlice!.requests / bareSlice!.seconds
    out.forEach((m, i) => {
      m.slices.push(mine[i]!)
      m.bare.push(bareSlice!)
      m.ratios.push((mine[i]!.requests / mine[i]!.seconds) / bareRate)
    })
  }
  return out
}

/**
 * Servers under the same load at the same time (the request log's row): each round loads them all
 * at once, each by a generator process of its own, with the servers sharing their core. Whatever
 * else the machine does in a round (a neighbour's burst, a change of clock speed) then falls on
 * every server alike, so their CPU per request compares within the round; one after the other, a
 * round's servers differed by ±25% (docs/performance.md, "The request log"). Their req/s mean
 * little here (they share a core): the row's own figures come from measureTogether.
 */
export async function measureSideBySide (
  generator: Generator,
  targets: { target: Target; load: Load }[],
  options: { connections: number; slice: number; rounds: number }
): Promise<Slice[][]> {
  const out: Slice[][] = targets.map(() => [])
  for (let round = 0; round < options.rounds; round++) {
    await Promise.all(targets.map(async ({ target }) => await target.stats?.()))
    const measured = await Promise.all(targets.map(async ({ target, load }) =>
      await generator.run(target.base, load, options.connections, options.slice)))
    const stats = await Promise.all(targets.map(async ({ target }) => await target.stats?.()))
    measured.forEach((m, i) => { out[i]!.push(stats[i] === undefined ? m : { ...m, server: stats[i] }) })
  }
  return out
}

export async function measure (
  generator: Generator,
  target: Target,
  load: Load,
  bare: Target & { load: Load; slices: Slice[] },
  options: { connections: number; slice: number; rounds: number; warmup: number }
): Promise<Measured> {
  const warmupRequests = options.warmup > 0
    ? (await generator.run(target.base, load, options.connections, options.warmup)).requests
    : 0
  const slices: Slice[] = []
  const bareSlices: Slice[] = []
  const ratios: number[] = []
  for (let round = 0; round < options.rounds; round++) {
    const bareFirst = round % 4 === 0 || round % 4 === 3
    let bareSlice: Slice | null = null
    if (bareFirst) bareSlice = await slice(generator, bare, bare.load, options.connections, options.slice)
    const mine = await slice(generator, target, load, options.connections, options.slice)
    if (!bareFirst) bareSlice = await slice(generator, bare, bare.load, options.connections, options.slice)
    slices.push(mine)
    bare.slices.push(bareSlice!)
    bareSlices.push(bareSlice!)
    ratios.push((mine.requests / mine.seconds) / (bareSlice!.requests / bareSlice!.seconds))
  }
  return { slices, bare: bareSlices, ratios, warmupRequests }
}
