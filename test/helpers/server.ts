// The two ways a test starts the real server, besides the in-process app of app.ts:
//
// - startServerProcess: `petstore serve --port 0` as a child process on the Node running the tests
//   (signals, exit codes, what it prints, a database shared with other processes);
// - startTestServer: startServer() in this process, on an in-memory database with the sample
//   catalogue, with the limits a test chooses (the real listener and its connection handling,
//   driven over raw sockets by test/server/raw.ts).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import type { TestContext } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { loadSampleData } from '../../src/sample-data.ts'
import { createLogger, startServer, type RunningServer } from '../../src/server.ts'
import { systemClock } from '../../src/shared/clock.ts'

const CLI = new URL('../../src/cli/main.ts', import.meta.url).pathname

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
// A server process.

export interface ServerProcess {
  url: string
  /**
   * The private listener of /metrics (METRICS_PORT; any free port here), from the `listening` log
   * line: LOG_LEVEL info or finer.
   */
  metricsUrl (): Promise<string>
  child: ChildProcessWithoutNullStreams
  /** Everything the process printed on stdout so far: pino's JSON lines, nothing else. */
  output (): string
  /**
   * Everything it printed on stderr so far: what is for people (the sample keys of `serve
   * --sample-data`, the banner with the address, the stop notice, a refusal).
   */
  errors (): string
  /** The JSON log lines printed so far. */
  logs (): Array<Record<string, unknown>>
  /**
   * The first log line that matches, waiting up to 2 s for it: the pipe from the process may
   * deliver a line after the HTTP answer that followed it.
   */
  logLine (match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>
  /** SIGTERM, then the exit code once its output is read to the end (SIGKILL after 5 s, and null). Idempotent. */
  stop (): Promise<number | null>
}

/**
 * Starts `petstore serve --port 0` on the Node running the tests (process.execPath: signals reach
 * the server itself, not a wrapper), with this environment on top of the test's. Resolves once it
 * prints its address; rejects when it exits first or does not start within 60 s (a loaded
 * machine; tracing imports its SDK first). `args` go after `serve --port 0` (`--sample-data`,
 * `--keys-file PATH`).
 */
export async function startServerProcess (
  cleanup: ReturnType<typeof cleanupStack>,
  env: Record<string, string>,
  args: string[] = []
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], { env: { ...process.env, LOG_LEVEL: 'info', ...env } })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
  // 'close', not 'exit': by then stdout and stderr are read to the end, so output() and errors()
  // after stop() are complete.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
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
    const timer = setTimeout(() => reject(new Error(`the server did not start within 60 s:\n${out}${err}`)), 60_000)
    const onData = () => {
      const match = /Petstore API on (\S+)\/v1/.exec(err)
      if (match !== null) {
        clearTimeout(timer)
        child.stderr.off('data', onData)
        resolve(match[1]!)
      }
    }
    child.stderr.on('data', onData)
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`the server exited (${code}) before listening:\n${out}${err}`)) })
  })
  const logs = () => out.split('\n').filter((l) => l.startsWith('{')).flatMap((l) => {
    try { return [JSON.parse(l) as Record<string, unknown>] } catch { return [] }
  })
  const logLine = async (match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> =>
    (await pollUntil(async () => logs().find(match), { timeoutMs: 2000, intervalMs: 20, message: `no such log line in:\n${out}` })).value
  return {
    url,
    metricsUrl: async () => String((await logLine((line) => line.msg === 'listening')).metricsUrl),
    child,
    output: () => out,
    errors: () => err,
    logs,
    logLine,
    stop
  }
}

/**
 * Calls fn until it returns a value other than undefined (a throw counts as not yet), every
 * intervalMs, for at most timeoutMs; then rejects with the message (and the last error, if the
 * last call threw).
 */
export async function pollUntil<T> (
  fn: () => Promise<T | undefined>,
  options: { timeoutMs: number; intervalMs?: number; message: string }
): Promise<{ value: T; ms: number }> {
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

// ---------------------------------------------------------------------------------------------
// The server in this process.

export interface TestServer {
  server: RunningServer
  port: number
  /**
   * A customer key and a staff key on the server's database, which holds the sample catalogue
   * (pet 1 is available, stock 1).
   */
  keys: { customer: string; staff: string }
}

/**
 * startServer on an in-memory database and port 0, with these variables (limits) on top; closed
 * after the test. Warnings go to `logLines` when given.
 */
export async function startTestServer (
  t: TestContext,
  env: Record<string, string>,
  logLines?: Array<Record<string, unknown>>
): Promise<TestServer> {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', PORT: '0', LOG_LEVEL: logLines === undefined ? 'silent' : 'warn', ...env })
  const keys = { customer: '', staff: '' }
  const server = await startServer(config, {
    logger: createLogger(config, logLines === undefined
      ? undefined
      : { write: (line: string) => { logLines.push(JSON.parse(line) as Record<string, unknown>) } }),
    beforeListen: async (infra) => {
      await loadSampleData(infra.stores)
      const admin = createKeyAdmin(infra.stores.keys, systemClock)
      const quotas = { perMinute: 1_000_000, perDay: 1_000_000 }
      keys.customer = (await admin.create({ role: 'customer', plan: 'enterprise', ...quotas })).key
      keys.staff = (await admin.create({ role: 'staff', plan: 'enterprise', ...quotas })).key
    }
  })
  t.after(() => server.close())
  return { server, port: Number(new URL(server.url).port), keys }
}
