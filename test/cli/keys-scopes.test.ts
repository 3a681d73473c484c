// petstore keys create --scopes and keys list (docs/product.md 3.6): in-process through main(), on
// a SQLite file. The scopes reach the row (what a running server enforces), list shows them, and
// an unknown scope or one outside the role stores nothing. Faults caught: --scopes ignored or
// not split; a refused create that still stores a key; list not showing the restriction.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
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

test('keys create --scopes stores the scopes, keys list shows them; unknown or outside the role stores nothing', async (t) => {
  const path = join(tempDir(t, 'petstore-cli-scopes-'), 'p.db')
  const env = { DATABASE_URL: `sqlite:${path}` }
  const made = await run(env, 'create', '--role', 'customer', '--plan', 'pro', '--scopes', 'orders:read,catalog:read')
  assert.equal(made.code, 0, made.errors.join('\n'))
  assert.equal(made.lines[0], 'key 1 (customer, pro: 300/min, 10000/day, scopes catalog:read,orders:read)')
  const json = await run(env, 'create', '--role', 'staff', '--plan', 'pro', '--scopes', 'catalog:write', '--json')
  assert.deepEqual(JSON.parse(json.lines[0]!).scopes, ['catalog:write'])
  assert.equal((await run(env, 'create', '--role', 'admin', '--plan', 'pro')).code, 0)

  const unknown = await run(env, 'create', '--role', 'customer', '--plan', 'pro', '--scopes', 'pets:read')
  assert.equal(unknown.code, 2)
  assert.match(unknown.errors[0]!, /^--scopes must be one of catalog:read, catalog:write/)
  const outside = await run(env, 'create', '--role', 'customer', '--plan', 'pro', '--scopes', 'catalog:read,keys:admin')
  assert.equal(outside.code, 1)
  assert.match(outside.errors[0]!, /keys:admin scope is outside the customer role/)

  const list = await run(env, 'list')
  assert.equal(list.code, 0)
  assert.equal(list.lines.length, 3, list.lines.join('\n'))
  assert.match(list.lines[0]!, /^ {4}1 .* scopes catalog:read,orders:read$/)
  assert.match(list.lines[1]!, /^ {4}2 .* scopes catalog:write$/)
  assert.doesNotMatch(list.lines[2]!, /scopes/)
  const listJson = await run(env, 'list', '--json')
  assert.deepEqual(listJson.lines.map((l) => JSON.parse(l).scopes), [['catalog:read', 'orders:read'], ['catalog:write'], null])

  const stores = createSqliteStores(path)
  t.after(() => stores.close())
  assert.deepEqual((await stores.keys.getKey(1))!.scopes, ['catalog:read', 'orders:read'])
  assert.equal((await stores.keys.listKeys({ limit: 100, afterId: null })).length, 3, 'the refused creates stored nothing')
})
