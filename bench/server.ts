// The server half of `npm run bench`. bench/processes.ts starts this file as a child process
// (process.execPath, so the same Node, pinned to the server's core), so the load generator and
// the server never share an event loop or a core. Two modes:
//
//   node bench/server.ts bare                 node:http answering a small fixed JSON body
//   node bench/server.ts petstore '<json>'    the Petstore API, started by src/server.ts's
//                                             startServer, as `petstore serve` starts it
//   node bench/server.ts receiver             a webhook receiver: answers 204 to every POST
//                                             and counts the deliveries by path and event type
//   node bench/server.ts afternoon FILE       a peer (--peers): bench/peers/afternoon.ts on FILE
//   node bench/server.ts json-server FILE     a peer (--peers): json-server at its defaults on FILE
//
// Either way it listens on 127.0.0.1, port 0, and tells the parent the port over IPC
// ({ type: 'ready', port }). It answers 'rss' with its resident set size (and its parts), 'stats' with what the
// process spent since the last 'stats' (CPU time, the event loop's delay, GC pauses while watched), and stops
// when the parent sends 'stop' or goes away.
//
// The stats are the bench's, not the server's: a 10 ms-resolution event-loop monitor, and a GC
// observer only between 'watch-gc' and 'unwatch-gc' (the mixed run's rounds): the entry Node makes
// for each collection reaches the old space, and a GC observer on all the time gave the API a
// mark-compact every 7 s of reads that the product (which observes no GC: src/ops/metrics.ts)
// does not have.
import { readdirSync, readFileSync } from 'node:fs'
import { getHeapSpaceStatistics } from 'node:v8'
import type { AddressInfo } from 'node:net'
import { constants, monitorEventLoopDelay, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks'

/** What the parent passes to a petstore child, as JSON in argv[3]. */
export interface PetstoreChildSettings {
  /**
   * The environment loadConfig reads (DATABASE_URL, REDIS_URL, LOG_LEVEL …), as a literal. A
   * REDIS_URL carries `?keyPrefix=` so the run's counters never mix with anyone else's.
   */
  env: Record<string, string>
}

export type ChildMessage =
  | { type: 'ready'; port: number }
  | { type: 'rss'; rss: number; parts: MemoryParts }
  | { type: 'stats'; stats: ProcessStats }
  | { type: 'deliveries'; deliveries: Deliveries }

/**
 * What the receiver saw, by request path (one per endpoint): POSTs in all, and per event type the
 * distinct event ids (the webhook-id header) and the repeats of an id already seen (delivery is
 * at least once, so a repeat is allowed, but it is counted apart).
 */
export type Deliveries = Record<string, { posts: number; types: Record<string, { distinct: number; repeats: number }> }>

/**
 * Where the resident set goes, MiB: the pages mapped from files (the Node binary and its
 * libraries, read-only and shared), the anonymous ones, and of those what V8's heap has committed
 * (the young generation's semi-spaces apart), what lives outside it (Buffers, ArrayBuffers), and
 * the threads (a worker thread has an isolate of its own; the server starts none since the checkpoint left its worker).
 */
export interface MemoryParts {
  fileMiB: number
  anonMiB: number
  heapCommittedMiB: number
  youngMiB: number
  heapUsedMiB: number
  externalMiB: number
  threads: number
}

/** What the server process spent between two 'stats' messages. */
export interface ProcessStats {
  /** CPU time, user and system, in µs. */
  cpuUs: number
  /** The event loop's delay (monitorEventLoopDelay, 10 ms resolution), ms. */
  loopP99Ms: number
  loopMaxMs: number
  /** GC pauses: how many, their total and the longest, by kind (minor, major, incremental, weak). */
  gc: Record<string, { count: number; totalMs: number; maxMs: number }>
  /** The heap in use and the RSS at the end of the span, MiB. */
  heapUsedMiB: number
  rssMiB: number
  /** The longest stall of the span (see stallWatch), or null when none passed STALL_MS. */
  longestStall: Stall | null
  /** Stalls past STALL_MS, and their total, ms. */
  stalls: number
  stalledMs: number
  /**
   * CPU time by thread, in µs (Linux; empty elsewhere): the main thread (the event loop), the
   * worker threads (none since the checkpoint left its worker), libuv's pool (the writer's fsyncs), V8's helpers
   * (concurrent GC and compilation), the rest. cpuUs is their sum.
   */
  threadCpuUs: Partial<Record<ThreadKind, number>>
  /**
   * Time the hypervisor ran something else on the CPUs this process may run on (steal, from
   * /proc/stat), in ms; NaN where there is no /proc. On a virtual machine a tick stolen while the
   * server ran may still count as the server's CPU time: a round with steal inflates CPU µs/req.
   */
  stealMs: number
}

export type ThreadKind = 'main' | 'worker' | 'pool' | 'v8' | 'other'

const THREAD_KINDS: Record<string, ThreadKind> = { MainThread: 'main', WorkerThread: 'worker', 'libuv-worker': 'pool', V8Worker: 'v8' }

/** The steal time so far of the CPUs this process may run on (Cpus_allowed_list), in ms. */
function stealTime (): number {
  try {
    const allowed = /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? ''
    const cpus = new Set<number>()
    for (const range of allowed.split(',')) {
      const [from, to] = range.split('-').map(Number)
      for (let c = from!; c <= (to ?? from!); c++) cpus.add(c)
    }
    let ticks = 0
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      const match = /^cpu(\d+) (.*)$/.exec(line)
      // Field 8 of a cpuN line is steal, in USER_HZ ticks (100 per second).
      if (match !== null && cpus.has(Number(match[1]))) ticks += Number(match[2]!.split(' ')[7])
    }
    return ticks * 10
  } catch {
    return NaN
  }
}

