// npm run bench:capacity: the inputs of docs/scaling.md's capacity model (issue 34).
//
// 1. Per request, what one API instance asks of Redis and PostgreSQL: it runs on PostgreSQL + the
//    Redis limiter with both connections through counting TCP proxies in this process, which read
//    the protocols (RESP commands; PostgreSQL's messages, CommandComplete tags and ReadyForQuery
//    states) and count bytes and round trips (a client write after a server answer starts one).
//    The API is idle for as long as it is loaded, and that background (the webhook dispatcher's
//    polls, the sweeps, the ban sync) is subtracted. PostgreSQL runs in a database of its own, so
//    its pg_stat_database xact_commit delta is ours alone and checks the proxy's count
//    (pg_stat_statements needs shared_preload_libraries, which this server does not have).
// 2. The ceilings of one Redis and one PostgreSQL on this machine: redis-benchmark sending the
//    limiter's own script (EVALSHA, as the API sends it, with the arguments the API sent), and
//    pgbench running the API's own order statement (place_orders with the parameters the API
//    bound), one order a call and ten a call (the group commit).
//
// Everything is cleaned up: the database is dropped, the Redis keys deleted.
import { execFileSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { createPostgresStores } from '../src/storage/postgres/index.ts'
import { deleteRedisKeys, withPostgres } from '../scripts/services.ts'
import { startServer, type ChildServer } from './processes.ts'
import { seed, type Seeded } from './scenarios.ts'

const HERE = path.dirname(fileURLToPath(import.meta.url))

// ---------------------------------------------------------------------------------------------
// Counting proxies

export interface Counts {
  /** Client to server, server to client. */
  bytesUp: number
  bytesDown: number
  /** A client write after the server last spoke (or the first): one request and its wait. */
  roundTrips: number
  /** Redis: commands by name. PostgreSQL: statements run (CommandComplete) by tag's first word. */
  commands: Record<string, number>
  /** PostgreSQL: transactions ended (a ReadyForQuery back to idle after a statement). */
  transactions: number
}

const emptyCounts = (): Counts => ({ bytesUp: 0, bytesDown: 0, roundTrips: 0, commands: {}, transactions: 0 })

export function diffCounts (after: Counts, before: Counts): Counts {
  const commands: Record<string, number> = {}
  for (const [k, v] of Object.entries(after.commands)) commands[k] = v - (before.commands[k] ?? 0)
  return {
    bytesUp: after.bytesUp - before.bytesUp,
    bytesDown: after.bytesDown - before.bytesDown,
    roundTrips: after.roundTrips - before.roundTrips,
    commands,
    transactions: after.transactions - before.transactions
  }
}

/** RESP commands a client sent, from its byte stream (arrays of bulk strings); the parts of each to `onCommand`. */
export function respReader (onCommand: (parts: Buffer[]) => void): (chunk: Buffer) => void {
  let buffer = Buffer.alloc(0)
  return (chunk) => {
    buffer = Buffer.concat([buffer, chunk])
    while (true) {
      let at = 0
      const line = (): string | null => {
        const end = buffer.indexOf('\r\n', at)
        if (end === -1) return null
        const text = buffer.toString('latin1', at, end)
        at = end + 2
        return text
      }
      const head = line()
      if (head === null || !head.startsWith('*')) return
      const parts: Buffer[] = []
      let complete = true
      for (let i = 0; i < Number(head.slice(1)); i++) {
        const size = line()
        if (size === null) { complete = false; break }
        const n = Number(size.slice(1))
        if (buffer.length < at + n + 2) { complete = false; break }
        parts.push(buffer.subarray(at, at + n))
        at += n + 2
      }
      if (!complete) return
      buffer = buffer.subarray(at)
      onCommand(parts)
    }
  }
}

/** PostgreSQL messages from one side: the client's startup message has no type byte. */
export function pgReader (startup: boolean, onMessage: (type: string, body: Buffer) => void): (chunk: Buffer) => void {
  let buffer = Buffer.alloc(0)
  let first = startup
  return (chunk) => {
    buffer = Buffer.concat([buffer, chunk])
    while (true) {
      if (first) {
        if (buffer.length < 4) return
        const n = buffer.readInt32BE(0)
        if (buffer.length < n) return
        buffer = buffer.subarray(n)
        first = false
        continue
      }
      if (buffer.length < 5) return
      const n = buffer.readInt32BE(1)
      if (buffer.length < n + 1) return
      onMessage(String.fromCharCode(buffer[0]!), buffer.subarray(5, n + 1))
      buffer = buffer.subarray(n + 1)
    }
  }
}

interface Proxy { port: number; counts: Counts; server: Server }

/** A TCP proxy to `target` that counts what passes, and lets `watch` read both directions. */
async function countingProxy (
  target: number,
  watch: (counts: Counts) => { up (chunk: Buffer): void; down (chunk: Buffer): void }
): Promise<Proxy> {
  const counts = emptyCounts()
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1')
    const w = watch(counts)
    let serverSpoke = true
    sockets.add(client).add(upstream)
    client.on('data', (chunk: Buffer) => {
      if (serverSpoke) counts.roundTrips++
      serverSpoke = false
      counts.bytesUp += chunk.length
      w.up(chunk)
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      serverSpoke = true
      counts.bytesDown += chunk.length
      w.down(chunk)
      client.write(chunk)
    })
    const close = (): void => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream) }
    client.on('close', close).on('error', close)
    upstream.on('close', close).on('error', close)
  })
  server.on('close', () => { for (const s of sockets) s.destroy() })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, counts, server }
}

