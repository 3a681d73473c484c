// `npm run bench -- --instances N` (issue 34): N API instances on one PostgreSQL and one Redis,
// behind the load balancer of the compose stack: nginx with deploy/nginx.conf when nginx is
// installed, else bench/proxy.ts (a node:http round robin), and the output says which.
//
// Where things run: with at least N + 3 CPUs, the generator on CPU 0, the proxy on CPU 1 and each
// instance on a CPU of its own; with fewer, the generator on CPU 0 and the proxy and every
// instance share the other CPUs, which the output says: there, N instances cannot serve more
// than one, and the comparison shows what the extra processes cost, not how the API scales.
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { connect, createServer, type AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { hasCommand, pinned, startServer, trackChild, type ChildServer } from './processes.ts'
import type { MemoryParts, PetstoreChildSettings, ProcessStats } from './server.ts'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const NGINX_CONF = path.join(HERE, '..', 'deploy', 'nginx.conf')
const PROXY_SCRIPT = path.join(HERE, 'proxy.ts')

export interface Layout {
  generator: string | null
  proxy: string | null
  /** One CPU list per instance. */
  instances: (string | null)[]
  describe: string
}

/** Where the generator, the proxy and each of `count` instances run (see the top of this file). */
export function instanceLayout (count: number, pin: boolean): Layout {
  const cpus = os.availableParallelism()
  if (!pin || cpus < 2 || !hasCommand('taskset', ['--version'])) {
    return { generator: null, proxy: null, instances: Array.from({ length: count }, () => null), describe: 'not pinned' }
  }
  if (cpus >= count + 3) {
    return { generator: '0', proxy: '1', instances: Array.from({ length: count }, (_, i) => String(i + 2)), describe: `taskset: generator on CPU 0, proxy on CPU 1, instance i on CPU i+1 (${cpus} CPUs)` }
  }
  const rest = cpus === 2 ? '1' : `1-${cpus - 1}`
  const shared = count === 1 ? 'the proxy and the instance share' : `the proxy and the ${count} instances share`
  const caveat = count === 1 ? '' : `: with ${cpus} CPUs, ${count} instances cannot serve more than one here (${count + 3} CPUs give each its own)`
  return { generator: '0', proxy: rest, instances: Array.from({ length: count }, () => rest), describe: `taskset: generator on CPU 0; ${shared} CPU ${rest}${caveat}` }
}

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

async function waitForPort (port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms
  while (true) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => { socket.destroy(); resolve(true) })
      socket.on('error', () => resolve(false))
    })
    if (ok) return
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * deploy/nginx.conf as the compose stack runs it, with its upstream servers replaced by the
 * instances' addresses and its `listen 80` by a loopback port, inside the main-context lines a
 * full nginx.conf needs (one worker, no access log, files in `dir`).
 */
export function nginxConfig (site: string, upstreams: string[], port: number, dir: string): string {
  const servers = upstreams.map((u) => `  server ${new URL(u).host} max_fails=3 fail_timeout=10s;`).join('\n')
  const adapted = site
    .replace(/(upstream petstore \{\n)(?:\s*server [^\n]*\n)+/, (_, head: string) => `${head}${servers}\n`)
    .replace(/listen 80;/, `listen 127.0.0.1:${port};`)
  if (!adapted.includes(`listen 127.0.0.1:${port};`) || !adapted.includes(servers)) throw new Error('deploy/nginx.conf no longer has the upstream block or the listen line bench/instances.ts adapts')
  return [
    '# Written by bench/instances.ts from deploy/nginx.conf.',
    'daemon off;',
    'worker_processes 1;',
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log warn;`,
    'events { worker_connections 4096; }',
    'http {',
    '  access_log off;',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`),
    adapted,
    '}',
    ''
  ].join('\n')
}

export interface Proxy { base: string; name: string; stop (): Promise<void> }

