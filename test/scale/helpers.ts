// What the scale tests share: real server processes (`petstore serve --port 0` on the Node 24
// running the tests), the CLI in-process, a TCP proxy that stands in for the network to
// PostgreSQL or Redis, and isolation on the shared local services (a fresh PostgreSQL schema
// through DATABASE_URL, a unique Redis key prefix through REDIS_URL).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { connect, createServer, type Socket } from 'node:net'
import type { TestContext } from 'node:test'
import { Redis } from 'ioredis'
import { main } from '../../src/cli/main.ts'
import { memoryIo } from '../helpers/io.ts'
import { testRedisReason, TEST_REDIS_URL } from '../helpers/limiter.ts'
import { deleteRedisKeys, requireService } from '../helpers/services.ts'
import { createTestSchema, testPostgresReason, TEST_DATABASE_URL } from '../helpers/stores.ts'

const CLI = new URL('../../src/cli/main.ts', import.meta.url).pathname

/** The Redis the tests use: PETSTORE_TEST_REDIS_URL, else the local server (as test/helpers/limiter.ts). */
export { TEST_REDIS_URL }

/**
 * Cleanups run last registered, first run (node:test runs t.after hooks in registration order,
 * which would drop a schema before stopping the servers that use it). Call before anything that
 * registers its own t.after, such as createTestSchema, so that these run first.
 */
export function cleanupStack (t: TestContext): (fn: () => Promise<unknown> | unknown) => void {
  const fns: Array<() => Promise<unknown> | unknown> = []
  t.after(async () => {
    for (const fn of fns.reverse()) await fn()
  })
  return (fn) => { fns.push(fn) }
}

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
export async function schemaDatabaseUrl (t: TestContext, base: string = TEST_DATABASE_URL): Promise<{ schema: string; url (base?: string): string }> {
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
export function isolatedRedis (cleanup: ReturnType<typeof cleanupStack>, base: string = TEST_REDIS_URL): { prefix: string; url (base?: string): string; client: Redis } {
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
export async function createKey (env: Record<string, string>, role: string, plan: string, quotas?: { perMinute: number; perDay: number }): Promise<{ id: number; key: string }> {
  const args = ['keys', 'create', '--role', role, '--plan', plan, '--json']
  if (quotas !== undefined) args.push('--per-minute', String(quotas.perMinute), '--per-day', String(quotas.perDay))
  const [line] = await cli(env, args)
  const { id, key } = JSON.parse(line!) as { id: number; key: string }
  return { id, key }
}

// ---------------------------------------------------------------------------------------------
// Server processes.

export interface ServerProcess {
  url: string
  child: ChildProcessWithoutNullStreams
  /** Everything the process printed on stdout so far (pino's JSON lines and the banner). */
  output (): string
  /** The JSON log lines printed so far. */
  logs (): Array<Record<string, unknown>>
  /**
   * The first log line that matches, waiting up to 2 s for it: the pipe from the process may
   * deliver a line after the HTTP answer that followed it.
   */
  logLine (match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>
  /** SIGTERM, then the exit code (SIGKILL after 5 s, and null). Idempotent. */
  stop (): Promise<number | null>
}

/**
 * Starts `petstore serve --port 0` on the Node running the tests (process.execPath: signals reach
 * the server itself, not a wrapper), with this environment on top of the test's. Resolves once it
 * prints its address; rejects when it exits first or does not start within 20 s.
 */
export async function startServerProcess (cleanup: ReturnType<typeof cleanupStack>, env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], { env: { ...process.env, LOG_LEVEL: 'info', ...env } })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  let stopping: Promise<number | null> | null = null
  const stop = (): Promise<number | null> => {
    stopping ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      try { return await exited } finally { clearTimeout(timer) }
    })()
    return stopping
  }
  cleanup(stop)

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start within 20 s:\n${out}${err}`)), 20_000)
    const onData = () => {
      const match = /Petstore API on (\S+)\/v1/.exec(out)
      if (match !== null) {
        clearTimeout(timer)
        child.stdout.off('data', onData)
        resolve(match[1]!)
      }
    }
    child.stdout.on('data', onData)
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`the server exited (${code}) before listening:\n${out}${err}`)) })
  })
  const logs = () => out.split('\n').filter((l) => l.startsWith('{')).flatMap((l) => {
    try { return [JSON.parse(l) as Record<string, unknown>] } catch { return [] }
  })
  return {
    url,
    child,
    output: () => out,
    logs,
    logLine: async (match) => (await pollUntil(async () => logs().find(match), { timeoutMs: 2000, intervalMs: 20, message: `no such log line in:\n${out}` })).value,
    stop
  }
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
export async function call (base: string, path: string, options: { method?: string; key?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<Answer> {
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
  return { status: res.status, headers: res.headers, body: text === '' ? {} as Answer['body'] : JSON.parse(text) as Answer['body'], ms: performance.now() - started }
}

/**
 * Calls fn until it returns a value other than undefined (a throw counts as not yet), every
 * intervalMs, for at most timeoutMs; then rejects with the message (and the last error, if the
 * last call threw).
 */
export async function pollUntil<T> (fn: () => Promise<T | undefined>, options: { timeoutMs: number; intervalMs?: number; message: string }): Promise<{ value: T; ms: number }> {
  const started = Date.now()
  for (;;) {
    let lastError: unknown = null
    try {
      const value = await fn()
      if (value !== undefined) return { value, ms: Date.now() - started }
    } catch (error) {
      lastError = error
    }
    if (Date.now() - started >= options.timeoutMs) {
      throw new Error(`${options.message} (gave up after ${options.timeoutMs} ms${lastError !== null ? `; last error: ${(lastError as Error).message}` : ''})`)
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100))
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
  await pollUntil(async () => Math.floor(Date.now() / 60_000) > minute ? true : undefined, { timeoutMs: seconds * 1000 + 1000, intervalMs: 50, message: 'the next minute did not begin' })
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
