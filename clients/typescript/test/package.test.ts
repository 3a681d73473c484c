// The package as a user gets it (issue 21 part 2): `npm pack` (whose prepack builds dist/), the
// tarball installed into a fresh project outside this repository (no workspace, no symlink), a
// small program type-checked against it under `strict`, then run on plain Node (JavaScript, no
// type stripping) against the real server. And `npm publish --dry-run` is clean.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { lstat, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { tempDir } from '../../../test/helpers/temp.ts'
import { serveForClient } from './helpers.ts'

const run = promisify(execFile)
const PACKAGE_DIR = fileURLToPath(new URL('../', import.meta.url))
const TSC = fileURLToPath(new URL('../../../node_modules/typescript/bin/tsc', import.meta.url))
const TYPE_ROOTS = fileURLToPath(new URL('../../../node_modules/@types', import.meta.url))

/** npm's own notices that say nothing about the package: this machine's config, and the login a real publish needs. */
const ENVIRONMENT_NOTICES = /Unknown (user|env) config|requires you to be logged in/

type PackResult = { filename: string; files: { path: string }[] }

// A Node program, as a user would write it against the installed package. The @ts-expect-error
// fails the type-check if the package's types were missing (everything `any`).
const PROGRAM = `import { createPetstoreClient, PetstoreError, type Pet, type PetstoreClientOptions } from 'petstore-client'

const [baseUrl = '', apiKey = '', categoryId = ''] = process.argv.slice(2)
const options: PetstoreClientOptions = { baseUrl, apiKey, maxWaitMs: 5_000 }
const petstore = createPetstoreClient(options)
const created: Pet = await petstore.pets.create({ name: 'Packed Rex', categoryId: Number(categoryId) })
const listed: number[] = (await petstore.pets.list({ limit: 100 })).map((pet) => pet.id)
const missing: string = await petstore.pets.get(999_999).then(() => 'found', (error: unknown) => error instanceof PetstoreError ? error.code : 'other')
// The feed followed from now: the category written once listen is ready is the one it hears.
const stop = new AbortController()
const heard: string[] = []
const { cursor } = await petstore.events.listen((event) => {
  heard.push(\`\${event.type} \${String((event.data as { name?: string }).name)}\`)
  stop.abort()
}, { type: 'category.*', pollMs: 50, signal: stop.signal, onReady: () => { void petstore.categories.create({ name: 'Heard' }) } })
console.log(JSON.stringify({ created, listed, missing, heard, cursor: typeof cursor }))

export function misuse (): void {
  // @ts-expect-error the package's types know that a pet's name is a string
  void petstore.pets.create({ name: 1, categoryId: 1 })
}
`

// The same package seen by a bundler's type-check: "bundler" resolution, DOM types, no Node types.
const BUNDLED = `import { createPetstoreClient, type RateLimitState } from 'petstore-client'

export async function names (baseUrl: string, apiKey: string): Promise<string[]> {
  const petstore = createPetstoreClient({ baseUrl, apiKey, onRateLimit: (state: RateLimitState) => { console.warn(state.remaining) } })
  return (await petstore.pets.list()).map((pet) => pet.name)
}
`

const STRICT = {
  strict: true,
  target: 'es2022',
  skipLibCheck: false,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true
}