// ---------------------------------------------------------------------------------------------

/**
 * The limiter's script (from its one EVAL), the arguments of a `consume` call, and the API's order
 * statement with its parameters.
 */
interface Captured {
  script: string | null
  consumeArgs: string[] | null
  placeOrders: { sql: string; params: (string | null)[] } | null
}

function redisWatch (captured: Captured) {
  return (counts: Counts) => ({
    up: respReader((parts) => {
      const name = parts[0]?.toString('latin1').toUpperCase() ?? '?'
      counts.commands[name] = (counts.commands[name] ?? 0) + 1
      if (name === 'EVAL' && captured.script === null) captured.script = parts[1]!.toString('utf8')
      // EVAL(SHA) script-or-sha numkeys k1 k2 k3 'now perMinute perDay minuteReset dayReset op shortDay':
      // a batch of one call (src/ratelimit/redis.ts), so that redis-benchmark's calls are one each.
      if ((name === 'EVAL' || name === 'EVALSHA') && captured.consumeArgs === null && parts.length === 7
        && parts[6]?.toString('latin1').includes(' consume ') === true) {
        captured.consumeArgs = parts.slice(6).map((p) => p.toString('utf8'))
      }
    }),
    down: () => {}
  })
}

function pgWatch (captured: Captured) {
  return (counts: Counts) => {
    const statements = new Map<string, string>()
    let ran = false
    return {
      up: pgReader(true, (type, body) => {
        if (type === 'P') {
          const nameEnd = body.indexOf(0)
          statements.set(body.toString('utf8', 0, nameEnd), body.toString('utf8', nameEnd + 1, body.indexOf(0, nameEnd + 1)))
        }
        if (type === 'B' && captured.placeOrders === null) {
          let at = body.indexOf(0) + 1
          const statement = body.toString('utf8', at, body.indexOf(0, at))
          const sql = statements.get(statement) ?? ''
          if (!sql.includes('place_orders(')) return
          at = body.indexOf(0, at) + 1
          at += 2 + 2 * body.readInt16BE(at)
          const params: (string | null)[] = []
          const n = body.readInt16BE(at)
          at += 2
          for (let i = 0; i < n; i++) {
            const len = body.readInt32BE(at)
            at += 4
            params.push(len === -1 ? null : body.toString('utf8', at, at + len))
            if (len > 0) at += len
          }
          captured.placeOrders = { sql, params }
        }
      }),
      down: pgReader(false, (type, body) => {
        if (type === 'C') {
          const tag = body.toString('latin1', 0, body.length - 1).split(' ')[0] ?? '?'
          counts.commands[tag] = (counts.commands[tag] ?? 0) + 1
          ran = true
        }
        if (type === 'Z') {
          if (body[0] === 0x49 && ran) counts.transactions++ // 'I': idle again
          if (body[0] === 0x49) ran = false
        }
      })
    }
  }
}

