// What scripts/test-image.ts and scripts/test-compose.ts share: running podman, installing it when
// missing, the stand-in base images built from Debian's packages, checks that print PASS/FAIL.
//
// On these machines no container registry can be reached and the default OCI runtime cannot set
// rlimits or use the VM's cgroups; podman works with three adjustments (docs/operating.md, "How podman runs here"):
// builds with `--isolation chroot`, runs with `--runtime runc` and explicit `--ulimit`s, and base
// images built locally (debootstrap --variant=minbase bookworm, then `podman import`).
import { spawn } from 'node:child_process'
import { realpathSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const ROOT = new URL('..', import.meta.url).pathname
/** Options every `podman run` needs here: runc can set rlimits (crun cannot in this VM). */
export const RUN_OPTIONS = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024']
/** The minimal Debian image every stand-in starts from, kept between runs. */
export const DEBIAN_IMAGE = 'localhost/petstore-debian:bookworm-minbase'
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'

export interface Result { code: number; stdout: string; stderr: string }

/** Runs a command to its end; never throws on a non-zero exit (the caller decides). */
export async function run (
  command: string,
  args: string[],
  options: { input?: string; timeoutMs?: number; echo?: boolean; env?: NodeJS.ProcessEnv } = {}
): Promise<Result> {
  return await new Promise((resolve) => {
    const child = spawn(command, args, {
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      env: options.env ?? process.env
    })
    let stdout = ''
    let stderr = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      if (options.echo === true) process.stdout.write(chunk)
    })
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
      if (options.echo === true) process.stderr.write(chunk)
    })
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs)
    child.on('error', (error) => {
      clearTimeout(timer)
      resolve({ code: 127, stdout, stderr: stderr + error.message })
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code: code ?? 1, stdout, stderr })
    })
    if (child.stdin !== null) {
      child.stdin.on('error', () => {})
      child.stdin.end(options.input)
    }
  })
}

/** Runs a command that must succeed: throws with its last lines of output otherwise. */
export async function must (
  command: string,
  args: string[],
  options: { input?: string; timeoutMs?: number; echo?: boolean; env?: NodeJS.ProcessEnv } = {}
): Promise<string> {
  const result = await run(command, args, options)
  if (result.code !== 0) {
    const tail = (result.stderr + result.stdout).trim().split('\n').slice(-15).join('\n')
    throw new Error(`${command} ${args.join(' ')} exited ${result.code}:\n${tail}`)
  }
  return result.stdout
}

export async function podman (...args: string[]): Promise<Result> {
  return await run('podman', args)
}

