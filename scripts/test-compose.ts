// npm run test:compose: compose.yaml run for real under podman-compose (PostgreSQL, Redis, a
// one-shot migrate, two API instances, nginx), and what the setup promises, checked through nginx:
// limits shared by both instances, a key revoked on one refused on the other, one instance stopped
// while requests flow without losing any, /metrics not reachable (but on each instance's private port).
//
// Needs root. Installs podman, runc, debootstrap, iptables and podman-compose when missing. The
// images come from the environment (PETSTORE_IMAGE, POSTGRES_IMAGE, REDIS_IMAGE, NGINX_IMAGE, as
// compose.yaml reads them); else the API image is built from the Dockerfile (as test:image does)
// and each official image is pulled, or, when no registry answers, replaced by a stand-in built
// from Debian's packages (deploy/stand-ins/Containerfile), kept between runs. Takes about a
// minute once the images exist. Prints PASS or FAIL per check and the figures; exits 1 on any
// failure. Removes its containers, volume and network.
import { join } from 'node:path'
import {
  buildApiImage,
  createReport,
  drainLine,
  ensureDebianImage,
  ensureNodeImage,
  ensurePackages,
  freePort,
  imageExists,
  lastLine,
  must,
  podman,
  ROOT,
  run,
  seconds,
  startStream,
  waitUntil
} from './test-image-podman.ts'

const PROJECT = `petstore-compose-test-${process.pid}`
const report = createReport()
const started = Date.now()
const figures: string[] = []
const container = (service: string): string => `${PROJECT}_${service}_1`
// Services that the test stops and starts itself are given the same runtime and limits.
const RUN_ARGS = '--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024'

process.on('SIGINT', () => { void cleanup().then(() => process.exit(130)) })

