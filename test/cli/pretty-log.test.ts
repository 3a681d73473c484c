// What a person sees of `petstore serve` (issue 35, section 2): at a terminal (a pseudo-terminal
// made by util-linux `script`) readable lines, one per request with its time, level, method,
// path, status, milliseconds and key id; in a pipe JSON lines; LOG_FORMAT decides when set.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { stripVTControlCharacters } from 'node:util'
import { test, type TestContext } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.ts'
import { cleanupStack, pollUntil, startServerProcess } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'

const CLI = new URL('../../src/cli/main.ts', import.meta.url).pathname
const NO_SCRIPT = spawnSync('script', ['--version'], { encoding: 'utf8' }).error === undefined ? null : 'util-linux `script` is not installed'

/** Single quotes for sh. */
const quote = (text: string): string => `'${text.replaceAll("'", "'\\''")}'`

/** What the terminal shows, without colours and carriage returns. */
const screen = (raw: string): string => stripVTControlCharacters(raw).replaceAll('\r', '')

interface AtTerminal { url: string; customerKey: string; screen (): string }

/** `petstore serve --sample-data` on a pseudo-terminal; stopped (its process group) when the test ends. */
async function serveAtTerminal (t: TestContext, env: Record<string, string> = {}): Promise<AtTerminal> {
  const dir = tempDir(t, 'petstore-pretty-log-')
  const keysFile = join(dir, 'keys.txt')
  const command = [process.execPath, CLI, 'serve', '--port', '0', '--sample-data', '--keys-file', keysFile].map(quote).join(' ')
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, LOG_LEVEL: 'info', LOG_FORMAT: '', ...env }
  })
  let raw = ''
  child.stdout.on('data', (chunk: Buffer) => { raw += chunk.toString() })
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()))
  t.after(async () => {
    if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGTERM')
    await closed
  })
  const { value: url } = await pollUntil(
    async () => /Petstore API on (\S+)\/v1/.exec(screen(raw))?.[1],
    { timeoutMs: 45_000, intervalMs: 50, message: 'the server did not start at the terminal' }
  )
  const customerKey = /customer\s+(psk_\S+)/.exec(readFileSync(keysFile, 'utf8'))?.[1]
  assert.ok(customerKey !== undefined)
  return { url, customerKey, screen: () => screen(raw) }
}

const linesOf = (text: string, pattern: RegExp): string[] => text.split('\n').filter((line) => pattern.test(line))

test('at a terminal, serve prints readable lines: time, level, method, path, status, ms and key id of each request, the error code of a refusal; no JSON', { skip: NO_SCRIPT ?? false, timeout: 90_000 }, async (t) => {
  // Catches: JSON at a terminal (the TTY not detected), a request line that lost a field, and a
  // formatter that dies on a line (a numeric key id stopped pino-pretty's stream: no more lines).
  const server = await serveAtTerminal(t)
  assert.equal((await fetch(`${server.url}/v1/pets?limit=1`, { headers: { 'x-api-key': server.customerKey } })).status, 200)
  assert.equal((await fetch(`${server.url}/v1/pets?limit=2`)).status, 401)
  const { value: lines } = await pollUntil(async () => {
    const found = linesOf(server.screen(), /GET \/v1\/pets\?limit=/)
    return found.length === 2 ? found : undefined
  }, { timeoutMs: 5000, intervalMs: 20, message: 'the request lines did not appear' })
  assert.match(lines[0]!, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/v1\/pets\?limit=1 200 \d+\.\d ms key \d+$/)
  assert.match(lines[1]!, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/v1\/pets\?limit=2 401 \d+\.\d ms unauthenticated$/)
  assert.deepEqual(linesOf(server.screen(), /^\s*\{/), [], 'no JSON line')
  assert.match(server.screen(), /INFO: listening\n {4}url: "http:\/\/127\.0\.0\.1:\d+"\n/, 'other lines keep their fields')
})

test('at a terminal with LOG_FORMAT=json, serve prints JSON lines', { skip: NO_SCRIPT ?? false, timeout: 90_000 }, async (t) => {
  // Catches: LOG_FORMAT ignored when standard output is a terminal.
  const server = await serveAtTerminal(t, { LOG_FORMAT: 'json' })
  assert.equal((await fetch(`${server.url}/v1/pets?limit=1`, { headers: { 'x-api-key': server.customerKey } })).status, 200)
  const { value: line } = await pollUntil(
    async () => linesOf(server.screen(), /"url":"\/v1\/pets\?limit=1"/)[0],
    { timeoutMs: 5000, intervalMs: 20, message: 'no JSON request line' }
  )
  const parsed = JSON.parse(line) as Record<string, unknown>
  assert.deepEqual({
    level: parsed.level,
    method: parsed.method,
    statusCode: parsed.statusCode,
    msg: parsed.msg,
    keyId: typeof parsed.keyId
  }, { level: 30, method: 'GET', statusCode: 200, msg: 'request completed', keyId: 'number' })
})

test('in a pipe, serve prints JSON lines (LOG_FORMAT unset)', { timeout: 90_000 }, async (t) => {
  // Catches: readable lines sent to a log collector.
  const dir = tempDir(t, 'petstore-pretty-log-')
  const server = await startServerProcess(cleanupStack(t), { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, LOG_FORMAT: '' })
  assert.equal((await fetch(`${server.url}/v1/pets?limit=2`)).status, 401)
  const line = await server.logLine((l) => l.url === '/v1/pets?limit=2')
  assert.deepEqual(
    { level: line.level, method: line.method, statusCode: line.statusCode, code: line.code },
    { level: 30, method: 'GET', statusCode: 401, code: 'unauthenticated' }
  )
  // The banner goes to stderr (cli/serve.ts): stdout holds JSON lines and nothing else.
  const printed = server.output().split('\n').filter((l) => l !== '')
  assert.deepEqual(printed.filter((l) => !l.startsWith('{')), [], 'every line is JSON')
})

test('LOG_FORMAT accepts json, pretty and auto (the default); anything else is a configuration error', () => {
  assert.deepEqual(['json', 'pretty', 'auto', ' pretty '].map((f) => loadConfig({ LOG_FORMAT: f }).logFormat), ['json', 'pretty', 'auto', 'pretty'])
  assert.equal(loadConfig({}).logFormat, 'auto')
  assert.throws(
    () => loadConfig({ LOG_FORMAT: 'yaml' }),
    (error: unknown) => error instanceof ConfigError
      && error.message.includes('LOG_FORMAT must be one of json, pretty, auto, got "yaml"')
  )
})