/** Installs the Debian packages whose command is missing (`apt-get install -y`, as root). */
export async function ensurePackages (commands: Record<string, string>): Promise<void> {
  const missing: string[] = []
  for (const [command, pkg] of Object.entries(commands)) {
    if ((await run('sh', ['-c', `command -v ${command} || test -x /usr/sbin/${command}`])).code !== 0) missing.push(pkg)
  }
  if (missing.length === 0) return
  if (process.getuid?.() !== 0) throw new Error(`missing ${missing.join(', ')}: install them (apt-get install -y ${missing.join(' ')}) or run as root`)
  console.log(`installing ${missing.join(', ')} (apt-get)`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  await must('apt-get', ['update'], { env })
  await must('apt-get', ['install', '-y', ...missing], { env })
}

export async function imageExists (image: string): Promise<boolean> {
  return (await podman('image', 'exists', image)).code === 0
}

/** `debootstrap --variant=minbase bookworm`, imported as DEBIAN_IMAGE; reused when it exists. */
export async function ensureDebianImage (): Promise<string> {
  if (await imageExists(DEBIAN_IMAGE)) return DEBIAN_IMAGE
  const started = Date.now()
  const dir = await mkdtemp(join(tmpdir(), 'petstore-rootfs-'))
  try {
    console.log(`building ${DEBIAN_IMAGE} (debootstrap --variant=minbase bookworm, from Debian's packages)`)
    await must('debootstrap', ['--variant=minbase', 'bookworm', dir, 'http://deb.debian.org/debian'])
    // Package lists are left out of the image: each stand-in runs apt-get update itself.
    await must('sh', ['-c', `tar -C '${dir}' -c . | podman import --change 'CMD ["bash"]' - ${DEBIAN_IMAGE}`])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  console.log(`  ${DEBIAN_IMAGE} built in ${seconds(started)}`)
  return DEBIAN_IMAGE
}

/** `podman build --isolation chroot` of a Containerfile text with the given files beside it. */
export async function buildFrom (
  image: string,
  containerfile: string,
  files: Record<string, string> = {}
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'petstore-build-'))
  try {
    await writeFile(join(dir, 'Containerfile'), containerfile)
    for (const [name, source] of Object.entries(files)) await copyFile(source, join(dir, name))
    await must('podman', ['build', '--isolation', 'chroot', '--format', 'docker', '-t', image, dir])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/**
 * The image to build the API on: NODE_IMAGE when set; else node:24-slim when it exists or can be
 * pulled; else a stand-in built from Debian's packages: the minimal Debian image, the Node 24
 * binary of the `node` npm package in node_modules, npm 10 from the registry (`npm pack`), the
 * machine's CA bundle (npm inside the build reaches the registry through it) and a `node` user
 * with uid 1000, as in the official image. The stand-in is tagged with the Node version and
 * reused while that version stays.
 */
export async function ensureNodeImage (): Promise<string> {
  const wanted = process.env.NODE_IMAGE
  if (wanted !== undefined && wanted !== '') return wanted
  if (await imageExists('docker.io/library/node:24-slim')) return 'docker.io/library/node:24-slim'
  const pulled = await run('podman', ['pull', '-q', 'docker.io/library/node:24-slim'], { timeoutMs: 120_000 })
  if (pulled.code === 0) return 'docker.io/library/node:24-slim'
  console.log(`node:24-slim cannot be pulled (${lastLine(pulled.stderr)}): using a stand-in built from Debian's packages`)

  const nodeBinary = realpathSync(join(ROOT, 'node_modules', 'node', 'bin', 'node'))
  const version = (await must(nodeBinary, ['--version'])).trim()
  if (!version.startsWith('v24.')) throw new Error(`node_modules/node is ${version}, not Node 24: run npm ci`)
  const image = `localhost/petstore-node:${version.slice(1)}-local`
  if (await imageExists(image)) return image

  const debian = await ensureDebianImage()
  const started = Date.now()
  const dir = await mkdtemp(join(tmpdir(), 'petstore-node-'))
  try {
    await must('npm', ['pack', '--silent', '--pack-destination', dir, 'npm@10'], { env: { ...process.env, npm_config_update_notifier: 'false' } })
    const tarball = (await readdir(dir)).find((name) => name.endsWith('.tgz'))
    if (tarball === undefined) throw new Error('npm pack npm@10 wrote no tarball')
    await mkdir(join(dir, 'npm'))
    await must('tar', ['-xzf', join(dir, tarball), '-C', join(dir, 'npm'), '--strip-components=1'])
    await copyFile(nodeBinary, join(dir, 'node'))
    await copyFile(CA_BUNDLE, join(dir, 'ca-certificates.crt'))
    await writeFile(join(dir, 'Containerfile'), `FROM ${debian}
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && groupadd --gid 1000 node \\
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \\
 && node --version && npm --version
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \\
    npm_config_cafile=/etc/ssl/certs/ca-certificates.crt \\
    npm_config_update_notifier=false
CMD ["node"]
`)
    console.log(`building ${image} (Debian bookworm + Node ${version} from node_modules/node + ${tarball.replace(/\.tgz$/, '')})`)
    await must('podman', ['build', '--isolation', 'chroot', '--format', 'docker', '-t', image, dir])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  console.log(`  ${image} built in ${seconds(started)}`)
  return image
}

/** A port nobody listens on at this moment, on 127.0.0.1. */
export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => {
        if (typeof address === 'object' && address !== null) resolve(address.port)
        else reject(new Error('no port'))
      })
    })
  })
}