interface Kind { id: string; method: 'GET' | 'POST'; path: (i: number) => string; body?: string }

/** `count` requests, `concurrency` at a time; every answer must be 2xx. */
async function send (base: string, apiKey: string, kind: Kind, count: number, concurrency: number): Promise<number> {
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++
      const response = await fetch(base + kind.path(i), {
        method: kind.method,
        headers: { 'x-api-key': apiKey, ...(kind.body !== undefined && { 'content-type': 'application/json' }) },
        ...(kind.body !== undefined && { body: kind.body })
      })
      await response.arrayBuffer()
      if (response.status >= 300) throw new Error(`${kind.method} ${kind.path(i)} answered ${response.status}`)
    }
  }))
  return (performance.now() - started) / 1000
}

async function xactCommit (url: string, database: string): Promise<number> {
  return await withPostgres(url, async (c) => Number((await c.query('SELECT xact_commit FROM pg_stat_database WHERE datname = $1', [database])).rows[0]?.xact_commit ?? 0))
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

interface PerRequest {
  kind: string
  requests: number
  seconds: number
  redis: Counts
  postgres: Counts
  xactCommitPerRequest: number | null
}

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '2000' },
      postgres: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
      redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
      seconds: { type: 'string', default: '10' },
      out: { type: 'string' }
    },
    strict: true
  })
  const requests = Number(values.requests)
  const seconds = Number(values.seconds)
  const cleanups: (() => Promise<unknown>)[] = []
  const database = `petstore_capacity_${randomBytes(5).toString('hex')}`
  const adminUrl = values.postgres
  const pg = new URL(adminUrl)
  const redisTarget = new URL(values.redis)
  const captured: Captured = { script: null, consumeArgs: null, placeOrders: null }
  const out: {
    startedAt: string
    perRequest: PerRequest[]
    redisBenchmark: Record<string, number>
    pgbench: Record<string, number>
    machine: string
    loadAverage: number[][]
  } = {
    startedAt: new Date().toISOString(),
    perRequest: [],
    redisBenchmark: {},
    pgbench: {},
    machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? '?'}`,
    loadAverage: [os.loadavg()]
  }
  try {
    await withPostgres(adminUrl, (c) => c.query(`CREATE DATABASE ${database}`))
    cleanups.push(() => withPostgres(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)))
    const direct = new URL(adminUrl)
    direct.pathname = `/${database}`
    const seeded: Seeded = await (async () => {
      const stores = await createPostgresStores(direct.toString(), { poolMax: 16 })
      try { return await seed(stores, 1000, direct.toString()) } finally { await stores.close() }
    })()
    const pgProxy = await countingProxy(Number(pg.port || 5432), pgWatch(captured))
    const redisProxy = await countingProxy(Number(redisTarget.port || 6379), redisWatch(captured))
    cleanups.push(async () => { pgProxy.server.close(); redisProxy.server.close() })
    const viaProxy = new URL(direct)
    viaProxy.port = String(pgProxy.port)
    const prefix = `petstore:capacity:${randomBytes(5).toString('hex')}:`
    const redisAdmin = new Redis(values.redis)
    cleanups.push(async () => { await deleteRedisKeys(redisAdmin, prefix); redisAdmin.disconnect() })
    const env = {
      DATABASE_URL: viaProxy.toString(),
      REDIS_URL: `redis://127.0.0.1:${redisProxy.port}/?keyPrefix=${encodeURIComponent(prefix)}`,
      ORDER_LIMITS: 'enterprise=none',
      LOG_LEVEL: 'info'
    }
    const api: ChildServer = await startServer('capacity', null, { petstore: { env } })
    cleanups.push(() => api.stop())

    const orderBody = JSON.stringify({ petId: seeded.orderPetId, quantity: 1 })
    const kinds: Kind[] = [
      { id: 'GET /v1/pets/{id}', method: 'GET', path: (i) => `/v1/pets/${seeded.petIds[i % seeded.petIds.length]}` },
      { id: 'GET /v1/pets?id={id}', method: 'GET', path: (i) => `/v1/pets?id=${seeded.petIds[i % seeded.petIds.length]}` },
      { id: 'GET /v1/pets?limit=20', method: 'GET', path: () => '/v1/pets?limit=20' },
      { id: 'POST /v1/store/orders', method: 'POST', path: () => '/v1/store/orders', body: orderBody }
    ]
    // The background: what the idle instance asks for per second (jobs, polls).
    const idleBefore = { redis: structuredClone(redisProxy.counts), postgres: structuredClone(pgProxy.counts) }
    await sleep(seconds * 1000)
    const idle = {
      redis: diffCounts(redisProxy.counts, idleBefore.redis),
      postgres: diffCounts(pgProxy.counts, idleBefore.postgres)
    }
    for (const kind of kinds) {
      await send(api.base, seeded.apiKey, kind, 200, 10) // warm-up: caches, prepared statements
      const before = {
        redis: structuredClone(redisProxy.counts),
        postgres: structuredClone(pgProxy.counts),
        xact: await xactCommit(adminUrl, database)
      }
      const took = await send(api.base, seeded.apiKey, kind, requests, 10)
      const after = { redis: structuredClone(redisProxy.counts), postgres: structuredClone(pgProxy.counts) }
      // Idle backends report their statistics within 10 s (PGSTAT_IDLE_INTERVAL).
      await sleep(11_000)
      const xact = await xactCommit(adminUrl, database) - before.xact
      const scale = (c: Counts, background: Counts, s: number): Counts => {
        const f = s / seconds
        const commands: Record<string, number> = {}
        for (const [k, v] of Object.entries(c.commands)) {
          commands[k] = Math.max(0, v - (background.commands[k] ?? 0) * f) / requests
        }
        return {
          bytesUp: Math.max(0, c.bytesUp - background.bytesUp * f) / requests,
          bytesDown: Math.max(0, c.bytesDown - background.bytesDown * f) / requests,
          roundTrips: Math.max(0, c.roundTrips - background.roundTrips * f) / requests,
          transactions: Math.max(0, c.transactions - background.transactions * f) / requests,
          commands
        }
      }
      // The xact delta spans the load and the 11 s wait, both with the background running.
      const xactPerRequest = Math.max(0, xact - idle.postgres.transactions * (took + 11) / seconds) / requests
      out.perRequest.push({
        kind: kind.id, requests, seconds: took,
        redis: scale(diffCounts(after.redis, before.redis), idle.redis, took),
        postgres: scale(diffCounts(after.postgres, before.postgres), idle.postgres, took),
        xactCommitPerRequest: xactPerRequest
      })
      process.stdout.write(`${kind.id}: ${JSON.stringify(out.perRequest.at(-1))}\n`)
    }
    out.perRequest.push({
      kind: 'idle instance, per second',
      requests: seconds,
      seconds,
      redis: scaleIdle(idle.redis, seconds),
      postgres: scaleIdle(idle.postgres, seconds),
      xactCommitPerRequest: null
    })
    await api.stop()

    // The ceilings.
    if (captured.script !== null && captured.consumeArgs !== null) {
      const { script, consumeArgs: args } = captured
      const sha = createHash('sha1').update(script).digest('hex')
      await redisAdmin.script('LOAD', script)
      const keys = ['m', 'd', 's'].map((k) => `${prefix}rb:{__rand_int__}:${k}`)
      for (const clients of [50, 200]) {
        const text = execFileSync(
          'redis-benchmark',
          [
            '-h', redisTarget.hostname, '-p', redisTarget.port || '6379', '-c', String(clients), '-n', '200000',
            '-r', '100000', '-q', 'EVALSHA', sha, '3', ...keys, ...args
          ],
          { encoding: 'utf8', timeout: 300_000 }
        )
        const rate = /([\d.]+) requests per second/.exec(text)
        out.redisBenchmark[`EVALSHA limiter script, ${clients} clients`] = rate === null ? NaN : Number(rate[1])
        process.stdout.write(`redis-benchmark ${clients} clients: ${text.trim().split('\r').at(-1)}\n`)
      }
      const get = execFileSync(
        'redis-benchmark',
        ['-h', redisTarget.hostname, '-p', redisTarget.port || '6379', '-c', '50', '-n', '200000', '-q', '-t', 'get'],
        { encoding: 'utf8', timeout: 300_000 }
      )
      out.redisBenchmark['GET, 50 clients (for scale)'] = Number(/([\d.]+) requests per second/.exec(get)?.[1] ?? NaN)
    }
    if (captured.placeOrders !== null) {
      const [items, ttl] = captured.placeOrders.params
      const one = (JSON.parse(items!) as Record<string, unknown>[])[0]!
      const dir = await mkdtemp(path.join(os.tmpdir(), 'petstore-capacity-'))
      cleanups.push(() => rm(dir, { recursive: true, force: true }))
      for (const batch of [1, 10]) {
        const file = path.join(dir, `order-${batch}.sql`)
        const orders = Array.from({ length: batch }, () => ({ ...one, key: null, fingerprint: null, scope: null }))
        const json = JSON.stringify(orders)
          .replaceAll('":', '": ')
          .replaceAll("'", "''")
        await writeFile(file, `SELECT count(*) FROM place_orders('${json}'::jsonb, ${ttl});\n`)
        for (const clients of [8, 32]) {
          const text = execFileSync(
            'pgbench',
            [
              '-n', '-M', 'prepared', '-c', String(clients), '-j', '2', '-T', String(seconds), '-f', file,
              '-h', pg.hostname, '-p', pg.port || '5432', '-U', pg.username || 'postgres', database
            ],
            { encoding: 'utf8', timeout: 300_000 }
          )
          const tps = Number(/tps = ([\d.]+)/.exec(text)?.[1] ?? NaN)
          out.pgbench[`place_orders, ${batch} order${batch === 1 ? '' : 's'} a call, ${clients} clients: orders/s`] = tps * batch
          process.stdout.write(`pgbench ${batch} a call, ${clients} clients: ${tps.toFixed(0)} tps, ${(tps * batch).toFixed(0)} orders/s\n`)
        }
      }
    }
    out.loadAverage.push(os.loadavg())
  } finally {
    for (const fn of cleanups.reverse()) {
      await fn().catch((error: unknown) => process.stderr.write(`cleanup: ${(error as Error).message}\n`))
    }
  }
  const dir = values.out ?? path.join(HERE, 'results')
  await mkdir(dir, { recursive: true })
  await writeFile(path.join(dir, 'capacity.json'), JSON.stringify(out, null, 2) + '\n')
  process.stdout.write(`\n${render(out.perRequest)}\n\nredis-benchmark: ${JSON.stringify(out.redisBenchmark)}\n`
    + `pgbench: ${JSON.stringify(out.pgbench)}\n`
    + `load average ${out.loadAverage.map((l) => l.map((x) => x.toFixed(1)).join(' ')).join(' -> ')}\n`
    + `written to ${path.join(dir, 'capacity.json')}\n`)
}

