// The operator's journey (issue 52 item 2), as a person makes it: the server started at a terminal
// with its log piped into jq as the README says (`npm start --silent | jq .`), a customer placing
// orders meanwhile, a key made and then revoked with the command line on the same database, the
// audit log verified and read, and Ctrl-C. What is asserted is what the person sees on the
// terminal, in order, and the effects: the new key served, then refused, the audit entries.
//
// Guards: the banner on stdout, where jq fails on it and stops reading the log (issue 49 section
// 5); `keys create` failing with "the database is locked" against a server that is writing (issue
// 48, seen once); an audit verdict that does not say what it cannot see (issue 48 finding 10).
import assert from 'node:assert/strict'
import { execFile, spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { stripVTControlCharacters } from 'node:util'
import { pollUntil } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'
import { CLI, freePort } from './serve.ts'

const MISSING = ['script', 'jq'].filter((tool) => spawnSync(tool, ['--version']).error !== undefined)
const SKIP = MISSING.length === 0 ? false : `not installed: ${MISSING.join(', ')}`

/** Single quotes for sh. */
const quote = (text: string): string => `'${text.replaceAll("'", "'\\''")}'`

/** `petstore ARGS` as its own process, as an operator runs it in another terminal. */
async function petstore (
  args: string[],
  env: Record<string, string>
): Promise<{ code: number; out: string; err: string }> {
  return await new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } }, (error, out, err) => {
      resolve({ code: error === null ? 0 : Number(error.code), out, err })
    })
  })
}

/** The JSON objects jq printed on the terminal (one per line with `jq -c`), in order. */
function jqLines (screen: string): Array<Record<string, unknown>> {
  return screen.split('\n').filter((line) => line.startsWith('{')).flatMap((line) => {
    try { return [JSON.parse(line) as Record<string, unknown>] } catch { return [] }
  })
}