/** Polls `probe` until it returns true (a readiness wait, not a timing assumption). */
export async function waitUntil (what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await probe().catch(() => false)) return
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/** The PASS/FAIL lines and the exit code. */
export function createReport () {
  const failures: string[] = []
  return {
    check (name: string, ok: boolean, detail = ''): boolean {
      console.log(`${ok ? 'PASS' : 'FAIL'}  ${name}${detail === '' ? '' : `: ${detail}`}`)
      if (!ok) failures.push(name)
      return ok
    },
    failures
  }
}

export function seconds (since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)} s`
}

export function lastLine (text: string): string {
  return text.trim().split('\n').at(-1) ?? ''
}

export function megabytes (bytes: number): string {
  return `${(bytes / 1e6).toFixed(0)} MB`
}

/**
 * Builds the API image from the repository's unchanged Dockerfile on `base` (layers are cached:
 * a rebuild with nothing changed takes seconds). `--format docker`: the OCI format has no
 * HEALTHCHECK (podman drops it with a warning).
 */
export async function buildApiImage (image: string, base: string): Promise<Result & { took: string }> {
  const started = Date.now()
  const previous = (await run('podman', ['image', 'inspect', '--format', '{{.Id}}', image])).stdout.trim()
  console.log(`building ${image} from ./Dockerfile with NODE_IMAGE=${base}`)
  const result = await run('podman', ['build', '--isolation', 'chroot', '--format', 'docker', '--build-arg', `NODE_IMAGE=${base}`, '-t', image, '-f', join(ROOT, 'Dockerfile'), ROOT])
  // The image this build replaced, now untagged, is removed so that runs do not pile them up
  // (only that one: other images on the machine are not this script's to prune).
  const current = (await run('podman', ['image', 'inspect', '--format', '{{.Id}}', image])).stdout.trim()
  if (previous !== '' && previous !== current) await run('podman', ['rmi', previous])
  return { ...result, took: seconds(started) }
}

/**
 * `concurrency` loops of GET `path` on keep-alive connections, each outcome counted: answered
 * (by status), refused at connect, reset (after the request was sent), other errors. A loop ends
 * at its first failure, or when stop() is called.
 */
export function startStream (port: number, key: string, concurrency: number, path: string) {
  const counts = {
    answered: 0,
    answeredWhileStopping: 0,
    refused: 0,
    reset: 0,
    other: 0,
    statuses: {} as Record<number, number>
  }
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  let stopping = false
  let ended = false
  const once = async (): Promise<'answered' | 'refused' | 'reset' | 'other'> => await new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers: { 'x-api-key': key } }, (res) => {
      res.resume()
      res.on('end', () => {
        counts.statuses[res.statusCode ?? 0] = (counts.statuses[res.statusCode ?? 0] ?? 0) + 1
        resolve('answered')
      })
      res.on('error', () => resolve('reset'))
    })
    req.on('error', (error: NodeJS.ErrnoException) => {
      resolve(error.code === 'ECONNREFUSED' ? 'refused' : error.code === 'ECONNRESET' || error.code === 'EPIPE' || error.message === 'socket hang up' ? 'reset' : 'other')
    })
    req.end()
  })
  const loop = async (): Promise<void> => {
    while (!ended) {
      const outcome = await once()
      counts[outcome]++
      if (outcome === 'answered' && stopping) counts.answeredWhileStopping++
      // Refused at connect: the listener is closed; a client (or nginx) goes elsewhere.
      if (outcome !== 'answered') return
    }
  }
  const done = Promise.all(Array.from({ length: concurrency }, loop)).then(() => agent.destroy())
  return { counts, done, mark: () => { stopping = true }, stop: () => { ended = true } }
}

/** The server's last line about its drain (how many connections it closed after their answer). */
export function drainLine (log: string): string {
  const line = log.split('\n').findLast((l) => l.includes('every request in flight was answered') || l.includes('grace period over'))
  if (line === undefined) return 'no drain line'
  try {
    const { msg, connections, cut } = JSON.parse(line) as { msg: string; connections?: number; cut?: number }
    return `${msg}${connections === undefined ? '' : ` (connections: ${connections})`}${cut === undefined ? '' : ` (cut: ${cut})`}`
  } catch {
    return line
  }
}
