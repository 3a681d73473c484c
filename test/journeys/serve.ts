// The server of a journey: `petstore serve --sample-data` as a process on a fresh SQLite file, as a
// newcomer starts it, with the sample keys in a file. It is found on the port chosen here and
// its /healthz, not by the banner, so that a journey fails on what it names, whatever stream the
// banner goes to (test/helpers/server.ts reads it from stdout).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { pollUntil } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'

export const CLI = new URL('../../src/cli/main.ts', import.meta.url).pathname

/** A port on 127.0.0.1 that was free a moment ago. */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

export interface JourneyServer {
  /** http://127.0.0.1:PORT, without /v1. */
  url: string
  /** The private listener's address, for GET /metrics. */
  metricsUrl: string
  keys: { customer: string; staff: string; admin: string }
  /** The environment of the process: a command run with it reaches the same database. */
  env: Record<string, string>
  /** The JSON log lines printed so far. */
  logs (): Array<Record<string, unknown>>
}

/** Starts the server with `env` on top; SIGTERM when the test ends. */
export async function serveJourney (t: TestContext, env: Record<string, string> = {}): Promise<JourneyServer> {
  const dir = tempDir(t, 'petstore-journey-')
  const keysFile = join(dir, 'keys.txt')
  const [port, metricsPort] = [await freePort(), await freePort()]
  const fullEnv = {
    DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`,
    METRICS_PORT: String(metricsPort),
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    ...env
  }
  const child = spawn(process.execPath, [CLI, 'serve', '--port', String(port), '--sample-data', '--keys-file', keysFile], {
    env: { ...process.env, ...fullEnv }
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()))
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await closed
    clearTimeout(timer)
  })
  const url = `http://127.0.0.1:${port}`
  await pollUntil(async () => {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${out}${err}`)
    return (await fetch(`${url}/healthz`)).ok || undefined
  }, { timeoutMs: 60_000, intervalMs: 100, message: `the server did not start:\n${out}${err}` })
  const file = readFileSync(keysFile, 'utf8')
  const key = (role: string): string => {
    const found = new RegExp(`${role}\\s+(psk_\\S+)`).exec(file)?.[1]
    assert.ok(found !== undefined, `no ${role} key in ${file}`)
    return found
  }
  return {
    url,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    keys: { customer: key('customer'), staff: key('staff'), admin: key('admin') },
    env: fullEnv,
    logs: () => out.split('\n').filter((line) => line.startsWith('{')).flatMap((line) => {
      try { return [JSON.parse(line) as Record<string, unknown>] } catch { return [] }
    })
  }
}