/** nginx with deploy/nginx.conf when installed (unless `kind` is 'node'), else bench/proxy.ts; pinned to `cpus`. */
export async function startProxy (upstreams: string[], cpus: string | null, kind: 'auto' | 'node' = 'auto'): Promise<Proxy> {
  if (kind === 'auto' && hasCommand('nginx', ['-v'])) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'petstore-bench-nginx-'))
    const port = await freePort()
    const conf = path.join(dir, 'nginx.conf')
    await writeFile(conf, nginxConfig(await readFile(NGINX_CONF, 'utf8'), upstreams, port, dir))
    const [command, args] = pinned(cpus, 'nginx', ['-p', dir, '-c', conf])
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    trackChild(child)
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
    await Promise.race([waitForPort(port, 10_000), exited.then(() => { throw new Error(`nginx exited: ${stderr.trim()}`) })])
    return {
      base: `http://127.0.0.1:${port}`,
      name: 'nginx (deploy/nginx.conf)',
      async stop () {
        child.kill('SIGQUIT')
        await exited
        await rm(dir, { recursive: true, force: true })
      }
    }
  }
  const [command, args] = pinned(cpus, process.execPath, [PROXY_SCRIPT, JSON.stringify({ upstreams })])
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
  trackChild(child)
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  const port = await new Promise<number>((resolve, reject) => {
    child.on('message', (m: { type?: string; port?: number }) => { if (m.type === 'ready' && m.port !== undefined) resolve(m.port) })
    void exited.then(() => reject(new Error('the node:http proxy exited before it listened')))
  })
  return {
    base: `http://127.0.0.1:${port}`,
    name: 'a node:http round-robin proxy (bench/proxy.ts; nginx is not installed)',
    async stop () { child.disconnect(); child.kill('SIGTERM'); await exited }
  }
}

/** The sum (CPU, GC, stalls, memory) or the worst (loop delay, longest stall) over the instances. */
export function mergeStats (all: ProcessStats[]): ProcessStats {
  const sum = (f: (s: ProcessStats) => number): number => all.reduce((n, s) => n + f(s), 0)
  const gc: ProcessStats['gc'] = {}
  const threadCpuUs: ProcessStats['threadCpuUs'] = {}
  for (const s of all) {
    for (const [kind, g] of Object.entries(s.gc)) {
      const m = gc[kind] ??= { count: 0, totalMs: 0, maxMs: 0 }
      m.count += g.count
      m.totalMs += g.totalMs
      m.maxMs = Math.max(m.maxMs, g.maxMs)
    }
    for (const [kind, us] of Object.entries(s.threadCpuUs) as [keyof ProcessStats['threadCpuUs'], number][]) {
      threadCpuUs[kind] = (threadCpuUs[kind] ?? 0) + us
    }
  }
  const stalls = all.map((s) => s.longestStall).filter((s) => s !== null)
  return {
    cpuUs: sum((s) => s.cpuUs),
    loopP99Ms: Math.max(...all.map((s) => s.loopP99Ms)),
    loopMaxMs: Math.max(...all.map((s) => s.loopMaxMs)),
    gc,
    heapUsedMiB: sum((s) => s.heapUsedMiB),
    rssMiB: sum((s) => s.rssMiB),
    longestStall: stalls.sort((a, b) => b.wallMs - a.wallMs)[0] ?? null,
    stalls: sum((s) => s.stalls),
    stalledMs: sum((s) => s.stalledMs),
    threadCpuUs,
    // The instances may share CPUs: the largest, not the sum.
    stealMs: Math.max(...all.map((s) => s.stealMs))
  }
}

/** N instances behind the proxy, seen as one server: its base is the proxy's, its CPU the instances' sum. */
export async function startInstances (
  label: string,
  layout: Layout,
  settings: PetstoreChildSettings
): Promise<ChildServer & { proxy: string }> {
  const instances: ChildServer[] = []
  try {
    for (const [i, cpus] of layout.instances.entries()) {
      instances.push(await startServer(`${label}, instance ${i + 1}`, cpus, { petstore: settings }))
    }
    const proxy = await startProxy(instances.map((s) => s.base), layout.proxy)
    return {
      base: proxy.base,
      pid: instances[0]!.pid,
      proxy: proxy.name,
      async rss () {
        const each = await Promise.all(instances.map((s) => s.rss()))
        const parts = Object.fromEntries(Object.keys(each[0]!.parts).map((k) => [
          k,
          each.reduce((n, e) => n + e.parts[k as keyof MemoryParts], 0)
        ])) as unknown as MemoryParts
        return { rss: each.reduce((n, e) => n + e.rss, 0), parts }
      },
      async stats () { return mergeStats(await Promise.all(instances.map((s) => s.stats()))) },
      async deliveries () { return {} },
      watchGc (on) { for (const s of instances) s.watchGc(on) },
      async stop () {
        await proxy.stop()
        await Promise.all(instances.map((s) => s.stop()))
      }
    }
  } catch (error) {
    await Promise.all(instances.map((s) => s.stop()))
    throw error
  }
}
