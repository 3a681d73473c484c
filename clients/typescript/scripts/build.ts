// Builds the package: dist/ holds ESM JavaScript and .d.ts files compiled from src/ by tsc
// (tsconfig.build.json: relative `.ts` imports become `.js`). `npm pack` and `npm publish` run
// it (prepack), so a tarball always ships a dist/ made from the sources it was packed with;
// test/package.test.ts installs such a tarball in a fresh project and runs it.
import { execFileSync } from 'node:child_process'
import { readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const PACKAGE = new URL('../', import.meta.url)

export async function build (): Promise<void> {
  // A file whose source was deleted must not linger in the tarball.
  await rm(new URL('dist/', PACKAGE), { recursive: true, force: true })
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  execFileSync(process.execPath, [tsc, '-p', fileURLToPath(new URL('tsconfig.build.json', PACKAGE))], { stdio: 'inherit' })
  // tsc rewrites `./x.ts` to `./x.js` in the JavaScript but keeps `.ts` in declarations, which
  // TypeScript before 5.0 (and some tools) cannot resolve in a package: `.js`, like the code.
  const dist = new URL('dist/', PACKAGE)
  for (const name of await readdir(dist)) {
    if (!name.endsWith('.d.ts')) continue
    const file = new URL(name, dist)
    const text = await readFile(file, 'utf8')
    await writeFile(file, text.replace(/(['"])(\.{1,2}\/[^'"\n]*?)\.ts\1/g, '$1$2.js$1'))
  }
}

if (import.meta.main) await build()