/** Each thread's CPU time so far (user and system, µs), by thread id, and its kind. Threads that ended are gone. */
function threadTimes (): Map<string, { kind: ThreadKind; us: number }> {
  const out = new Map<string, { kind: ThreadKind; us: number }>()
  let tids: string[]
  try {
    tids = readdirSync('/proc/self/task')
  } catch {
    return out
  }
  const usPerTick = 1e6 / 100 // USER_HZ: 100 on Linux
  for (const tid of tids) {
    try {
      const comm = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()
      // Fields 14 and 15 of stat (utime, stime), counted after the parenthesised name.
      const fields = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      out.set(tid, { kind: THREAD_KINDS[comm] ?? 'other', us: (Number(fields[11]) + Number(fields[12])) * usPerTick })
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out
}

/**
 * Where the time of an event-loop stall went, from the main thread's /proc schedstat: running
 * (JS, GC, native work on the loop), waiting for a CPU (another process had the core: the
 * machine's load, not the server), or neither (blocked in a system call: a disk write or fsync,
 * a lock).
 */
export interface Stall { wallMs: number; runningMs: number; waitingForCpuMs: number; blockedMs: number; gcMs: number }

/** A tick of the stall watch later than this is a stall. */
const STALL_MS = 20
const TICK_MS = 5

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak'
}

/** The main thread's [running, waiting for a CPU] in ns, or null where /proc has no schedstat. */
function schedstat (): [number, number] | null {
  try {
    const [running, waiting] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')
    return [Number(running), Number(waiting)]
  } catch {
    return null
  }
}

/**
 * A timer every TICK_MS; a tick that comes more than STALL_MS late marks a stall, and the
 * schedstat difference since the previous tick says where its time went. The GC pauses that
 * ended in the stall are counted into it.
 */
function stallWatch (
  gcSince: (from: number) => number
): () => { longest: Stall | null; count: number; totalMs: number } {
  let longest: Stall | null = null
  let count = 0
  let totalMs = 0
  let last = performance.now()
  let lastSched = schedstat()
  const timer = setInterval(() => {
    const now = performance.now()
    const sched = schedstat()
    const wallMs = now - last
    if (wallMs > TICK_MS + STALL_MS) {
      const runningMs = sched !== null && lastSched !== null ? (sched[0] - lastSched[0]) / 1e6 : NaN
      const waitingForCpuMs = sched !== null && lastSched !== null ? (sched[1] - lastSched[1]) / 1e6 : NaN
      const stall = {
        wallMs,
        runningMs,
        waitingForCpuMs,
        blockedMs: Math.max(0, wallMs - runningMs - waitingForCpuMs),
        gcMs: gcSince(last)
      }
      count++
      totalMs += wallMs
      if (longest === null || wallMs > longest.wallMs) longest = stall
    }
    last = now
    lastSched = sched
  }, TICK_MS)
  timer.unref()
  return () => {
    const out = { longest, count, totalMs }
    longest = null
    count = 0
    totalMs = 0
    return out
  }
}

interface StatsMonitor {
  /** What the process spent since the last call. */
  take: () => ProcessStats
  /** Starts (true) or stops observing GC; its pauses are in `take`'s `gc` only while observed. */
  watchGc: (on: boolean) => void
}

function statsMonitor (): StatsMonitor {
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  let gc: ProcessStats['gc'] = {}
  // The last second of GC pauses, [end time, duration], for the stall watch.
  const recentGc: [number, number][] = []
  const stalls = stallWatch((from) => recentGc.filter(([end]) => end >= from).reduce((ms, [, d]) => ms + d, 0))
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      recentGc.push([entry.startTime + entry.duration, entry.duration])
      if (recentGc.length > 200) recentGc.splice(0, 100)
      const kind = GC_KINDS[((entry as PerformanceEntry & { detail?: { kind?: number } }).detail)?.kind ?? -1] ?? 'other'
      const g = gc[kind] ??= { count: 0, totalMs: 0, maxMs: 0 }
      g.count++
      g.totalMs += entry.duration
      g.maxMs = Math.max(g.maxMs, entry.duration)
    }
  })
  let cpu = process.cpuUsage()
  let threads = threadTimes()
  let steal = stealTime()
  let watching = false
  const watchGc = (on: boolean): void => {
    if (on === watching) return
    watching = on
    if (on) observer.observe({ entryTypes: ['gc'] })
    else observer.disconnect()
  }
  const take = (): ProcessStats => {
    const stealNow = stealTime()
    const stealMs = stealNow - steal
    steal = stealNow
    const spent = process.cpuUsage(cpu)
    cpu = process.cpuUsage()
    const now = threadTimes()
    const threadCpuUs: ProcessStats['threadCpuUs'] = {}
    for (const [tid, t] of now) threadCpuUs[t.kind] = (threadCpuUs[t.kind] ?? 0) + t.us - (threads.get(tid)?.us ?? 0)
    threads = now
    const stalled = stalls()
    const stats: ProcessStats = {
      longestStall: stalled.longest,
      stalls: stalled.count,
      stalledMs: stalled.totalMs,
      cpuUs: spent.user + spent.system,
      threadCpuUs,
      stealMs,
      loopP99Ms: loop.percentile(99) / 1e6,
      loopMaxMs: loop.max / 1e6,
      gc,
      heapUsedMiB: process.memoryUsage().heapUsed / 2 ** 20,
      rssMiB: process.memoryUsage.rss() / 2 ** 20
    }
    loop.reset()
    gc = {}
    return stats
  }
  return { take, watchGc }
}

