// Stdout is the log stream (README, docs/operating.md "Logs"): `npm start --silent | jq .` as the
// README says, so `npm start --silent` with stdout in a pipe prints JSON lines there and nothing
// else, from the first line to the stop; what is for people (the sample keys, the address, the
// stop notice) is on stderr.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { pollUntil } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

test('npm start --silent prints only JSON lines on stdout, from start to stop; the sample keys, the banner (every page it names served) and the stop notice on stderr', { timeout: 120_000 }, async (t) => {
  // Catches: the banner (or any line for people) on stdout between the JSON lines, where jq and
  // a log collector fail on it (issue 49 section 5).
  const dir = tempDir(t, 'petstore-stdout-')
  // Its own process group: npm, the shell it starts and the server all get the stop signal.
  const child = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    detached: true,
    env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: '' }
  })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { err += chunk })
  // 'close': every process of the group has closed the pipes, so stdout and stderr are complete.
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()))
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM')
    await closed
  }
  t.after(stop)

  const { value: url } = await pollUntil(async () => /^Petstore API on (\S+)\/v1 /m.exec(err)?.[1], {
    timeoutMs: 60_000,
    intervalMs: 50,
    message: `no banner on stderr:\n${err}\nstdout:\n${out}`
  })
  assert.equal((await fetch(`${url}/v1/pets?limit=1`)).status, 401)
  // Catches: a page the banner does not name, or names at an address that does not serve it
  // (the partner portal was missing from it).
  const [banner = ''] = err.split('\n').filter((line) => line.startsWith('Petstore API on '))
  assert.equal(banner, `Petstore API on ${url}/v1  (docs: ${url}/docs, operator console: ${url}/console, partner portal: ${url}/portal)`)
  for (const page of ['/docs', '/console', '/portal']) {
    const answer = await fetch(url + page)
    assert.equal(answer.status, 200, page)
    assert.match(answer.headers.get('content-type') ?? '', /^text\/html/, page)
  }
  await pollUntil(async () => out.includes('"url":"/v1/pets?limit=1"') ? true : undefined, {
    timeoutMs: 5000,
    intervalMs: 20,
    message: 'no request line on stdout'
  })
  // npm ends by the signal too: its exit code says nothing of the server's, the stop notice does.
  await stop()

  const lines = out.split('\n').filter((line) => line !== '')
  const notJson = lines.filter((line) => {
    try {
      return typeof JSON.parse(line) !== 'object'
    } catch {
      return true
    }
  })
  assert.deepEqual(notJson, [], 'every line of stdout is a JSON object')
  const messages = lines.map((line) => (JSON.parse(line) as { msg: string }).msg)
  for (const msg of ['listening', 'request completed']) assert.ok(messages.includes(msg), `the log has "${msg}"`)
  assert.match(err, /^Sample data loaded\. API keys \(shown once; store them now\):$/m)
  assert.match(err, /^ {2}customer psk_[0-9A-Za-z]{49}$/m)
  assert.match(err, /^SIGTERM: finishing requests in flight, then stopping$/m)
})