test('an operator serves at a terminal through jq, makes and revokes a key with the CLI while orders go on, verifies and reads the audit log, and stops with Ctrl-C', { skip: SKIP, timeout: 90_000 }, async (t) => {
  const dir = tempDir(t, 'petstore-operator-')
  const keysFile = join(dir, 'keys.txt')
  // No cool-down after a cancel: the orders below are a load, not the subject.
  // METRICS_PORT 0: with a fixed --port, /metrics would go on 9464, which another test's server
  // may hold (the server then stops at its start: seen as a start timeout in CI).
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, LOG_LEVEL: 'info', LOG_FORMAT: '', ORDER_COOLDOWN_MINUTES: '0', METRICS_PORT: '0' }
  // A port chosen here, so that the test finds the server whatever reaches the screen: a banner
  // lost in the pipe then fails below by name rather than as a start timeout.
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const serve = [process.execPath, CLI, 'serve', '--port', String(port), '--sample-data', '--keys-file', keysFile].map(quote).join(' ')
  // A pseudo-terminal (util-linux `script`) in its own process group; its stdin is the keyboard.
  const terminal = spawn('script', ['-qec', `${serve} | jq -c .`, '/dev/null'], {
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env }
  })
  let raw = ''
  terminal.stdout.on('data', (chunk: Buffer) => { raw += chunk.toString() })
  const closed = new Promise<void>((resolve) => terminal.on('close', () => resolve()))
  t.after(async () => {
    if (terminal.exitCode === null && terminal.pid !== undefined) process.kill(-terminal.pid, 'SIGKILL')
    await closed
  })
  const screen = (): string => stripVTControlCharacters(raw).replaceAll('\r', '')

  await pollUntil(async () => (await fetch(`${url}/healthz`)).ok || undefined, {
    timeoutMs: 60_000,
    intervalMs: 100,
    message: `the server did not start at the terminal:\n${screen()}`
  })
  await pollUntil(async () => screen().includes(`Petstore API on ${url}/v1`) || undefined, {
    timeoutMs: 5000,
    intervalMs: 50,
    message: `the banner did not reach the terminal (on stdout, jq took it for a log line):\n${screen()}`
  })
  assert.doesNotMatch(screen(), /jq: error|parse error/, 'jq read every stdout line as JSON')

  const sampleKeys = readFileSync(keysFile, 'utf8')
  const customer = /customer\s+(psk_\S+)/.exec(sampleKeys)?.[1]
  const admin = /admin\s+(psk_\S+)/.exec(sampleKeys)?.[1]
  assert.ok(customer !== undefined && admin !== undefined, sampleKeys)
  const api = async (path: string, key: string, init: RequestInit = {}): Promise<Response> =>
    await fetch(`${url}/v1${path}`, {
      ...init,
      headers: { 'x-api-key': key, ...(init.body !== undefined && { 'content-type': 'application/json' }) }
    })

  // A customer orders while the operator works: the server writes to the database the CLI writes to.
  const pets = await (await api('/pets?limit=100', customer)).json() as Array<{ id: number; name: string }>
  const bubbles = pets.find((pet) => pet.name === 'Bubbles')
  assert.ok(bubbles !== undefined)
  // Each order is cancelled at once, so stock and caps never end the load before the command does;
  // a pair every 300 ms keeps the free plan's 60 a minute for the rest of the journey.
  let ordering = true
  const orderStatuses: number[] = []
  const orders = (async () => {
    while (ordering) {
      const placed = await api('/store/orders', customer, { method: 'POST', body: JSON.stringify({ petId: bubbles.id, quantity: 1 }) })
      const { id } = await placed.json() as { id: number }
      const cancelled = await api(`/store/orders/${id}`, customer, { method: 'DELETE' })
      orderStatuses.push(placed.status, cancelled.status)
      await new Promise((resolve) => setTimeout(resolve, 300))
    }
  })()

  const made = await petstore(['keys', 'create', '--role', 'customer', '--plan', 'free', '--name', 'till 2', '--json'], env)
  assert.equal(made.code, 0, `keys create failed while the server took orders: ${made.err}`)
  const { id: keyId, key } = JSON.parse(made.out) as { id: number; key: string }
  ordering = false
  await orders
  assert.ok(orderStatuses.length > 0, 'orders were placed while the command ran')
  assert.deepEqual(new Set(orderStatuses), new Set([201, 204]), `orders: ${orderStatuses.join(' ')}`)

  // A new key is served at its first use, on the server that did not make it.
  assert.equal((await api('/pets?limit=1', key)).status, 200)
  const revoked = await petstore(['keys', 'revoke', String(keyId)], env)
  assert.equal(revoked.code, 0, revoked.err)
  // Every running server refuses it within 5 s (docs/product.md 2.4).
  const { value: refusal } = await pollUntil(async () => {
    const answer = await api('/pets?limit=2', key)
    return answer.status === 401 ? await answer.json() as { code: string } : undefined
  }, { timeoutMs: 5000, intervalMs: 200, message: 'the revoked key was still served' })
  assert.equal(refusal.code, 'unauthenticated')

  const verified = await petstore(['audit', 'verify'], env)
  assert.equal(verified.code, 0, verified.err)
  assert.match(verified.out, /^audit log intact: \d+ entries, last hash [0-9a-f]+; .*--known COUNT:HASH/)
  const audit = await (await api(`/admin/audit?actor=cli&targetType=key&targetId=${keyId}`, admin)).json() as Array<{
    action: string
    actor: { type: string }
    changes: Record<string, unknown>
  }>
  assert.deepEqual(audit.map((entry) => [entry.action, entry.actor.type]), [['key.revoke', 'cli'], ['key.create', 'cli']])
  assert.ok(!JSON.stringify(audit).includes(key), 'the audit log never holds the key')

  // What the terminal showed of the requests, in the order they were made: the orders, the new
  // key served, then refused.
  const { value: requests } = await pollUntil(async () => {
    const lines = jqLines(screen()).filter((line) => line.msg === 'request completed')
    return lines.some((line) => line.url === `/v1/admin/audit?actor=cli&targetType=key&targetId=${keyId}`) ? lines : undefined
  }, { timeoutMs: 5000, intervalMs: 50, message: `the request lines did not reach the terminal:\n${screen()}` })
  const seen = requests.map((line) => `${String(line.method)} ${String(line.url)} ${String(line.statusCode)}`)
  // The new key's calls: served at once, then served until the revocation reached the server
  // (its key cache), then refused, and nothing after.
  const newKey = requests.filter((line) => line.url === '/v1/pets?limit=1' || line.url === '/v1/pets?limit=2')
  assert.deepEqual(newKey.map((line) => [line.url, line.statusCode, line.keyId ?? line.code]), [
    ['/v1/pets?limit=1', 200, keyId],
    ...newKey.slice(1, -1).map(() => ['/v1/pets?limit=2', 200, keyId]),
    ['/v1/pets?limit=2', 401, 'unauthenticated']
  ])
  assert.equal(seen.filter((line) => line.startsWith('POST /v1/store/orders 201')).length, orderStatuses.length / 2)
  assert.ok(!screen().includes(key) && !screen().includes(admin), 'no key on the terminal')

  // Ctrl-C: the server finishes and says so; the notice is the last thing the person reads.
  const before = screen()
  terminal.stdin.write('\x03')
  await closed
  const after = screen().slice(before.length)
  assert.match(after, /SIGINT: finishing requests in flight, then stopping/)
  const order = ['Sample data loaded. API keys (shown once) written to', `Petstore API on ${url}/v1`, '"POST"', 'SIGINT: finishing']
  const positions = order.map((text) => screen().indexOf(text))
  assert.ok(positions.every((at, i) => at >= 0 && (i === 0 || at > positions[i - 1]!)), `out of order:\n${screen()}`)
})