function memoryParts (): MemoryParts {
  const status = new Map<string, number>()
  try {
    for (const line of readFileSync('/proc/self/status', 'utf8').split('\n')) {
      const [key, value] = line.split(':')
      if (key !== undefined && value !== undefined) status.set(key, parseInt(value, 10))
    }
  } catch {
    // Not Linux: the parts /proc gives are NaN.
  }
  const usage = process.memoryUsage()
  const mib = (bytes: number): number => bytes / 2 ** 20
  const young = getHeapSpaceStatistics().filter((s) => s.space_name === 'new_space' || s.space_name === 'new_large_object_space')
  return {
    fileMiB: (status.get('RssFile') ?? NaN) / 1024,
    anonMiB: (status.get('RssAnon') ?? NaN) / 1024,
    heapCommittedMiB: mib(usage.heapTotal),
    youngMiB: mib(young.reduce((n, s) => n + s.space_size, 0)),
    heapUsedMiB: mib(usage.heapUsed),
    externalMiB: mib(usage.external),
    threads: status.get('Threads') ?? NaN
  }
}

// node:http's CommonJS exports, not `import … from 'node:http'`: an ES import of the module
// evaluates every export, and its WebSocket, CloseEvent and MessageEvent getters load undici,
// Node's fetch (0.8 MB of source, about 2.5 MiB of heap) that neither server uses.
const { createServer } = process.getBuiltinModule('node:http')

/** The baseline's whole answer: small and fixed, with the headers a JSON API sends anyway. */
export const BARE_BODY = Buffer.from(JSON.stringify({ id: 1, name: 'Rex', categoryId: 1, status: 'available' }))

function send (message: ChildMessage): void {
  process.send?.(message)
}

