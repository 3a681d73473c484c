// `petstore keys list` says which keys are of the old format (issue 32): a key made before
// checksums (its row holds a 12-character prefix) is marked, a checksummed one is not, in the
// table and in --json. In-process through main(), on a SQLite file the CLI opens itself. Faults
// caught: no mark (an operator cannot find the keys to rotate); every key marked; the columns
// shifted by the shorter prefix.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { test } from 'node:test'
import { hashKey } from '../../src/accounts/keys.rules.ts'
import { main } from '../../src/cli/main.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { memoryIo } from '../helpers/io.ts'
import { tempDir } from '../helpers/temp.ts'

async function run (
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; lines: string[]; errors: string[] }> {
  const io = memoryIo(env)
  const code = await main(['keys', ...args], io)
  return { code, lines: io.lines, errors: io.errors }
}

test('keys list marks the legacy key, and only it, in the table and in --json; the columns line up', async (t) => {
  const path = join(tempDir(t, 'petstore-cli-legacy-'), 'p.db')
  const env = { DATABASE_URL: `sqlite:${path}` }
  assert.equal((await run(env, 'create', '--role', 'staff', '--plan', 'pro')).code, 0)
  const stores = createSqliteStores(path)
  const legacy = 'psk_' + randomBytes(32).toString('base64url')
  await stores.keys.createKey({
    name: 'old partner', role: 'customer', plan: 'pro', perMinute: null, perDay: null,
    hash: hashKey(legacy), prefix: legacy.slice(0, 12), now: Date.now()
  })
  await stores.close()
  assert.equal((await run(env, 'create', '--role', 'customer', '--plan', 'free', '--name', 'new partner')).code, 0)

  const table = await run(env, 'list')
  assert.equal(table.code, 0, table.errors.join('\n'))
  assert.equal(table.lines.length, 3)
  assert.deepEqual(table.lines.map((l) => l.includes('legacy format (no checksum): rotate it')), [false, true, false])
  assert.match(table.lines[1]!, new RegExp(`^ {4}2  ${legacy.slice(0, 12)}… {4}  customer `), 'the shorter prefix is padded')
  const roleAt = table.lines.map((l) => l.search(/ (staff|customer) /))
  assert.deepEqual(roleAt, [roleAt[0], roleAt[0], roleAt[0]], 'the role column starts at the same place')

  const json = await run(env, 'list', '--json')
  assert.deepEqual(json.lines.map((l) => JSON.parse(l).format), ['checksummed', 'legacy', 'checksummed'])
})