function scaleIdle (c: Counts, seconds: number): Counts {
  return {
    bytesUp: c.bytesUp / seconds,
    bytesDown: c.bytesDown / seconds,
    roundTrips: c.roundTrips / seconds,
    transactions: c.transactions / seconds,
    commands: Object.fromEntries(Object.entries(c.commands).map(([k, v]) => [k, v / seconds]))
  }
}

function render (rows: PerRequest[]): string {
  const f = (n: number): string => n.toFixed(2)
  const cmds = (c: Record<string, number>): string => Object.entries(c)
    .filter(([, v]) => v >= 0.005)
    .map(([k, v]) => `${k} ${f(v)}`)
    .join(', ') || '-'
  return ['| per request | Redis commands | Redis round trips | Redis bytes up/down | PostgreSQL statements | PostgreSQL round trips | PostgreSQL transactions (proxy / xact_commit) | PostgreSQL bytes up/down |', '|---|---|---:|---:|---|---:|---:|---:|',
    ...rows.map((r) => `| ${r.kind} | ${cmds(r.redis.commands)} | ${f(r.redis.roundTrips)}`
      + ` | ${r.redis.bytesUp.toFixed(0)} / ${r.redis.bytesDown.toFixed(0)}`
      + ` | ${cmds(r.postgres.commands)} | ${f(r.postgres.roundTrips)}`
      + ` | ${f(r.postgres.transactions)} / ${r.xactCommitPerRequest === null ? '-' : f(r.xactCommitPerRequest)}`
      + ` | ${r.postgres.bytesUp.toFixed(0)} / ${r.postgres.bytesDown.toFixed(0)} |`)].join('\n')
}

await main()