test('the packed client installs in a fresh project, type-checks under strict (Node and bundler resolution) and runs on plain Node against the real server', { timeout: 180_000 }, async (t) => {
  // Catches: a package that ships TypeScript sources (Node refuses to strip types under
  // node_modules: ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING), exports without types or
  // JavaScript, declarations that import `.ts` files, or a build prepack does not run.
  const work = tempDir(t, 'petstore-client-package-')

  const { stdout: packed } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: PACKAGE_DIR })
  const [tarball] = JSON.parse(packed) as PackResult[]
  assert.ok(tarball !== undefined)
  const files = tarball.files.map((f) => f.path).sort()
  assert.deepEqual(files, ['LICENSE', 'README.md', ...['errors', 'gate', 'headers', 'index', 'listen', 'openapi', 'webhooks'].flatMap((m) => [`dist/${m}.d.ts`, `dist/${m}.js`]), 'package.json'], 'dist, README, LICENSE and package.json only: no sources, tests or scripts')

  const app = join(work, 'app')
  await mkdir(app)
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'petstore-client-user', version: '0.0.0', private: true, type: 'module' }))
  await run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', join(work, tarball.filename)], { cwd: app })
  const installed = join(app, 'node_modules', 'petstore-client')
  assert.ok((await lstat(installed)).isDirectory() && !(await lstat(installed)).isSymbolicLink(), 'a real copy, not a link into this repository')
  const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { dependencies?: unknown }
  assert.equal(manifest.dependencies, undefined, 'no runtime dependency')

  await writeFile(join(app, 'program.ts'), PROGRAM)
  await writeFile(join(app, 'bundled.ts'), BUNDLED)
  await writeFile(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { ...STRICT, module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022'], types: ['node'], typeRoots: [TYPE_ROOTS], outDir: 'out' },
    files: ['program.ts']
  }))
  await writeFile(join(app, 'tsconfig.bundler.json'), JSON.stringify({
    compilerOptions: { ...STRICT, module: 'esnext', moduleResolution: 'bundler', lib: ['es2022', 'dom'], types: [], noEmit: true },
    files: ['bundled.ts']
  }))
  for (const project of ['tsconfig.json', 'tsconfig.bundler.json']) {
    await run(process.execPath, [TSC, '-p', project], { cwd: app })
      .catch((error: { stdout?: string }) => assert.fail(`tsc -p ${project}:\n${error.stdout ?? String(error)}`))
  }

  const server = await serveForClient(t)
  const staff = server.client()
  const category = await staff.categories.create({ name: 'Packed' })
  // Plain Node: the compiled JavaScript, with type stripping off to be sure none is needed.
  const { stdout } = await run(
    process.execPath,
    ['--no-experimental-strip-types', join(app, 'out', 'program.js'), server.baseUrl, server.keys.staff, String(category.id)],
    { cwd: app }
  )
  const result = JSON.parse(stdout) as {
    created: { id: number; name: string; categoryId: number }
    listed: number[]
    missing: string
    heard: string[]
    cursor: string
  }

  assert.deepEqual(await staff.pets.get(result.created.id), result.created, 'the pet the program created is on the server')
  assert.deepEqual(
    { name: result.created.name, categoryId: result.created.categoryId },
    { name: 'Packed Rex', categoryId: category.id }
  )
  assert.ok(result.listed.includes(result.created.id), 'and the program listed it')
  assert.equal(result.missing, 'not_found', 'PetstoreError from the package is the class the package throws')
  assert.deepEqual({ heard: result.heard, cursor: result.cursor }, { heard: ['category.created Heard'], cursor: 'string' }, 'events.listen from the package')
})

test('npm publish --dry-run is clean: name, version, license (with its text), repository as the root declares it, files and README, with nothing to correct', { timeout: 120_000 }, async () => {
  // Catches: metadata npm would auto-correct or lack (a bare repository string, no files list),
  // a placeholder repository the root does not declare, a license without its text, and a
  // publish that would fail.
  const manifest = JSON.parse(await readFile(join(PACKAGE_DIR, 'package.json'), 'utf8')) as Record<string, unknown>
  const root = JSON.parse(await readFile(join(PACKAGE_DIR, '../../package.json'), 'utf8')) as Record<string, unknown>
  assert.deepEqual(
    {
      name: manifest.name,
      version: manifest.version,
      license: manifest.license,
      files: manifest.files,
      type: manifest.type,
      dependencies: manifest.dependencies
    },
    { name: 'petstore-client', version: '1.0.0', license: 'MIT', files: ['dist', 'README.md'], type: 'module', dependencies: undefined }
  )
  // The repository has no canonical URL (the root declares none): the client names none either.
  const rootRepository = root.repository as Record<string, unknown> | undefined
  assert.deepEqual(manifest.repository, rootRepository === undefined ? undefined : { ...rootRepository, directory: 'clients/typescript' })
  const license = await readFile(join(PACKAGE_DIR, 'LICENSE'), 'utf8')
  assert.equal(license, await readFile(join(PACKAGE_DIR, '../../LICENSE'), 'utf8'), 'the client ships the repository\'s license')
  assert.match(license, /^MIT License\n\nCopyright \(c\) 2026 Petstore API contributors\n/)
  const { stdout, stderr } = await run('npm', ['publish', '--dry-run', '--json'], { cwd: PACKAGE_DIR })
  const warnings = stderr.split('\n').filter((line) => /\bwarn\b/i.test(line) && !ENVIRONMENT_NOTICES.test(line))
  assert.deepEqual(warnings, [], 'npm publish --dry-run warned')
  const published = JSON.parse(stdout.slice(stdout.indexOf('{'))) as Record<string, {
    files: { path: string }[]
    name: string
  }>
  const summary = published['petstore-client'] ?? (published as unknown as { files: { path: string }[]; name: string })
  assert.equal(summary.name, 'petstore-client')
  const paths = summary.files.map((f) => f.path)
  assert.ok(paths.includes('README.md') && paths.includes('dist/index.js') && paths.includes('dist/index.d.ts'), paths.join(', '))
  assert.deepEqual(paths.filter((p) => /(^|\/)(test|src|scripts)\/|\.test\.|tsconfig/.test(p)), [], 'no tests, sources or build files')
})
