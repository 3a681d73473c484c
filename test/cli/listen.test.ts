// petstore listen as a process, against the server as a process, forwarding to a real receiver that
// verifies with the official standardwebhooks package: every event once, in feed order, through a
// restart of the server, and byte for byte what the server's own delivery of the same event
// carries. Its arguments and the API's refusals, in process through main().
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { Webhook } from 'standardwebhooks'
import { main } from '../../src/cli/main.ts'
import { memoryIo } from '../helpers/io.ts'
import { listenTestApp } from '../helpers/app.ts'
import { cleanupStack, pollUntil } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'
import { closedPort, startReceiver, type Received } from '../webhooks/receiver.ts'
import { received } from '../webhooks/helpers.ts'

const CLI = new URL('../../src/cli/main.ts', import.meta.url).pathname

interface Child {
  /** What it printed so far on stdout and stderr. */
  out (): string
  err (): string
  /** Waits (up to timeoutMs) until stderr matches, and returns the match. */
  waitErr (pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>
  /** Sends the signal and resolves with the exit code once its output is read to the end (SIGKILL after 10 s). */
  stop (signal: NodeJS.Signals): Promise<number | null>
}

/** `petstore ARGS` as a child process on the Node running the tests, stopped when the test ends. */
function petstore (cleanup: ReturnType<typeof cleanupStack>, args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { err += chunk })
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  let stopping: Promise<number | null> | null = null
  const stop = (signal: NodeJS.Signals): Promise<number | null> => {
    stopping ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return await closed
      child.kill(signal)
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      try { return await closed } finally { clearTimeout(timer) }
    })()
    return stopping
  }
  cleanup(() => stop('SIGTERM'))
  const waitErr = async (pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> =>
    (await pollUntil(async () => pattern.exec(err) ?? undefined, {
      timeoutMs,
      intervalMs: 20,
      message: `${pattern} not printed: stderr was\n${err}\nstdout was\n${out}`
    })).value
  return { out: () => out, err: () => err, waitErr, stop }
}

/** `petstore serve` on this port and database, answering once it does (whatever it prints). */
async function serve (
  cleanup: ReturnType<typeof cleanupStack>,
  port: number,
  env: Record<string, string>
): Promise<Child> {
  // METRICS_PORT 0: a fixed --port would put /metrics on 9464, which another test's server may hold.
  const server = petstore(cleanup, ['serve', '--port', String(port)], { LOG_LEVEL: 'warn', METRICS_PORT: '0', ...env })
  await pollUntil(async () => (await fetch(`http://127.0.0.1:${port}/v1/rate_limit`)).status === 401 ? true : undefined, {
    timeoutMs: 60_000,
    intervalMs: 50,
    message: `the server did not answer on port ${port}: ${server.err()}`
  })
  return server
}

async function createCategory (baseUrl: string, key: string, name: string): Promise<void> {
  const response = await fetch(`${baseUrl}/categories`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ name })
  })
  assert.equal(response.status, 201, await response.text())
}