async function bare (): Promise<() => Promise<void>> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': BARE_BODY.length })
    response.end(BARE_BODY)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  send({ type: 'ready', port: (server.address() as AddressInfo).port })
  return () => new Promise<void>((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
}

/**
 * The webhook receiver: every POST gets 204 once its body is read, the way a quick receiver
 * acknowledges. It keeps the ids it saw (a Set of strings: some 100 bytes an event).
 */
async function receiver (): Promise<{ stop: () => Promise<void>; deliveries: () => Deliveries }> {
  const seen = new Map<string, { posts: number; ids: Map<string, Set<string>>; repeats: Map<string, number> }>()
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const where = request.url ?? '/'
      const entry = seen.get(where) ?? { posts: 0, ids: new Map(), repeats: new Map() }
      seen.set(where, entry)
      entry.posts++
      let type = 'unreadable'
      try {
        type = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type?: unknown }).type)
      } catch { /* counted as unreadable */ }
      const id = String(request.headers['webhook-id'] ?? '')
      const ids = entry.ids.get(type) ?? new Set<string>()
      entry.ids.set(type, ids)
      if (ids.has(id)) entry.repeats.set(type, (entry.repeats.get(type) ?? 0) + 1)
      else ids.add(id)
      response.writeHead(request.method === 'POST' ? 204 : 405).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  send({ type: 'ready', port: (server.address() as AddressInfo).port })
  return {
    stop: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections() }),
    deliveries: () => Object.fromEntries([...seen].map(([where, e]) => [where, {
      posts: e.posts,
      types: Object.fromEntries([...e.ids].map(([type, ids]) => [
        type,
        { distinct: ids.size, repeats: e.repeats.get(type) ?? 0 }
      ]))
    }]))
  }
}

/** The very composition `petstore serve` runs (logger, metrics, ban sync, drain), on port 0. */
async function petstore (settings: PetstoreChildSettings): Promise<() => Promise<void>> {
  // Imported here, not at the top: the peers' children (--peers) never load the API.
  const [{ loadConfig }, { startServer }] = await Promise.all([import('../src/config.ts'), import('../src/server.ts')])
  const config = loadConfig({ ...settings.env, HOST: '127.0.0.1', PORT: '0' })
  const running = await startServer(config)
  send({ type: 'ready', port: Number(new URL(running.url).port) })
  return () => running.close()
}

/** The afternoon app (bench/peers/afternoon.ts) on its seeded file. */
async function afternoon (file: string): Promise<() => Promise<void>> {
  const { buildAfternoonApp } = await import('./peers/afternoon.ts')
  const app = buildAfternoonApp(file)
  await app.listen({ port: 0, host: '127.0.0.1' })
  send({ type: 'ready', port: (app.server.address() as AddressInfo).port })
  return () => app.close()
}

/** json-server at its defaults (bench/peers/json-server.ts) on its db.json. */
async function jsonServer (file: string): Promise<() => Promise<void>> {
  const { startJsonServer } = await import('./peers/json-server.ts')
  const running = await startJsonServer(file)
  send({ type: 'ready', port: running.port })
  return running.close
}

async function main (): Promise<void> {
  const [mode, json] = process.argv.slice(2)
  let stop: () => Promise<void>
  let deliveries: (() => Deliveries) | null = null
  if (mode === 'bare') stop = await bare()
  else if (mode === 'petstore' && json !== undefined) stop = await petstore(JSON.parse(json) as PetstoreChildSettings)
  else if (mode === 'receiver') ({ stop, deliveries } = await receiver())
  else if (mode === 'afternoon' && json !== undefined) stop = await afternoon(json)
  else if (mode === 'json-server' && json !== undefined) stop = await jsonServer(json)
  else throw new Error('usage: node bench/server.ts bare | petstore <settings json> | receiver | afternoon FILE | json-server FILE (started by bench/run.ts)')

  let stopping = false
  const shutdown = (): void => {
    if (stopping) return
    stopping = true
    stop().then(() => { process.exitCode = 0 }, (error: unknown) => {
      process.stderr.write(`bench server: stop failed: ${(error as Error).message}\n`)
      process.exitCode = 1
    }).finally(() => { if (process.connected) process.disconnect() })
  }
  const stats = statsMonitor()
  process.on('message', (message) => {
    if (message === 'stop') shutdown()
    if (message === 'rss') send({ type: 'rss', rss: process.memoryUsage.rss(), parts: memoryParts() })
    if (message === 'stats') send({ type: 'stats', stats: stats.take() })
    if (message === 'watch-gc' || message === 'unwatch-gc') stats.watchGc(message === 'watch-gc')
    if (message === 'deliveries') send({ type: 'deliveries', deliveries: deliveries?.() ?? {} })
  })
  // The parent died or closed the channel: never outlive it.
  process.on('disconnect', shutdown)
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)
}

// Only when run, not when the parent imports BARE_BODY or the types.
if (import.meta.main) {
  main().catch((error: unknown) => {
    process.stderr.write(`bench server: ${(error as Error).message}\n`)
    process.exit(1)
  })
}
