// npm run test:image: builds the image from the repository's Dockerfile with podman and proves
// that it works the way a user runs it: one container on a SQLite volume, a published port, keys
// created inside it, a drained stop, a restart on the same volume.
//
// Needs root (podman as root; apt-get installs podman, runc, debootstrap when they are missing).
// When node:24-slim cannot be pulled (no registry reachable here), the base is a stand-in built
// from Debian's packages and kept between runs (scripts/test-image-podman.ts). Environment:
// NODE_IMAGE uses that base instead; PETSTORE_IMAGE names the image built (default
// localhost/petstore-api:test). Prints PASS or FAIL per check; exits 1 on any failure. Removes
// its containers and volume; keeps the images (layer cache for the next run).
import { readFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { join } from 'node:path'
import {
  buildApiImage,
  createReport,
  drainLine,
  ensureNodeImage,
  ensurePackages,
  freePort,
  lastLine,
  megabytes,
  must,
  podman,
  RUN_OPTIONS,
  run,
  seconds,
  startStream,
  waitUntil
} from './test-image-podman.ts'

const IMAGE = process.env.PETSTORE_IMAGE ?? 'localhost/petstore-api:test'
const tag = `${process.pid}-${Date.now().toString(36)}`
const VOLUME = `petstore-image-test-${tag}`
const containers: string[] = []
/** Each container's PID 1 RSS (MiB) right after its /readyz first answered 200. */
const rssAtStart = new Map<string, number>()
const report = createReport()
const started = Date.now()

process.on('SIGINT', () => { void cleanup().then(() => process.exit(130)) })

try {
  await ensurePackages({ podman: 'podman', runc: 'runc', debootstrap: 'debootstrap', iptables: 'iptables' })
  console.log(`podman: ${lastLine(await must('podman', ['--version']))}`)

  const base = await ensureNodeImage()
  const build = await buildApiImage(IMAGE, base)
  if (!report.check(
    'the image builds from the unchanged Dockerfile',
    build.code === 0,
    build.code === 0 ? `in ${build.took}` : (build.stderr + build.stdout).trim().split('\n').slice(-15).join('\n')
  )) throw new Error('no image')
  report.check('the build keeps the HEALTHCHECK', !/HEALTHCHECK is not supported/.test(build.stderr + build.stdout))
  const size = Number((await must('podman', ['image', 'inspect', '--format', '{{.Size}}', IMAGE])).trim())
  console.log(`image size: ${megabytes(size)} (${IMAGE})`)

  // 1. One container on a SQLite volume, its port published on 127.0.0.1 only.
  await must('podman', ['volume', 'create', VOLUME])
  const port = await freePort()
  const base_url = `http://127.0.0.1:${port}`
  const first = await startContainer(port, 'a')
  const ready = await get(`${base_url}/readyz`)
  report.check('/readyz answers 200 through the published port', ready.status === 200, `${ready.status} ${ready.body.trim()}`)
  // /metrics is on the container's loopback (127.0.0.1:9464), never on the published port.
  const metrics = await get(`${base_url}/metrics`)
  report.check('/metrics is not served through the published port', metrics.status === 404 && !metrics.body.includes('http_requests_total'), `${metrics.status} ${metrics.body.trim().slice(0, 120)}`)
  const mountpoint = (await must('podman', ['volume', 'inspect', '--format', '{{.Mountpoint}}', VOLUME])).trim()
  const dbFile = join(mountpoint, 'petstore.db')
  const dbBytes = await readFile(dbFile).then((b) => b.length, () => 0)
  report.check('it runs on SQLite in the volume (/app/data/petstore.db)', dbBytes > 0, `${dbFile}: ${dbBytes} bytes`)

  // 2. keys create inside the container; the key works against the server, and no key is refused.
  const created = await run('podman', ['exec', first, 'node', 'src/cli/main.ts', 'keys', 'create', '--role', 'admin', '--plan', 'enterprise', '--per-minute', '100000', '--per-day', '1000000', '--name', 'image test', '--json'])
  const key = created.code === 0 ? (JSON.parse(created.stdout) as { id: number; key: string }) : undefined
  report.check('`keys create` runs inside the container (podman exec)', key !== undefined, key === undefined ? lastLine(created.stderr) : `key ${key.id}`)
  if (key === undefined) throw new Error('no key')
  const anonymous = await get(`${base_url}/v1/pets`)
  const listed = await get(`${base_url}/v1/pets`, key.key)
  report.check('GET /v1/pets with that key answers 200 (and 401 without a key)', listed.status === 200 && anonymous.status === 401, `${listed.status} with, ${anonymous.status} without`)
  const category = await send('POST', `${base_url}/v1/categories`, key.key, { name: 'Image test' })
  const pet = await send('POST', `${base_url}/v1/pets`, key.key, { name: 'Rex', categoryId: (JSON.parse(category.body) as { id: number }).id })
  const petId = pet.status === 201 ? (JSON.parse(pet.body) as { id: number }).id : undefined
  report.check('a pet is created (POST /v1/pets answers 201)', petId !== undefined, `${category.status}, ${pet.status}`)

  // 3. The process: node as PID 1 (it gets SIGTERM itself), user node (uid 1000), not root.
  const status = await must('podman', ['exec', first, 'cat', '/proc/1/status'])
  const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1]
  const cmdline = (await must('podman', ['exec', first, 'cat', '/proc/1/cmdline'])).split('\0').filter(Boolean).join(' ')
  const user = (await must('podman', ['exec', first, 'id', '-un'])).trim()
  report.check('the server runs as node, not root', uid === '1000' && user === 'node', `PID 1 uid ${uid}, exec user ${user}`)
  // Node's own flags may come first (--heap-growing-percent: Node refuses it in NODE_OPTIONS).
  report.check('node is PID 1 (SIGTERM reaches it, no shell or npx between)', /^node( --[a-z-]+(=\S+)?)* src\/cli\/main\.ts serve$/.test(cmdline), cmdline)

  // 4. The image's HEALTHCHECK passes.
  const healthTest = (await must('podman', ['inspect', '--format', '{{json .Config.Healthcheck.Test}}', first])).trim()
  const health = await podman('healthcheck', 'run', first)
  report.check(
    'the HEALTHCHECK command passes (podman healthcheck run)',
    health.code === 0 && healthTest.includes('/readyz'),
    `exit ${health.code} ${(health.stdout + health.stderr).trim()}; ${healthTest}`
  )

  // 5. podman stop while requests flow: every request sent is answered or, once the server has
  // stopped accepting, refused before it is sent; none reset. One request is half sent when the
  // stop begins (its body is finished once the server says it is draining): it must get its 201.
  const stream = startStream(port, key.key, 6, '/v1/pets?limit=5')
  await waitUntil('requests flowing', async () => stream.counts.answered >= 30)
  const slow = slowPost(port, key.key, { name: 'Draining', categoryId: (JSON.parse(category.body) as { id: number }).id })
  await slow.headersSent
  const stopStarted = Date.now()
  stream.mark()
  const stopping = run('podman', ['stop', '-t', '30', first])
  await waitUntil('the server to log that it is draining', async () => (await podman('logs', first)).stdout.includes('stopping: no new connections'), 30_000)
  slow.finish()
  const stopped = await stopping
  stream.stop()
  await stream.done
  const slowAnswer = await slow.answer
  const exitCode = (await must('podman', ['inspect', '--format', '{{.State.ExitCode}}', first])).trim()
  const drained = drainLine((await podman('logs', first)).stdout)
  const { counts } = stream
  report.check('podman stop: the server exits 0', stopped.code === 0 && exitCode === '0', `exit code ${exitCode}, stop took ${seconds(stopStarted)}, its log: "${drained}"`)
  report.check(
    'podman stop: a request half sent when the stop began is answered',
    /^HTTP\/1\.1 201 /.test(slowAnswer) && /\r\nconnection: close\r\n/i.test(slowAnswer),
    lastLine(slowAnswer.split('\r\n\r\n')[0]?.split('\r\n')[0] ?? '') || slowAnswer.slice(0, 80)
  )
  report.check('podman stop: no request reset while stopping', counts.reset === 0 && counts.other === 0 && counts.answeredWhileStopping > 0,
    `${counts.answered} answered (${counts.answeredWhileStopping} after the stop began, statuses ${JSON.stringify(counts.statuses)}), ${counts.refused} refused at connect after the listener closed, ${counts.reset} reset, ${counts.other} other errors`)

  // 6. A new container on the same volume: the key and the pets are still there.
  await must('podman', ['rm', first])
  containers.splice(containers.indexOf(first), 1)
  const second = await startContainer(port, 'b')
  const after = await get(`${base_url}/v1/pets?limit=100`, key.key)
  const names = after.status === 200
    ? (JSON.parse(after.body) as Array<{ id: number; name: string }>).map((p) => p.name)
    : []
  report.check('restart: a new container on the same volume keeps the key and the pets', after.status === 200 && names.includes('Rex') && names.includes('Draining'), `${after.status}, pets ${JSON.stringify(names)}`)
  const stoppedAgain = await run('podman', ['stop', '-t', '30', second])
  const exitAgain = (await must('podman', ['inspect', '--format', '{{.State.ExitCode}}', second])).trim()
  report.check('an idle server stops with exit 0 too', stoppedAgain.code === 0 && exitAgain === '0', `exit code ${exitAgain}`)

  // 7. The compile cache filled at build time: the same start with it disabled loads the type
  // stripper (amaro, about 18 MiB). Both RSS figures are taken right after /readyz first answers;
  // the cached one is the lower of the two starts with the cache: a start can do work of its own
  // at once (the restart measured 121 MiB once, 113 in the next run), which is not the stripper.
  const cached = Math.min(...[first, second].map((name) => rssAtStart.get(name)!))
  const uncachedName = await startContainer(port, 'c', ['-e', 'NODE_DISABLE_COMPILE_CACHE=1'])
  const uncached = rssAtStart.get(uncachedName)!
  report.check('the compile cache built into the image keeps the type stripper out: RSS at start at least 10 MiB below a start without it',
    cached <= uncached - 10, `${cached.toFixed(0)} MiB with the cache, ${uncached.toFixed(0)} MiB with NODE_DISABLE_COMPILE_CACHE=1`)
  console.log(`image size: ${megabytes(size)} (${IMAGE})`)
} catch (error) {
  report.check('the run completed', false, (error as Error).message)
} finally {
  await cleanup()
}
console.log(`${report.failures.length === 0 ? 'PASS' : 'FAIL'}  test:image: `
  + `${report.failures.length === 0 ? 'every check passed' : `${report.failures.length} failed: ${report.failures.join('; ')}`}`
  + ` (${seconds(started)})`)
