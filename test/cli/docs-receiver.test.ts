// The receiver of docs/api.md "Receive events" runs as written: its JavaScript block, saved as
// receiver.mjs in a fresh directory where `standardwebhooks` is installed (here, linked from this
// repository's node_modules), run by Node with the endpoint's secret, takes the server's real
// deliveries: it verifies them, prints each event once and answers 204; a forged one gets 400.
// Only the port changes.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { pollUntil } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'
import { closedPort } from '../webhooks/receiver.ts'
import { subscribe, webhookApp } from '../webhooks/helpers.ts'

const ROOT = new URL('../../', import.meta.url)

/** The first `js` block of the docs/api.md section "Receive events". */
async function receiverBlock (): Promise<string> {
  const page = await readFile(new URL('docs/api.md', ROOT), 'utf8')
  const section = page.slice(page.indexOf('\n## Receive events\n'))
  const block = /```js\n([\s\S]*?)```/.exec(section)?.[1]
  assert.ok(block !== undefined && block.includes("from 'standardwebhooks'"), 'the section has the receiver block')
  return block
}

test('the receiver of docs/api.md verifies a real delivery with standardwebhooks, handles an event delivered twice once, and refuses a forged one', { timeout: 60_000 }, async (t) => {
  // Catches: a block that does not run (a package name nobody published, a syntax error), a
  // receiver that accepts what it cannot verify, or handles a replayed event twice.
  const dir = tempDir(t, 'petstore-docs-receiver-')
  const port = await closedPort()
  const source = (await receiverBlock()).replaceAll('4242', String(port))
  assert.notEqual(source, await receiverBlock(), 'the block listens on the documented port')
  await writeFile(join(dir, 'receiver.mjs'), source)
  await symlink(fileURLToPath(new URL('node_modules', ROOT)), join(dir, 'node_modules'))

  const app = await webhookApp(t)
  const endpoint = await subscribe(app, `http://127.0.0.1:${port}/hooks`, ['category.*'], app.keys.staff)
  const child = spawn(process.execPath, ['receiver.mjs'], { cwd: dir, env: { ...process.env, WEBHOOK_SECRET: endpoint.secret } })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { err += chunk })
  const closed = new Promise((resolve) => child.on('close', resolve))
  t.after(async () => {
    child.kill('SIGTERM')
    await closed
  })
  await pollUntil(async () => out.includes(`receiving on http://127.0.0.1:${port}/hooks`) ? true : undefined, {
    timeoutMs: 10_000,
    message: `the receiver did not start: ${out}${err}`
  })

  const created = await app.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Birds' } })
  assert.equal(created.statusCode, 201, created.body)
  const attempts = async (): Promise<Array<{ eventId: string; outcome: string; status?: number }>> =>
    (await app.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}/deliveries`, role: 'staff' })).json()
  const { value: [first] } = await pollUntil(async () => {
    const list = await attempts()
    return list.some((a) => a.outcome === 'succeeded') ? list : undefined
  }, { timeoutMs: 5000, message: 'the first delivery did not succeed' })
  const eventId = first!.eventId
  // The same event again: a replay by id, as a lost answer would make the server send it.
  const replayed = await app.call({
    method: 'POST',
    url: `/v1/webhooks/${endpoint.id}/replay`,
    role: 'staff',
    payload: { eventIds: [eventId] }
  })
  assert.equal(replayed.statusCode, 202, replayed.body)
  const { value: done } = await pollUntil(async () => {
    const list = await attempts()
    return list.filter((a) => a.outcome === 'succeeded').length === 2 ? list : undefined
  }, { timeoutMs: 5000, message: 'the replay did not succeed' })
  assert.deepEqual(done.map((a) => ({ eventId: a.eventId, outcome: a.outcome, status: a.status })), [
    { eventId, outcome: 'succeeded', status: 204 },
    { eventId, outcome: 'succeeded', status: 204 }
  ])

  const forged = await fetch(`http://127.0.0.1:${port}/hooks`, {
    method: 'POST',
    headers: { 'webhook-id': eventId, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' },
    body: '{"id":"evt_x","type":"category.created","timestamp":"2026-11-29T00:00:00.000Z","data":{}}'
  })
  assert.equal(forged.status, 400)

  const lines = out.trim().split('\n').slice(1)
  assert.equal(lines.length, 1, `one line for the event delivered twice:\n${out}`)
  assert.match(lines[0]!, new RegExp(`^category\\.created ${eventId} \\{"id":\\d+,"name":"Birds"\\}$`))
  assert.equal(err, '')
})
