// The newcomer's journey (issue 52 item 2): README.md's first request, then docs/api.md "Receive
// events" followed literally: its code blocks copied out of the page and run as written by bash
// in a fresh directory, against the server as a process, with the key the server printed. Only
// addresses change (the server's port for 3000, a free port for the receiver's 4242), and the
// `npm install standardwebhooks` line links the repository's installed copy instead: a test
// must not need the registry. Effects asserted: what the person sees (the curl answer, the
// receiver's line for each event, listen's and trigger's lines) and the server's own records.
//
// Guards (issue 49 sections 4 and 5): a receiver block importing a package nobody published, a
// `listen` or `trigger` that is documented but does not run, a curl line that does not work as
// written, a key placeholder whose form differs from the key printed.
import assert from 'node:assert/strict'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { pollUntil } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'
import { freePort, serveJourney } from './serve.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

interface Block { lang: string; text: string }

/**
 * The fenced code blocks of a page's section, in order: the section whose heading starts with
 * `heading`, to the next `## `.
 */
function blocks (file: string, heading: string): Block[] {
  const page = readFileSync(join(ROOT, file), 'utf8')
  const start = page.indexOf(`\n${heading}`)
  assert.ok(start >= 0, `${file} has ${heading}`)
  const end = page.indexOf('\n## ', start + heading.length + 2)
  const section = page.slice(start, end === -1 ? undefined : end)
  return [...section.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, text: m[2]! }))
}

/** The one block of `lang` that contains `marker`. */
function block (list: Block[], lang: string, marker: string): string {
  const found = list.filter((b) => b.lang === lang && b.text.includes(marker))
  assert.equal(found.length, 1, `one ${lang} block with ${marker}`)
  return found[0]!.text
}

interface Shell {
  out (): string
  child: ChildProcessWithoutNullStreams
  until (pattern: RegExp, what: string): Promise<string>
}

/** bash running `script` in its own process group (its background jobs too), killed when the test ends. */
function shell (t: TestContext, script: string, cwd: string, env: Record<string, string>): Shell {
  const child = spawn('bash', ['-c', script], { cwd, detached: true, env: { ...process.env, ...env } })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()))
  t.after(async () => {
    // Already gone when the test stopped it.
    try { process.kill(-child.pid!, 'SIGTERM') } catch { return }
    await closed
  })
  return {
    out: () => out,
    child,
    until: async (pattern, what) => (await pollUntil(async () => pattern.exec(out)?.[0], {
      timeoutMs: 20_000,
      intervalMs: 50,
      message: `${what}; the terminal shows:\n${out}`
    })).value
  }
}