test('listen forwards each new event once, in feed order, signed as a delivery, through a restart of the server; not what came before it', { timeout: 180_000 }, async (t) => {
  // Catches: an event forwarded twice or lost when the server goes away (a cursor not kept, a page
  // read again after a failure), a listen that dies with the server, events from before the start
  // forwarded, a signature or body the official package or the real delivery disagree with.
  const cleanup = cleanupStack(t)
  const dir = tempDir(t, 'petstore-listen-')
  const env = { DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50' }
  const created = memoryIo(env)
  assert.equal(await main(['keys', 'create', '--role', 'staff', '--plan', 'enterprise', '--per-minute', '100000', '--per-day', '1000000', '--json'], created), 0)
  const key = (JSON.parse(created.lines[0]!) as { key: string }).key
  const port = await closedPort()
  const baseUrl = `http://127.0.0.1:${port}/v1`
  const first = await serve(cleanup, port, env)

  // The same events to a real endpoint, delivered by the server: the reference for the bytes.
  const deliveries = await startReceiver(t)
  const subscribed = await fetch(`${baseUrl}/webhooks`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://127.0.0.1:${deliveries.port}/hook`, types: ['category.*'] })
  })
  assert.equal(subscribed.status, 201)
  const endpoint = await subscribed.json() as { secret: string }

  await createCategory(baseUrl, key, 'Before 1')
  await createCategory(baseUrl, key, 'Before 2')

  const receiver = await startReceiver(t)
  const listen = petstore(cleanup, [
    'listen', '--forward-to', `http://127.0.0.1:${receiver.port}/hooks`, '--types', 'category.*', '--base-url', baseUrl, '--poll-ms', '100'
  ], { PETSTORE_API_KEY: key })
  const secret = (await listen.waitErr(/^Signing secret of this run: (whsec_\S+) \(your receiver verifies with it/m))[1]!
  await listen.waitErr(/^Ready:/m)

  for (const name of ['A 1', 'A 2', 'A 3']) await createCategory(baseUrl, key, name)
  await received(receiver, 3, 10_000)

  assert.equal(await first.stop('SIGTERM'), 0)
  await listen.waitErr(/^listen: the API did not answer: ECONNREFUSED; reading the feed again in \d+\.\d s$/m)
  await serve(cleanup, port, env)
  for (const name of ['B 1', 'B 2', 'B 3']) await createCategory(baseUrl, key, name)
  await received(receiver, 6, 60_000)
  // Time for a duplicate to show up, were one coming: several polls.
  await new Promise((resolve) => setTimeout(resolve, 1000))
  assert.equal(await listen.stop('SIGINT'), 0)

  const webhook = new Webhook(secret)
  const forwarded = receiver.received.map((request) => ({
    request,
    payload: webhook.verify(request.body, request.headers as Record<string, string>) as {
      id: string
      type: string
      data: { name: string }
    }
  }))
  assert.deepEqual(
    forwarded.map(({ payload }) => `${payload.type} ${payload.data.name}`),
    ['A 1', 'A 2', 'A 3', 'B 1', 'B 2', 'B 3'].map((name) => `category.created ${name}`),
    'each new event once, in feed order; none from before the start'
  )
  for (const { request, payload } of forwarded) {
    assert.equal(request.headers['webhook-id'], payload.id)
    assert.equal(request.headers['content-type'], 'application/json')
    assert.equal(request.url, '/hooks')
  }

  // What the server delivered of the same events (at least once: the first copy of each id).
  const all = await received(deliveries, 8, 30_000)
  const delivered = new Map<string, Received>()
  for (const delivery of all) {
    const id = String(delivery.headers['webhook-id'])
    if (!delivered.has(id)) delivered.set(id, delivery)
  }
  for (const { request, payload } of forwarded) {
    const reference = delivered.get(payload.id)
    assert.ok(reference !== undefined, `the server delivered ${payload.id}`)
    assert.equal(request.body, reference.body, 'the same bytes as the server\'s delivery')
    new Webhook(endpoint.secret).verify(reference.body, reference.headers as Record<string, string>)
  }

  const lines = listen.out().trim().split('\n')
  assert.equal(lines.length, 6, listen.out())
  forwarded.forEach(({ payload }, i) => {
    assert.match(lines[i]!, new RegExp(`^\\S+Z  category\\.created +${payload.id}  -> 204 \\(\\d+ ms\\)$`))
  })
  assert.match(listen.err(), /^SIGINT: stopped\. Resume with --cursor \S+$/m)
})

test('listen refuses what it cannot use before calling the API: no key, no or a bad target, a bad secret, since or poll interval (exit 2)', async () => {
  const target = ['--forward-to', 'http://127.0.0.1:4242/hooks']
  const cases: Array<{ args: string[]; env: Record<string, string>; message: RegExp }> = [
    { args: target, env: {}, message: /^set PETSTORE_API_KEY/ },
    { args: [], env: { PETSTORE_API_KEY: 'psk_x' }, message: /^--forward-to takes the http\(s\) URL/ },
    { args: ['--forward-to', 'ftp://127.0.0.1/x'], env: { PETSTORE_API_KEY: 'psk_x' }, message: /^--forward-to takes/ },
    { args: [...target, '--secret', 'whsec_not base64!'], env: { PETSTORE_API_KEY: 'psk_x' }, message: /^--secret is an endpoint secret/ },
    { args: [...target, '--since', 'yesterday'], env: { PETSTORE_API_KEY: 'psk_x' }, message: /^--since takes an ISO 8601 instant/ },
    { args: [...target, '--poll-ms', '10'], env: { PETSTORE_API_KEY: 'psk_x' }, message: /^--poll-ms is a whole number/ },
    { args: [...target, '--base-url', 'localhost:3000'], env: { PETSTORE_API_KEY: 'psk_x' }, message: /^--base-url/ }
  ]
  for (const { args, env, message } of cases) {
    const io = memoryIo(env)
    assert.equal(await main(['listen', ...args], io), 2, args.join(' '))
    assert.match(io.errors.join('\n'), message)
    assert.deepEqual(io.lines, [])
  }
})

test('listen stops on an answer waiting cannot change: a key the API refuses (exit 1), a type it does not know (exit 2)', async (t) => {
  // Catches: a listen that retries a 401 forever (a revoked key) or takes a typo for no events.
  const server = await listenTestApp(t)
  const target = ['--forward-to', 'http://127.0.0.1:4242/hooks', '--base-url', server.baseUrl]
  const refused = memoryIo({ PETSTORE_API_KEY: `psk_${'x'.repeat(49)}` })
  assert.equal(await main(['listen', ...target], refused), 1)
  assert.match(refused.errors.at(-1)!, /^listen: 401 unauthenticated: /)

  const typo = memoryIo({ PETSTORE_API_KEY: server.keys.staff })
  assert.equal(await main(['listen', ...target, '--types', 'order.creatd'], typo), 2)
  assert.match(typo.errors.at(-1)!, /^listen: 400 validation_failed: /)
  assert.deepEqual([...refused.lines, ...typo.lines], [], 'nothing forwarded')
})

test('listen and trigger are clients of the API: they load neither Fastify, pino, pg nor ioredis, nor the server', async () => {
  // A child process records every module it resolves while both commands run up to their first
  // refusal (no key): what they import at the top is loaded by then.
  const probe = `
    import { registerHooks } from 'node:module'
    const seen = new Set()
    registerHooks({ resolve (spec, ctx, next) { const r = next(spec, ctx); seen.add(r.url); return r } })
    const { main } = await import(${JSON.stringify(new URL('../../src/cli/main.ts', import.meta.url).href)})
    const io = { env: {}, out: () => {}, err: () => {} }
    const codes = [await main(['listen', '--forward-to', 'http://127.0.0.1:1/'], io), await main(['trigger', 'order.created'], io)]
    console.log(JSON.stringify({ codes, modules: [...seen] }))`
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', probe])
  const { codes, modules } = JSON.parse(stdout) as { codes: number[]; modules: string[] }
  assert.deepEqual(codes, [2, 2])
  assert.ok(modules.some((url) => url.endsWith('/src/cli/trigger.ts')), 'the probe saw trigger load')
  const heavy = modules.filter((url) => /\/node_modules\/(fastify|@fastify|pg|ioredis|pino)\/|\/src\/(app|server)\.ts$/.test(url))
  assert.deepEqual(heavy, [])
})