try {
  // aardvark-dns (a recommendation of netavark) resolves the service names on the compose network.
  await ensurePackages({ podman: 'podman', runc: 'runc', debootstrap: 'debootstrap', iptables: 'iptables', 'podman-compose': 'podman-compose', '/usr/lib/podman/aardvark-dns': 'aardvark-dns' })
  console.log(`${lastLine(await must('podman', ['--version']))}, ${lastLine(await must('podman-compose', ['version']))}`)

  const env: NodeJS.ProcessEnv = { ...process.env }
  if (env.PETSTORE_IMAGE === undefined) {
    env.PETSTORE_IMAGE = 'localhost/petstore-api:test'
    const build = await buildApiImage(env.PETSTORE_IMAGE, await ensureNodeImage())
    if (build.code !== 0) throw new Error(`the API image does not build:\n${(build.stderr + build.stdout).trim().split('\n').slice(-10).join('\n')}`)
    console.log(`  built in ${build.took}`)
  }
  env.POSTGRES_IMAGE ??= await serviceImage('docker.io/library/postgres:16', 'postgres')
  env.REDIS_IMAGE ??= await serviceImage('docker.io/library/redis:7', 'redis')
  env.NGINX_IMAGE ??= await serviceImage('docker.io/library/nginx:1.27-alpine', 'nginx')
  const port = await freePort()
  env.LB_PUBLISH = `127.0.0.1:${port}`
  const lb = `http://127.0.0.1:${port}`
  console.log(`images: api ${env.PETSTORE_IMAGE}, postgres ${env.POSTGRES_IMAGE}, redis ${env.REDIS_IMAGE}, nginx ${env.NGINX_IMAGE}; nginx on ${lb}`)

  // podman-compose 1.0.3 starts services in dependency order but ignores `condition:` (healthy,
  // completed), and without systemd podman schedules no healthchecks: the databases are started
  // first and their healthchecks run here, then the rest.
  const upStarted = Date.now()
  const compose = async (...args: string[]): Promise<void> => {
    await must('podman-compose', ['-f', join(ROOT, 'compose.yaml'), '-p', PROJECT, `--podman-run-args=${RUN_ARGS}`, ...args], { env })
  }
  await compose('up', '-d', '--no-build', 'postgres', 'redis')
  await waitUntil(
    'the postgres and redis healthchecks',
    async () => (await podman('healthcheck', 'run', container('postgres'))).code === 0
      && (await podman('healthcheck', 'run', container('redis'))).code === 0
  )
  await compose('up', '-d', '--no-build')
  await waitUntil('/readyz through nginx', async () => (await fetch(`${lb}/readyz`)).status === 200, 90_000)
  figures.push(`up in ${seconds(upStarted)}`)
  const migrate = await must('podman', ['inspect', '--format', '{{.State.ExitCode}}', container('migrate')])
  const migrateLog = (await podman('logs', container('migrate'))).stdout.trim()
  report.check('the one-shot migrate ran and exited 0', migrate.trim() === '0', lastLine(migrateLog))
  for (const service of ['postgres', 'redis', 'api-1', 'api-2']) {
    await waitUntil(`${service} healthy`, async () => (await podman('healthcheck', 'run', container(service))).code === 0, 60_000).catch(() => {})
    const health = await podman('healthcheck', 'run', container(service))
    report.check(`${service}: its healthcheck passes`, health.code === 0, (health.stdout + health.stderr).trim())
  }
  const ready = await fetch(`${lb}/readyz`)
  const readyBody = await ready.text()
  report.check('/readyz through nginx: PostgreSQL and Redis both ok', ready.status === 200 && /"redis":\{"status":"ok"\}/.test(readyBody) && /"database":\{"status":"ok"\}/.test(readyBody), readyBody)

  const admin = JSON.parse(await cli('api-1', ['keys', 'create', '--role', 'admin', '--plan', 'enterprise', '--per-minute', '100000', '--per-day', '1000000', '--name', 'compose test', '--json'])) as { id: number; key: string }

  // 1. Shared limits: a key with 40 requests a day, 60 requests through nginx, which spreads
  // them over both instances: 40 allowed in all, not 40 per instance. (The day window, so that a
  // minute boundary during the run changes nothing.)
  const limited = JSON.parse(await cli('api-2', ['keys', 'create', '--role', 'customer', '--plan', 'enterprise', '--per-minute', '40', '--per-day', '40', '--json'])) as { id: number; key: string }
  const servedBefore = await servedListPets()
  const statuses: Record<number, number> = {}
  for (let i = 0; i < 60; i++) {
    const response = await fetch(`${lb}/v1/pets?limit=1`, { headers: { 'x-api-key': limited.key } })
    await response.arrayBuffer()
    statuses[response.status] = (statuses[response.status] ?? 0) + 1
  }
  const servedAfter = await servedListPets()
  const served = servedAfter.map((n, i) => n - (servedBefore[i] ?? 0))
  const sharedDetail = `60 requests: ${statuses[200] ?? 0} allowed, ${statuses[429] ?? 0} refused 429; api-1 answered ${served[0]}, api-2 ${served[1]}`
  figures.push(`shared limits: ${sharedDetail}`)
  report.check('shared limits: a 40-a-day key gets 40 answers in all through both instances', statuses[200] === 40 && statuses[429] === 20 && served.every((n) => n >= 10), sharedDetail)

  // 2. Revocation: a key used through both instances, revoked on api-1 (its admin API, reached
  // inside its container), is refused by api-2 and then through nginx.
  const victim = JSON.parse(await cli('api-1', ['keys', 'create', '--role', 'customer', '--plan', 'pro', '--json'])) as { id: number; key: string }
  const warm = await Promise.all([0, 1, 2, 3].map(async () => (await fetch(`${lb}/v1/pets?limit=1`, { headers: { 'x-api-key': victim.key } })).status))
  const onApi2Before = await inside('api-2', 'GET', '/v1/pets?limit=1', victim.key)
  const revoked = await inside('api-1', 'DELETE', `/v1/admin/keys/${victim.id}`, admin.key)
  const revokedAt = Date.now()
  await waitUntil('api-2 to refuse the revoked key', async () => (await inside('api-2', 'GET', '/v1/pets?limit=1', victim.key)).status === 401, 30_000).catch(() => {})
  const seenAfter = Date.now() - revokedAt
  const onApi2After = await inside('api-2', 'GET', '/v1/pets?limit=1', victim.key)
  const throughLb = await Promise.all(Array.from(
    { length: 10 },
    async () => (await fetch(`${lb}/v1/pets?limit=1`, { headers: { 'x-api-key': victim.key } })).status
  ))
  const revokeDetail = `before: ${warm.join(',')} through nginx, ${onApi2Before.status} on api-2; `
    + `DELETE on api-1: ${revoked.status}; `
    + `api-2 answered ${onApi2After.status} (${/"code":"([a-z_]+)"/.exec(onApi2After.body)?.[1] ?? ''}) `
    + `within ${(seenAfter / 1000).toFixed(1)} s (each probe is a podman exec); then through nginx: ${throughLb.join(',')}`
  figures.push(`revocation: ${revokeDetail}`)
  report.check(
    'a key revoked on api-1 is refused on api-2 and through nginx',
    warm.every((s) => s === 200)
    && onApi2Before.status === 200
    && revoked.status === 204
    && onApi2After.status === 401
    && throughLb.every((s) => s === 401),
    revokeDetail
  )

  // 3. api-2 stopped (SIGTERM, drained) while 6 clients send requests through nginx: every request
  // answered 200. nginx retries a refused connection and a 503 on the other instance.
  const stream = startStream(port, admin.key, 6, '/v1/pets?limit=5')
  await waitUntil('requests flowing through nginx', async () => stream.counts.answered >= 60)
  stream.mark()
  const stopStarted = Date.now()
  const stopped = await run('podman', ['stop', '-t', '30', container('api-2')])
  const stopTook = seconds(stopStarted)
  const atStop = stream.counts.answered
  let ended = false
  void stream.done.then(() => { ended = true })
  await waitUntil('200 more requests through nginx', async () => ended || stream.counts.answered >= atStop + 200)
  stream.stop()
  await stream.done
  const exitCode = (await must('podman', ['inspect', '--format', '{{.State.ExitCode}}', container('api-2')])).trim()
  const drained = drainLine((await podman('logs', container('api-2'))).stdout)
  const { counts } = stream
  const lost = counts.reset
    + counts.refused
    + counts.other
    + Object.entries(counts.statuses).filter(([status]) => status !== '200').reduce((sum, [, n]) => sum + n, 0)
  const stopDetail = `${counts.answered} requests answered (${counts.answeredWhileStopping} after the stop began), `
    + `statuses ${JSON.stringify(counts.statuses)}, ${counts.reset} reset, ${counts.refused} refused, `
    + `${counts.other} other errors; api-2 exit code ${exitCode}, stop took ${stopTook}, its log: "${drained}"`
  figures.push(`one instance stopped: ${stopDetail}`)
  report.check('api-2 stopped while requests flow through nginx: none lost, exit 0', stopped.code === 0 && exitCode === '0' && lost === 0 && counts.answeredWhileStopping > 0, stopDetail)
  await must('podman', ['start', container('api-2')])
  await waitUntil('api-2 ready again', async () => (await inside('api-2', 'GET', '/readyz')).status === 200)

  // 4. /metrics: on each instance's private listener (port 9464, for Prometheus on the private
  // network), not on its public one, and refused by nginx however the path is spelled.
  const direct = await inside('api-1', 'GET', '/metrics')
  const publicPort = await inside('api-1', 'GET', '/metrics', undefined, 3000)
  report.check('/metrics is not served on the instance\'s public port', publicPort.status === 404 && !publicPort.body.includes('http_requests_total'), `api-1:3000/metrics: ${publicPort.status}`)
  const spellings = ['/metrics', '/metrics?format=text', '//metrics', '/./metrics', '/v1/../metrics', '/%6detrics', '/metrics/', '/METRICS', '/metrics%2F']
  const leaks: string[] = []
  const seen: string[] = []
  for (const path of spellings) {
    const answer = await rawGet(port, path)
    seen.push(`${path} ${answer.status}`)
    if (answer.status === 200 || answer.body.includes('# HELP') || answer.body.includes('http_requests_total')) leaks.push(path)
  }
  report.check(
    '/metrics answers on the instance but not through nginx, however spelled',
    direct.status === 200 && direct.body.includes('http_requests_total') && leaks.length === 0,
    `api-1 directly: ${direct.status}; through nginx: ${seen.join(', ')}${leaks.length > 0 ? `; LEAKED: ${leaks.join(', ')}` : ''}`
  )
  const notFound = await rawGet(port, '/metrics')
  report.check(
    'nginx refuses /metrics with the API\'s error object',
    notFound.status === 404 && /^\{"code":"not_found"/.test(notFound.body) && /application\/json/.test(notFound.contentType),
    `${notFound.status} ${notFound.contentType} ${notFound.body.trim()}`
  )
} catch (error) {
  report.check('the run completed', false, (error as Error).message)
} finally {
  await cleanup()
}
console.log(`\nfigures (${new Date().toISOString()}):\n${figures.map((f) => `  ${f}`).join('\n')}`)
console.log(`${report.failures.length === 0 ? 'PASS' : 'FAIL'}  test:compose: `
  + `${report.failures.length === 0 ? 'every check passed' : `${report.failures.length} failed: ${report.failures.join('; ')}`}`
  + ` (${seconds(started)})`)
process.exitCode = report.failures.length === 0 ? 0 : 1

/** The official image when it exists or can be pulled, else the stand-in from Debian's packages. */
async function serviceImage (official: string, target: string): Promise<string> {
  if (await imageExists(official)) return official
  if ((await run('podman', ['pull', '-q', official], { timeoutMs: 120_000 })).code === 0) return official
  const image = `localhost/petstore-${target}:stand-in`
  if (await imageExists(image)) return image
  const debian = await ensureDebianImage()
  const building = Date.now()
  console.log(`${official} cannot be pulled: building ${image} (deploy/stand-ins/Containerfile, target ${target})`)
  await must('podman', ['build', '--isolation', 'chroot', '--format', 'docker', '--build-arg', `DEBIAN_IMAGE=${debian}`, '--target', target, '-t', image, join(ROOT, 'deploy', 'stand-ins')])
  console.log(`  built in ${seconds(building)}`)
  return image
}

/**
 * The petstore CLI inside an instance's container. Retried twice when it cannot reach PostgreSQL:
 * its connect timeout is 2 s, which a loaded 2-CPU VM sometimes misses (seen once); each retry
 * is printed.
 */
async function cli (service: string, args: string[]): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const result = await run('podman', ['exec', container(service), 'node', 'src/cli/main.ts', ...args])
    if (result.code === 0) return result.stdout
    if (attempt === 3 || !/cannot open postgres/.test(result.stderr)) throw new Error(`petstore ${args.join(' ')} in ${service} exited ${result.code}: ${lastLine(result.stderr)}`)
    console.log(`  retrying petstore ${args[0]} ${args[1]} in ${service}: ${lastLine(result.stderr)}`)
  }
}

