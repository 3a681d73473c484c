// What the scale tests share: real server processes (`petstore serve --port 0` on the Node 24
// running the tests; test/helpers/server.ts), the CLI in-process, a TCP proxy that stands in for the network to
// PostgreSQL or Redis, and isolation on the shared local services (a fresh PostgreSQL schema
// through DATABASE_URL, a unique Redis key prefix through REDIS_URL).
import { randomUUID } from 'node:crypto'
import { connect, createServer, type Socket } from 'node:net'
import type { TestContext } from 'node:test'
import { Redis } from 'ioredis'
import { main } from '../../src/cli/main.ts'
import { memoryIo } from '../helpers/io.ts'
import { testRedisReason, TEST_REDIS_URL } from '../helpers/limiter.ts'
import { deleteRedisKeys, requireService } from '../helpers/services.ts'
import { pollUntil, type cleanupStack } from '../helpers/server.ts'
import { createTestSchema, testPostgresReason, TEST_DATABASE_URL } from '../helpers/stores.ts'

/** The Redis the tests use: PETSTORE_TEST_REDIS_URL, else the local server (as test/helpers/limiter.ts). */
export { TEST_REDIS_URL }

/**
 * The server process and the cleanup order live in test/helpers/server.ts; re-exported for the
 * scale tests' imports.
 */
export { cleanupStack, pollUntil, startServerProcess, type ServerProcess } from '../helpers/server.ts'

// ---------------------------------------------------------------------------------------------
// Services: the rule of test/helpers/services.ts (skip with the reason, fail under CI).

/**
 * Resolves true when every service named answers. Otherwise skips the test with the reasons and
 * resolves false (the caller returns at once), or, under CI, throws them.
 */
export async function requireServices (t: TestContext, services: ReadonlyArray<'postgres' | 'redis'>): Promise<boolean> {
  const reasons = (await Promise.all(services.map((s) => s === 'postgres' ? testPostgresReason() : testRedisReason())))
    .filter((r): r is string => r !== null)
  return requireService(t, reasons.length === 0 ? null : reasons.join('; '))
}

// ---------------------------------------------------------------------------------------------
// Isolation on the shared services.

/**
 * A fresh PostgreSQL schema (createTestSchema: dropped after the test) named in the URL's
 * `options` parameter (`-c search_path=...`), which pg sends at connect: a server process given
 * this DATABASE_URL works in that schema only. `base` may be a proxy's address.
 */
export async function schemaDatabaseUrl (
  t: TestContext,
  base: string = TEST_DATABASE_URL
): Promise<{ schema: string; url (base?: string): string }> {
  const schema = await createTestSchema(t)
  return {
    schema,
    url (other = base) {
      const u = new URL(other)
      u.searchParams.set('options', `-c search_path=${schema}`)
      return u.toString()
    }
  }
}

/**
 * A REDIS_URL whose keys all start with a prefix unique to this run: ioredis reads client options
 * from the URL's query, and its `keyPrefix` is prepended to every key, the KEYS of the limiter's
 * Lua script included. So parallel runs never share a counter (key ids restart at 1 in every
 * fresh schema), and the cleanup deletes exactly this run's keys.
 */
