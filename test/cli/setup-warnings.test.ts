// A newcomer's first commands print no EBADENGINE (issue 35, section 2). npm judges every
// package's `engines` against the Node that runs npm: the machine's (20 on these machines), not
// the pinned Node 24 that runs the project, so `npm ci` printed 587 lines of warnings and
// the first `npx petstore` ten more (npx installs the project into its cache, as a dependency,
// and judged its `engines`, Node 24). `npm run setup` installs with npm on the pinned Node; the
// project's `engines` says what the machine's Node must be: it only runs npm, and the project
// brings its own Node 24 (the `node` dependency). On a machine whose Node is 24 already these
// pass either way.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { tempDir } from '../helpers/temp.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string>; dependencies: Record<string, string> }

/** PATH without the project's node_modules: npm runs on the machine's own Node, as a newcomer's does. */
const MACHINE_ENV = { ...process.env, PATH: (process.env.PATH ?? '').split(':').filter((dir) => !dir.includes('/node_modules/')).join(':') }
const machineNode = spawnSync('node', ['--version'], { env: MACHINE_ENV, encoding: 'utf8' })
const NO_NPM = spawnSync('npm', ['--version'], { env: MACHINE_ENV, encoding: 'utf8' }).status === 0 ? null : 'no npm on the machine\'s PATH'

function machineNpm (t: TestContext, args: string[], cwd: string): string {
  const result = spawnSync('npm', args, { cwd, env: MACHINE_ENV, encoding: 'utf8', timeout: 240_000 })
  t.diagnostic(`machine node ${machineNode.stdout.trim()}: npm ${args.join(' ')} exited ${result.status}`)
  return result.stdout + result.stderr
}

const badEngineLines = (output: string): string[] => output.split('\n').filter((line) => line.includes('EBADENGINE'))

test('npm run setup on a fresh copy of the manifests warns of no engine (a dry run of its npm ci)', { skip: NO_NPM ?? false, timeout: 300_000 }, (t) => {
  // Catches: npm ci judged by the machine's Node (Babel 8, Stryker, Scalar, the project itself).
  const dir = tempDir(t, 'petstore-setup-')
  mkdirSync(join(dir, 'clients', 'typescript'), { recursive: true })
  for (const file of ['package.json', 'package-lock.json', join('clients', 'typescript', 'package.json')]) copyFileSync(join(ROOT, file), join(dir, file))
  const output = machineNpm(t, ['run', 'setup', '--', '--dry-run'], dir)
  assert.deepEqual(badEngineLines(output), [])
  assert.match(output, /^add pino-pretty 13\.2\.0$/m, `the dry run went through the whole tree:\n${output.slice(0, 2000)}`)
})

test('the first npx petstore (an empty npx cache) warns of no engine', { skip: NO_NPM ?? false, timeout: 120_000 }, (t) => {
  // Catches: engines that ask the machine's Node for what the pinned one provides (>=24).
  const cache = tempDir(t, 'petstore-npx-cache-')
  const output = machineNpm(t, ['exec', '--cache', cache, '--offline', '--', 'petstore'], ROOT)
  assert.deepEqual(badEngineLines(output), [])
  assert.match(output, /^usage: petstore <command>$/m)
})

test('setup runs npm on the very Node the project pins', () => {
  // Catches: the node dependency moved on and setup still installs with the old one.
  assert.match(PACKAGE.scripts.setup ?? '', new RegExp(`--package=node@${PACKAGE.dependencies.node!.replaceAll('.', '\\.')} -- npm ci `))
})
