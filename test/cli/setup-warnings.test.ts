// A newcomer's first commands print no EBADENGINE (issue 35, section 2). npm judges every
// package's `engines` against the Node that runs npm: the machine's (20 on these machines), not
// the pinned Node 24 that runs the project, so `npm ci` printed 735 lines of warnings (147
// packages: Stryker and its Babel 8, the MCP Inspector, OpenTelemetry 3, Scalar, cookie 2,
// strip-json-comments 5.1) and the first `npx petstore` ten more (npx installs the project into its
// cache, as a dependency, and judged its `engines`, Node 24). The project's `engines` says which
// Nodes may run npm for it: those every package it installs accepts. The dev tools that need a
// newer Node are packages of their own under tools/, installed on first use with npm on the
// pinned Node (scripts/tools.ts). On a machine whose Node is 24 already the npm tests pass either way.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { tempDir } from '../helpers/temp.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
interface Manifest {
  scripts: Record<string, string>
  dependencies: Record<string, string>
  engines?: { node?: string }
}
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest

// npm's own range logic (npm-install-checks calls semver.satisfies with includePrerelease).
const semver = createRequire(import.meta.url)('semver') as {
  subset: (range: string, superset: string, options: { includePrerelease: boolean }) => boolean
  satisfies: (version: string, range: string, options: { includePrerelease: boolean }) => boolean
}
const RANGE_OPTIONS = { includePrerelease: true }

interface LockEntry { name?: string; version?: string; optional?: boolean; link?: boolean; engines?: { node?: string } }

/**
 * The packages npm ci judges for a lockfile: every entry but the optional ones (npm leaves out an
 * optional package whose engines fail, silently) and the links (their target is an entry too).
 * Dev packages count: npm ci installs them.
 */
function judgedPackages (lockFile: string): Array<{ name: string; node: string }> {
  const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as { packages: Record<string, LockEntry> }
  return Object.entries(lock.packages)
    .filter(([, entry]) => entry.optional !== true && entry.link !== true && entry.engines?.node !== undefined)
    .map(([path, entry]) => ({
      name: `${entry.name ?? (path.split('node_modules/').at(-1) || '(root)')}@${entry.version ?? ''}`,
      node: entry.engines!.node!
    }))
}

/** The packages whose engines do not admit every Node of `range`: npm warns of each on some of them. */
const refusing = (lockFile: string, range: string): string[] =>
  judgedPackages(lockFile)
    .filter((pkg) => !semver.subset(range, pkg.node, RANGE_OPTIONS))
    .map((pkg) => `${pkg.name} (node ${pkg.node})`)

test('every package npm ci installs accepts every Node the project\'s engines admit for running npm', () => {
  // Catches: a bump that brings a package needing a newer Node into the project's npm ci (as
  // OpenTelemetry 3, Stryker 10 and the MCP Inspector 0.22 did), or engines that admit a Node
  // some package refuses. npm makes this check with the one Node it runs on; this makes it for all.
  const range = PACKAGE.engines?.node
  assert.ok(range !== undefined, 'package.json says which Nodes may run npm for the project')
  assert.deepEqual(refusing(join(ROOT, 'package-lock.json'), range), [])
  assert.ok(semver.satisfies(PACKAGE.dependencies.node!, range, RANGE_OPTIONS), 'npm run scripts run npm on the pinned Node too')
})

test('each tool under tools/ accepts the pinned Node that installs and runs it, and so does every package it installs', () => {
  // Catches: a tool bumped to a version the pinned Node does not meet, or its engines left behind.
  const tools = readdirSync(join(ROOT, 'tools'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
  assert.deepEqual(tools.sort(), ['inspector', 'mutate', 'scalar'])
  for (const tool of tools) {
    const range = (JSON.parse(readFileSync(join(ROOT, 'tools', tool, 'package.json'), 'utf8')) as Manifest).engines?.node
    assert.ok(range !== undefined, `tools/${tool} says which Node it needs`)
    assert.ok(semver.satisfies(PACKAGE.dependencies.node!, range, RANGE_OPTIONS), `the pinned Node ${PACKAGE.dependencies.node} meets tools/${tool}'s ${range}`)
    assert.deepEqual(refusing(join(ROOT, 'tools', tool, 'package-lock.json'), range), [], `tools/${tool}`)
  }
})

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