export function isolatedRedis (
  cleanup: ReturnType<typeof cleanupStack>,
  base: string = TEST_REDIS_URL
): { prefix: string; url (base?: string): string; client: Redis } {
  const prefix = `petstore-test:scale:${randomUUID()}:`
  const client = new Redis(base, { maxRetriesPerRequest: 1, commandTimeout: 2000 })
  client.on('error', () => {})
  cleanup(async () => {
    await deleteRedisKeys(client, prefix)
    client.disconnect()
  })
  return {
    prefix,
    client,
    url (other = base) {
      const u = new URL(other)
      u.searchParams.set('keyPrefix', prefix)
      return u.toString()
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The CLI, in-process.

/** Runs `petstore ARGS` through main() with this environment; rejects on a non-zero exit. */
export async function cli (env: Record<string, string>, args: string[]): Promise<string[]> {
  const io = memoryIo(env)
  const code = await main(args, io)
  if (code !== 0) throw new Error(`petstore ${args.join(' ')} exited ${code}: ${io.errors.join(' | ')}`)
  return io.lines
}

/** `keys create ... --json`: the new key's id and secret. */
export async function createKey (
  env: Record<string, string>,
  role: string,
  plan: string,
  quotas?: { perMinute: number; perDay: number }
): Promise<{ id: number; key: string }> {
  const args = ['keys', 'create', '--role', role, '--plan', plan, '--json']
  if (quotas !== undefined) args.push('--per-minute', String(quotas.perMinute), '--per-day', String(quotas.perDay))
  const [line] = await cli(env, args)
  const { id, key } = JSON.parse(line!) as { id: number; key: string }
  return { id, key }
}

// ---------------------------------------------------------------------------------------------
// HTTP and time.

export interface Answer {
  status: number
  headers: Headers
  body: Record<string, unknown> & Array<Record<string, unknown>>
  ms: number
}

/** One request; the body parsed as JSON when there is one; how long it took. */
export async function call (
  base: string,
  path: string,
  options: { method?: string; key?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}
): Promise<Answer> {
  const started = performance.now()
  const res = await fetch(base + path, {
    method: options.method ?? 'GET',
    headers: {
      ...(options.key !== undefined && { 'x-api-key': options.key }),
      ...(options.body !== undefined && { 'content-type': 'application/json' }),
      ...options.headers
    },
    ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000)
  })
  const text = await res.text()
  return {
    status: res.status,
    headers: res.headers,
    body: text === '' ? {} as Answer['body'] : JSON.parse(text) as Answer['body'],
    ms: performance.now() - started
  }
}

/**
 * The servers count in fixed UTC minutes of the system clock. A check that needs its requests in
 * one minute window calls this first: when fewer than `seconds` remain in the current minute, it
 * waits (polling, bounded by the minute's end plus a second) until the next minute has begun.
 */
export async function awaitMinuteRoom (seconds: number): Promise<void> {
  const left = () => 60_000 - (Date.now() % 60_000)
  if (left() >= seconds * 1000) return
  const minute = Math.floor(Date.now() / 60_000)
  await pollUntil(
    async () => Math.floor(Date.now() / 60_000) > minute ? true : undefined,
    { timeoutMs: seconds * 1000 + 1000, intervalMs: 50, message: 'the next minute did not begin' }
  )
}

// ---------------------------------------------------------------------------------------------
// The network, simulated.

export interface TcpProxy {
  port: number
  /** Rewrites a URL's host and port to the proxy's. */
  via (url: string): string
  /**
   * false: destroys every connection through the proxy and refuses new ones (accepted, then
   * closed at once: the service is down); true: lets connections through again.
   */
  setUp (up: boolean): void
}

/** A TCP proxy to host:port on 127.0.0.1 and a free port, closed at cleanup. */
export async function tcpProxy (cleanup: ReturnType<typeof cleanupStack>, target: string): Promise<TcpProxy> {
  const t = new URL(target)
  const host = t.hostname
  const port = Number(t.port || (t.protocol.startsWith('redis') ? 6379 : 5432))
  let up = true
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    if (!up) { client.destroy(); return }
    const upstream = connect(port, host)
    sockets.add(client); sockets.add(upstream)
    const drop = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream) }
    client.on('error', drop); upstream.on('error', drop); client.on('close', drop); upstream.on('close', drop)
    client.pipe(upstream); upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const proxyPort = (server.address() as { port: number }).port
  cleanup(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return {
    port: proxyPort,
    via (url) {
      const u = new URL(url)
      u.hostname = '127.0.0.1'
      u.port = String(proxyPort)
      return u.toString()
    },
    setUp (value) {
      up = value
      if (!value) for (const s of sockets) s.destroy()
    }
  }
}