process.exitCode = report.failures.length === 0 ? 0 : 1

async function startContainer (port: number, suffix: string, extra: string[] = []): Promise<string> {
  const name = `petstore-image-test-${tag}-${suffix}`
  containers.push(name)
  await must('podman', ['--runtime', 'runc', 'run', '-d', '--name', name, ...RUN_OPTIONS, '-p', `127.0.0.1:${port}:3000`, '-v', `${VOLUME}:/app/data`, '-e', 'LOG_LEVEL=info', ...extra, IMAGE])
  const startedAt = Date.now()
  await waitUntil(`${name} to answer /readyz`, async () => (await get(`http://127.0.0.1:${port}/readyz`)).status === 200)
  const rssKiB = Number(/^VmRSS:\s+(\d+) kB/m.exec(await must('podman', ['exec', name, 'cat', '/proc/1/status']))?.[1])
  rssAtStart.set(name, rssKiB / 1024)
  console.log(`  ${name} ready in ${seconds(startedAt)}, RSS ${(rssKiB / 1024).toFixed(0)} MiB`)
  return name
}

async function cleanup (): Promise<void> {
  for (const name of containers.splice(0)) await podman('rm', '-f', '-t', '0', name)
  await podman('volume', 'rm', '-f', VOLUME)
}

interface Answer { status: number; body: string }

async function get (url: string, key?: string): Promise<Answer> {
  return await send('GET', url, key)
}

async function send (method: string, url: string, key?: string, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = {}
  if (key !== undefined) headers['x-api-key'] = key
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(url, { method, headers, ...(body !== undefined && { body: JSON.stringify(body) }) })
  return { status: response.status, body: await response.text() }
}

/** A POST whose headers and half its body are sent now, the rest on finish(). */
function slowPost (port: number, key: string, body: unknown) {
  const json = JSON.stringify(body)
  const half = Math.floor(json.length / 2)
  const socket = connect(port, '127.0.0.1')
  let response = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => { response += chunk })
  const answer = new Promise<string>((resolve) => {
    socket.on('end', () => resolve(response))
    socket.on('close', () => resolve(response))
    socket.on('error', (error) => resolve(`${response}(socket error: ${error.message})`))
  })
  const headersSent = new Promise<void>((resolve) => {
    socket.on('connect', () => {
      socket.write(`POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json.slice(0, half)}`, () => resolve())
    })
  })
  return { headersSent, answer, finish: () => { socket.write(json.slice(half)) } }
}
