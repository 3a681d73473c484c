// The processes of a run: the servers under test (bench/server.ts children) and the load
// generator (wrk, or bench/autocannon.ts), each pinned to its own core when the machine allows.
//
// Why pinning: with two cores and no pinning, the generator and the server take turns on both,
// and the figure is as much the scheduler's as the server's. One core each makes the server's
// core the only thing measured, the way the issue that asked for this measured it.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ChildMessage, Deliveries, MemoryParts, PetstoreChildSettings, ProcessStats } from './server.ts'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const SERVER_SCRIPT = path.join(HERE, 'server.ts')
const CLI = path.join(HERE, '..', 'src', 'cli', 'main.ts')

/**
 * The environment and Node flags `petstore` starts with, read from its shebang
 * (`#!/usr/bin/env -S MALLOC_ARENA_MAX=2 NODE_COMPILE_CACHE=${HOME}/.cache/petstore node
 * --max-semi-space-size=4 --heap-growing-percent=20`), so the API child runs with what `petstore serve` runs with
 * (docs/performance.md, "Memory").
 */
export function startCommand (file = CLI): { env: Record<string, string>; flags: string[] } {
  const first = readFileSync(file, 'utf8').split('\n', 1)[0] ?? ''
  const words = first.startsWith('#!') ? first.slice(2).trim().split(/\s+/) : []
  const node = words.findIndex((w) => w === 'node' || w.endsWith('/node'))
  if (node === -1) return { env: {}, flags: [] }
  const env: Record<string, string> = {}
  for (const word of words.slice(0, node)) {
    const eq = word.indexOf('=')
    // env -S expands ${NAME} from the environment (empty when unset): so does this.
    if (eq > 0) env[word.slice(0, eq)] = word.slice(eq + 1).replace(/\$\{(\w+)\}/g, (_, name: string) => process.env[name] ?? '')
  }
  return { env, flags: words.slice(node + 1) }
}

/** Where each side runs: a CPU list for taskset, or null for wherever the scheduler likes. */
export interface Placement {
  server: string | null
  generator: string | null
  /** One line for the report. */
  describe: string
}

export function hasCommand (name: string, args: string[] = ['--version']): boolean {
  try {
    execFileSync(name, args, { stdio: 'ignore', timeout: 5000 })
    return true
  } catch (error) {
    // wrk --version prints its banner and exits 1; only a missing binary is "absent".
    return (error as { code?: string }).code !== 'ENOENT'
  }
}

export function placement (pin: boolean): Placement {
  if (!pin) return { server: null, generator: null, describe: 'not pinned (--no-pin)' }
  const cpus = os.availableParallelism()
  if (cpus < 2) return { server: null, generator: null, describe: `not pinned: only ${cpus} CPU` }
  if (!hasCommand('taskset', ['--version'])) return { server: null, generator: null, describe: 'not pinned: taskset is missing (util-linux)' }
  return { server: '1', generator: '0', describe: `taskset: servers on CPU 1, load generator on CPU 0 (${cpus} CPUs)` }
}

/** The command line, behind `taskset -c CPUS` when pinned. */
export function pinned (cpus: string | null, command: string, args: string[]): [string, string[]] {
  return cpus === null ? [command, args] : ['taskset', ['-c', cpus, command, ...args]]
}

// ---------------------------------------------------------------------------------------------
// Server children

export interface ChildServer {
  base: string
  pid: number
  /** The child's resident set size in bytes, as it reports it (process.memoryUsage().rss), and its parts. */
  rss (): Promise<{ rss: number; parts: MemoryParts }>
  /** What the process spent since the last call (CPU time, event-loop delay, GC pauses). */
  stats (): Promise<ProcessStats>
  /** A receiver's counts so far (empty from the other kinds). */
  deliveries (): Promise<Deliveries>
  /** Observe GC pauses (in `stats`) from now on, or stop: only the mixed run's rounds watch them (bench/server.ts). */
  watchGc (on: boolean): void
  stop (): Promise<void>
}

const children = new Set<ChildProcess>()

/** Adds a child the run started elsewhere (a proxy) to those killed when the run is interrupted. */
export function trackChild (child: ChildProcess): void {
  children.add(child)
  child.on('exit', () => children.delete(child))
}

/** Every child still running: killed when the run is interrupted. */
export function killChildren (signal: NodeJS.Signals): void {
  for (const child of children) child.kill(signal)
}

