// The quick starts of the main README and of this package's README work as written: their first
// TypeScript block runs in a child Node (type stripping, from the repository root, where the
// workspace makes `petstore-client` importable, from its sources through the `petstore-source`
// export condition, so no build is needed) against the real server. Only the port changes.
// test/package.test.ts runs the built package.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { seedPets, serveForClient } from './helpers.ts'

const ROOT = new URL('../../../', import.meta.url)

async function quickStart (readme: string): Promise<string> {
  const text = await readFile(new URL(readme, ROOT), 'utf8')
  const block = /```ts\n([\s\S]*?)```/.exec(text)?.[1]
  assert.ok(block !== undefined && block.includes("from 'petstore-client'"), `${readme} has a TypeScript quick start`)
  return block
}

for (const readme of ['README.md', 'clients/typescript/README.md']) {
  test(`the quick start of ${readme} lists the pets as written, in three lines`, async (t) => {
    const server = await serveForClient(t)
    const pets = await seedPets(server, 2)
    const source = await quickStart(readme)
    assert.equal(source.trim().split('\n').length, 3)
    const run = promisify(execFile)(process.execPath, ['--conditions=petstore-source', '--input-type=module-typescript', '--eval', source.replace('http://127.0.0.1:3000/v1', server.baseUrl)], {
      cwd: ROOT, env: { ...process.env, PETSTORE_API_KEY: server.keys.customer }
    })
    const { stdout } = await run
    for (const pet of pets) assert.ok(stdout.includes(pet.name), stdout)
  })
}
