// `serve --sample-data` shows its three keys once, never on stdout, which is the log stream a
// platform collects (issue 19 item 7): on stderr, or in the file named by --keys-file, mode 0600.
import assert from 'node:assert/strict'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { cleanupStack, startServerProcess } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'

test('serve --sample-data --keys-file writes the three keys to a file only its owner can read, and neither stdout (the log, at info) nor stderr carries one', { timeout: 30_000 }, async (t) => {
  // Fault caught: the keys were printed on stdout, among the log lines.
  const cleanup = cleanupStack(t)
  const dir = tempDir(t, 'petstore-keys-')
  const file = join(dir, 'keys.txt')
  // A file left from before, readable by all: narrowed before the keys go in.
  await writeFile(file, 'old\n', { mode: 0o644 })
  const server = await startServerProcess(cleanup, { DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, LOG_LEVEL: 'info' }, ['--sample-data', '--keys-file', file])
  const url = server.url
  // The request below is logged at info: the log stream is live.
  const keys = Object.fromEntries([...(await readFile(file, 'utf8')).matchAll(/^\s+(customer|staff|admin)\s+(psk_\S+)$/gm)].map((m) => [m[1]!, m[2]!]))
  assert.deepEqual(Object.keys(keys), ['customer', 'staff', 'admin'])
  assert.equal((await stat(file)).mode & 0o777, 0o600)
  const res = await fetch(`${url}/v1/admin/keys`, { headers: { 'x-api-key': keys.admin! } })
  assert.equal(res.status, 200)
  // The admin key is on pro, so the operator console (five requests a page) is not throttled at 60
  // a minute; customer and staff stay on free.
  const plans = Object.fromEntries(((await res.json()) as Array<{ name: string; plan: string }>)
    .map((k) => [k.name, k.plan]))
  assert.deepEqual(plans, { 'sample customer': 'free', 'sample staff': 'free', 'sample admin': 'pro' })
  assert.equal(await server.stop(), 0)
  const out = server.output()
  const err = server.errors()
  assert.match(out, /"msg":"request completed"/)
  assert.match(err, new RegExp(`API keys \\(shown once\\) written to ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
  assert.doesNotMatch(out + err, /psk_/)
})