/** A request to one instance, from inside its container (nginx is not in the way). */
/**
 * A request from inside the container of `service`, to its public listener (3000) or, for
 * /metrics, its private one (9464).
 */
async function inside (
  service: string,
  method: string,
  path: string,
  key?: string,
  port = path === '/metrics' ? 9464 : 3000
): Promise<{ status: number; body: string }> {
  const script = `const r = JSON.parse(process.env.REQ); fetch("http://127.0.0.1:${port}" + r.path, { method: r.method, headers: r.headers })`
    + '.then(async (x) => console.log(JSON.stringify({ status: x.status, body: await x.text() })), (e) => console.log(JSON.stringify({ status: 0, body: String(e) })))'
  const request = JSON.stringify({ method, path, headers: key === undefined ? {} : { 'x-api-key': key } })
  const result = await run('podman', ['exec', '-e', `REQ=${request}`, container(service), 'node', '-e', script])
  try {
    return JSON.parse(result.stdout) as { status: number; body: string }
  } catch {
    return { status: 0, body: (result.stderr + result.stdout).trim() }
  }
}

/** listPets requests each instance has answered, from its own /metrics. */
async function servedListPets (): Promise<number[]> {
  return await Promise.all(['api-1', 'api-2'].map(async (service) => {
    const { body } = await inside(service, 'GET', '/metrics')
    return body.split('\n').filter((line) => line.startsWith('http_requests_total{') && line.includes('operation="listPets"'))
      .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0)
  }))
}

/** A GET with the path sent exactly as written (fetch would normalise it). */
async function rawGet (port: number, path: string): Promise<{ status: number; contentType: string; body: string }> {
  const { connect } = await import('node:net')
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => { socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`) })
    let data = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => { data += chunk })
    socket.on('error', reject)
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n', 2)
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), contentType: /\r\ncontent-type: *([^\r]*)/i.exec(head)?.[1] ?? '', body })
    })
  })
}

async function cleanup (): Promise<void> {
  const ids = (await podman('ps', '-a', '-q', '--filter', `label=io.podman.compose.project=${PROJECT}`)).stdout.split('\n').filter(Boolean)
  if (ids.length > 0) await podman('rm', '-f', '-t', '0', ...ids)
  const volumes = (await podman('volume', 'ls', '-q', '--filter', `label=io.podman.compose.project=${PROJECT}`)).stdout.split('\n').filter(Boolean)
  if (volumes.length > 0) await podman('volume', 'rm', '-f', ...volumes)
  await podman('network', 'rm', '-f', `${PROJECT}_default`)
}