/** A peer of --peers (bench/peers/) on its seeded file. */
export type PeerName = 'afternoon' | 'json-server'

/** `node bench/server.ts bare`, `… receiver`, `… petstore <settings>` or a peer, pinned to the CPUs given. */
export async function startServer (
  label: string,
  cpus: string | null,
  mode: { bare: true } | { receiver: true } | { petstore: PetstoreChildSettings } | { peer: PeerName; file: string }
): Promise<ChildServer> {
  const start = 'petstore' in mode ? startCommand() : { env: {}, flags: [] }
  // A peer starts as its user would start it: plain `node`, none of our start command's flags.
  const args = 'petstore' in mode
    ? [...start.flags, SERVER_SCRIPT, 'petstore', JSON.stringify(mode.petstore)]
    : 'peer' in mode ? [SERVER_SCRIPT, mode.peer, mode.file] : [SERVER_SCRIPT, 'bare' in mode ? 'bare' : 'receiver']
  const [command, argv] = pinned(cpus, process.execPath, args)
  const child = spawn(command, argv, {
    // The server's settings (--server-env among them) are its process environment too, as with
    // `petstore serve`: Node's and libc's variables (UV_THREADPOOL_SIZE, MALLOC_ARENA_MAX) apply.
    env: { ...process.env, ...start.env, ...('petstore' in mode ? mode.petstore.env : {}) },
    // stdout carries the pino logs: to /dev/null, so logging costs what it costs in production
    // (serialising and writing) without this process reading it during the measurement.
    stdio: ['ignore', 'ignore', 'pipe', 'ipc']
  })
  children.add(child)
  let stderr = ''
  child.stderr?.setEncoding('utf8')
  child.stderr?.on('data', (chunk: string) => { if (stderr.length < 10_000) stderr += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => {
    children.delete(child)
    resolve(code)
  }))
  const rssWaiters: ((rss: { rss: number; parts: MemoryParts }) => void)[] = []
  const statsWaiters: ((stats: ProcessStats) => void)[] = []
  const deliveryWaiters: ((deliveries: Deliveries) => void)[] = []

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} server did not start within 60 s${stderr ? `: ${stderr.trim()}` : ''}`)), 60_000)
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'ready') { clearTimeout(timer); resolve(message.port) }
      if (message.type === 'rss') rssWaiters.shift()?.({ rss: message.rss, parts: message.parts })
      if (message.type === 'stats') statsWaiters.shift()?.(message.stats)
      if (message.type === 'deliveries') deliveryWaiters.shift()?.(message.deliveries)
    })
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`${label} server exited with code ${code}${stderr ? `: ${stderr.trim()}` : ''}`)) })
  }).catch(async (error: unknown) => { child.kill('SIGKILL'); await exited; throw error })

  return {
    base: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    rss () {
      return new Promise<{ rss: number; parts: MemoryParts }>((resolve, reject) => {
        if (!child.connected) { reject(new Error(`${label} server is gone`)); return }
        rssWaiters.push(resolve)
        child.send('rss')
      })
    },
    stats () {
      return new Promise<ProcessStats>((resolve, reject) => {
        if (!child.connected) { reject(new Error(`${label} server is gone`)); return }
        statsWaiters.push(resolve)
        child.send('stats')
      })
    },
    deliveries () {
      return new Promise<Deliveries>((resolve, reject) => {
        if (!child.connected) { reject(new Error(`${label} is gone`)); return }
        deliveryWaiters.push(resolve)
        child.send('deliveries')
      })
    },
    watchGc (on) {
      if (child.connected) child.send(on ? 'watch-gc' : 'unwatch-gc')
    },
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
// Generator children

export interface Finished { code: number | null; stdout: string; stderr: string }

/** Runs a generator to its end (pinned to the generator's core) and collects what it printed. */
export function runToEnd (cpus: string | null, command: string, args: string[], timeoutMs: number): Promise<Finished> {
  const [cmd, argv] = pinned(cpus, command, args)
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { if (stderr.length < 10_000) stderr += chunk })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', (error) => { clearTimeout(timer); children.delete(child); reject(error) })
    child.on('close', (code) => { clearTimeout(timer); children.delete(child); resolve({ code, stdout, stderr }) })
  })
}
