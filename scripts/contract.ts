// npm run contract: contract tests generated from the document, run against a real server.
//
// Starts `petstore serve --sample-data` on a fresh SQLite file and a free port, writes the
// document with that server as its absolute `servers` URL (`petstore openapi --server`), and
// runs Portman with its default settings on it (status 2xx, content type, JSON body, schema,
// documented headers for every operation), with Newman, authenticated by the sample admin key.
// Portman and Newman are installed at pinned versions into .tmp/contract-tools (git-ignored) on
// the first run: they are big and only this script needs them, so they are not devDependencies.
// (`npx -p tslib` does not help: Portman needs tslib without declaring it, and npx leaves it out.)
// Exit code: Portman's, non-zero when a check fails.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openApiDocument } from '../src/cli/openapi.ts'

const TOOLS = ['@apideck/portman@1.33.0', 'newman@6.2.2', 'tslib@2.9.1']
const TOOLS_DIR = new URL('../.tmp/contract-tools/', import.meta.url).pathname
const PORTMAN = join(TOOLS_DIR, 'node_modules', '.bin', 'portman')
const CLI = new URL('../src/cli/main.ts', import.meta.url).pathname

if (!existsSync(PORTMAN)) {
  console.log(`contract: installing ${TOOLS.join(', ')} into ${TOOLS_DIR}`)
  const installed = await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', TOOLS_DIR, ...TOOLS])
  if (installed !== 0) throw new Error('could not install Portman and Newman')
}

const dir = await mkdtemp(join(tmpdir(), 'petstore-contract-'))
// In-process rate limits and a fresh SQLite file, whatever the caller's environment says.
const { REDIS_URL: _redis, ...env } = process.env
// The sample keys go to a file (never stdout, the log stream).
const keysFile = join(dir, 'keys.txt')
const server = spawn(process.execPath, [CLI, 'serve', '--sample-data', '--keys-file', keysFile, '--host', '127.0.0.1', '--port', '0'], {
  env: { ...env, DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, LOG_LEVEL: 'silent' },
  stdio: ['ignore', 'inherit', 'pipe']
})

try {
  const { url, adminKey } = await started(server)
  const documentFile = join(dir, 'openapi.json')
  await writeFile(documentFile, await openApiDocument({ server: url }))
  console.log(`contract: Portman on ${documentFile} against ${url}/v1`)
  const code = await run(PORTMAN, ['--local', documentFile, '--output', join(dir, 'collection.json'), '--runNewman',
    '--newmanRunOptions', JSON.stringify({ envVar: [{ key: 'apiKey', value: adminKey }] })], dir) // Portman writes tmp/ files where it runs
  process.exitCode = code
} finally {
  server.kill('SIGTERM')
  await new Promise((resolve) => server.once('exit', resolve))
  await rm(dir, { recursive: true, force: true })
}

/**
 * Waits for the server's banner (the URL it listens on), then reads the sample admin key from its
 * file (written before the banner).
 */
function started (child: ReturnType<typeof spawn>): Promise<{ url: string; adminKey: string }> {
  return new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => { reject(new Error(`the server did not start in 30 s:\n${output}`)) }, 30_000)
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`the server exited (${String(code)}):\n${output}`)) })
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
      const url = /Petstore API on (http:\/\/\S+)\/v1/.exec(output)?.[1]
      if (url === undefined) return
      clearTimeout(timer)
      readFile(keysFile, 'utf8').then((keys) => {
        const adminKey = /^\s*admin\s+(\S+)$/m.exec(keys)?.[1]
        if (adminKey === undefined) reject(new Error(`no admin key in ${keysFile}`))
        else resolve({ url, adminKey })
      }, reject)
    })
  })
}

function run (command: string, args: string[], cwd?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', ...(cwd !== undefined && { cwd }) })
    child.once('error', reject)
    child.once('exit', (code) => { resolve(code ?? 1) })
  })
}
