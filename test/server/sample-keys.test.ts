// `serve --sample-data` shows its three keys once, never on stdout, which is the log stream a
// platform collects (issue 19 item 7): on stderr, or in the file named by --keys-file, mode 0600.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { tempDir } from '../helpers/temp.ts'

const CLI = new URL('../../src/cli/main.ts', import.meta.url).pathname

test('serve --sample-data --keys-file writes the three keys to a file only its owner can read, and neither stdout (the log, at info) nor stderr carries one', { timeout: 30_000 }, async (t) => {
  // Fault caught: the keys were printed on stdout, among the log lines.
  const dir = tempDir(t, 'petstore-keys-')
  const file = join(dir, 'keys.txt')
  // A file left from before, readable by all: narrowed before the keys go in.
  await writeFile(file, 'old\n', { mode: 0o644 })
  const child = spawn(process.execPath, [CLI, 'serve', '--sample-data', '--keys-file', file, '--port', '0'], { env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, LOG_LEVEL: 'info' } })
  t.after(() => { child.kill('SIGKILL') })
  let out = ''
  let err = ''
  child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /Petstore API on (\S+)\/v1/.exec(out)
      if (match !== null) resolve(match[1]!)
    })
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}${err}`)))
  })
  // The request below is logged at info: the log stream is live.
  const keys = Object.fromEntries([...(await readFile(file, 'utf8')).matchAll(/^\s+(customer|staff|admin)\s+(psk_\S+)$/gm)].map((m) => [m[1]!, m[2]!]))
  assert.deepEqual(Object.keys(keys), ['customer', 'staff', 'admin'])
  assert.equal((await stat(file)).mode & 0o777, 0o600)
  const res = await fetch(`${url}/v1/admin/keys`, { headers: { 'x-api-key': keys.admin! } })
  assert.equal(res.status, 200)
  await res.arrayBuffer()
  const exit = new Promise<number | null>((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  assert.equal(await exit, 0)
  assert.match(out, /"msg":"request completed"/)
  assert.match(err, new RegExp(`API keys \\(shown once\\) written to ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
  assert.doesNotMatch(out + err, /psk_/)
})