test('a newcomer makes the README\'s first request, then receives events as docs/api.md says: listen, trigger, an endpoint and its curl lines', { timeout: 120_000 }, async (t) => {
  const server = await serveJourney(t, { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' })
  const key = server.keys.customer
  const port = new URL(server.url).port
  const receiverPort = String(await freePort())
  const local = (text: string): string => text.replaceAll(':3000', `:${port}`).replaceAll('4242', receiverPort)
  const env = { KEY: key, PETSTORE_BASE_URL: `${server.url}/v1` }
  const pets = await (await fetch(`${server.url}/v1/pets?limit=100`, { headers: { 'x-api-key': key } })).json() as Array<{ id: number; name: string }>
  const petId = (name: string): number => pets.find((pet) => pet.name === name)!.id

  // README, "A first request": the placeholder line names the key's form; the key printed has it.
  const first = block(blocks('README.md', '## A first request'), 'sh', 'curl -i')
  const placeholder = /^KEY=(\S+)/m.exec(first)?.[1]
  assert.ok(placeholder !== undefined)
  assert.match(key, /^psk_[A-Za-z0-9]{49}$/, 'the key printed is psk_ and 49 letters and digits, as the README says')
  const curl = shell(t, local(first.replace(placeholder, key)), ROOT, {})
  await curl.until(/HTTP\/1\.1 200 OK[\s\S]*link: <\/v1\/pets\?limit=2&cursor=[^>]+>; rel="next"[\s\S]*\[\{"id":1,"name":"Rex"/, 'the first request')

  // docs/api.md "Receive events": the receiver, installed and saved in a fresh directory.
  const section = blocks('docs/api.md', '## Receive events')
  const dir = tempDir(t, 'petstore-newcomer-')
  const install = block(section, 'sh', 'npm install standardwebhooks')
  assert.equal(install.trim(), 'mkdir receiver && cd receiver && npm init -y > /dev/null && npm install standardwebhooks')
  mkdirSync(join(dir, 'receiver'))
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'receiver', 'node_modules'))
  const receiverDir = join(dir, 'receiver')
  writeFileSync(join(receiverDir, 'receiver.mjs'), local(block(section, 'js', "from 'standardwebhooks'")))

  // Without a public URL: the receiver with a secret of its own, then listen in the repository;
  // once the order's event has come, trigger (the shell waits for a line on stdin).
  const listenScript = [
    local(block(section, 'sh', 'openssl rand')),
    `cd ${JSON.stringify(ROOT)}`,
    `${local(block(section, 'sh', 'petstore listen')).trim()} &`,
    'read -r go',
    local(block(section, 'sh', 'petstore trigger')),
    'wait'
  ].join('\n')
  const listen = shell(t, listenScript, receiverDir, env)
  await listen.until(/Ready: each new event is forwarded/, 'listen did not get ready')
  const order = await fetch(`${server.url}/v1/store/orders`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ petId: petId('Bubbles'), quantity: 1 })
  })
  assert.equal(order.status, 201)
  const { id: orderId } = await order.json() as { id: number }
  const forwarded = await listen.until(new RegExp(`order\\.created (evt_[0-9a-f]{32}) \\{"id":${orderId},`), 'the receiver did not print the order')
  await listen.until(/order\.created\s+evt_[0-9a-f]{32}\s+-> 204/, 'listen did not show the receiver\'s answer')
  listen.child.stdin.write('\n')
  // The receiver prints `TYPE ID DATA` once per event: the order's, then trigger's example.
  await pollUntil(async () => (listen.out().match(/^order\.created \S+ \{/gm)?.length === 2) || undefined, {
    timeoutMs: 20_000,
    intervalMs: 50,
    message: `trigger's example did not reach the receiver:\n${listen.out()}`
  })
  assert.doesNotMatch(listen.out(), /\berror\b/i)
  assert.ok(forwarded.length > 0)
  process.kill(-listen.child.pid!, 'SIGTERM')

  // A webhook endpoint: subscribed with curl, the receiver started with its secret; an order's
  // event arrives; then each curl line of the endpoint's operations runs and answers.
  await pollUntil(async () => {
    try { await fetch(`http://127.0.0.1:${receiverPort}/`); return undefined } catch { return true }
  }, { timeoutMs: 5000, message: 'the first receiver did not stop' })
  const endpointScript = [
    local(block(section, 'sh', 'HOOK_JSON=')),
    'read -r go',
    local(block(section, 'sh', '/rotate_secret')),
    'wait'
  ].join('\n')
  const endpoint = shell(t, endpointScript, receiverDir, env)
  await endpoint.until(/receiving on http:\/\/127\.0\.0\.1:\d+\/hooks/, 'the receiver did not start with the endpoint\'s secret')
  const second = await fetch(`${server.url}/v1/store/orders`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ petId: petId('Nemo'), quantity: 1 })
  })
  assert.equal(second.status, 201)
  const { id: secondId } = await second.json() as { id: number }
  await endpoint.until(new RegExp(`order\\.created evt_[0-9a-f]{32} \\{"id":${secondId},`), 'the endpoint\'s delivery did not reach the receiver')
  endpoint.child.stdin.write('\n')
  // The curl lines: the two tests, the deliveries, a replay and a new secret, each answered.
  await endpoint.until(/"secret":"whsec_[^"]+"/, 'rotate_secret did not answer')
  const hooks = await (await fetch(`${server.url}/v1/webhooks`, { headers: { 'x-api-key': key } })).json() as Array<{
    id: string
    url: string
  }>
  const hook = hooks.find((h) => h.url === `http://127.0.0.1:${receiverPort}/hooks`)
  assert.ok(hook !== undefined, 'the endpoint subscribed with curl')
  const attempts = await fetch(`${server.url}/v1/webhooks/${hook.id}/deliveries`, { headers: { 'x-api-key': key } })
  const deliveries = await attempts.json() as Array<{ outcome: string }>
  // The order, the two tests and the replay were attempted.
  assert.ok(deliveries.length >= 4, JSON.stringify(deliveries))
  assert.doesNotMatch(endpoint.out(), /"code":"/, 'no curl line was refused')
})
