// The key search `q` (GET /v1/admin/keys) ignores case beyond ASCII the same way on both engines
// (issue 30 item 7): the name is folded by the app into api_keys.search_name when a key is
// created, renamed or rotated, and the query is folded the same way, so neither SQLite's ASCII
// lower() nor PostgreSQL's LC_CTYPE decides what matches. Faults caught: the column not written
// on create, rename or rotation (the key is not found, or found by its old name); the query not
// folded, or folded differently (final sigma, dotted İ); `%` or `_` taken as wildcards; the
// migration that added the column leaving the keys already there blank (found by nothing).
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { POSTGRES_MIGRATIONS } from '../../src/storage/postgres/migrations.ts'
import { openSqlite } from '../../src/storage/sqlite/database.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { SQLITE_MIGRATIONS } from '../../src/storage/sqlite/migrations.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { requireService, skippedTestEnd } from '../helpers/services.ts'
import { createTestSchema, TEST_DATABASE_URL, TEST_ENGINE, testPostgresReason } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'

const search = async (h: TestApp, q: string): Promise<string[]> => {
  const res = await h.call({ method: 'GET', url: `/v1/admin/keys?limit=100&q=${encodeURIComponent(q)}`, role: 'admin' })
  assert.equal(res.statusCode, 200, res.body)
  return (res.json() as { name: string | null }[]).map((k) => k.name ?? '(none)').sort()
}

const create = async (h: TestApp, name: string): Promise<number> => {
  const res = await h.call({ method: 'POST', url: '/v1/admin/keys', role: 'admin', payload: { name, role: 'customer', plan: 'free' } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().id
}

test('GET /v1/admin/keys?q= folds case beyond ASCII (É, ß, İ, final sigma) and takes % and _ literally', async (t) => {
  const h = await buildTestApp(t)
  for (const name of ['Élan Vital', 'ÉLAN', 'Straße', 'STRASSE', 'İzmir', 'ΚΟΣΜΟΣ', 'Οδός', '100% pure', '1000 pure', 'a_b', 'axb', 'plain']) await create(h, name)

  assert.deepEqual(await search(h, 'élan'), ['Élan Vital', 'ÉLAN'].sort())
  assert.deepEqual(await search(h, 'ÉLAN'), ['Élan Vital', 'ÉLAN'].sort())
  // ß is not ss (toLowerCase keeps it), on both engines.
  assert.deepEqual(await search(h, 'straße'), ['Straße'])
  assert.deepEqual(await search(h, 'STRASSE'), ['STRASSE'])
  assert.deepEqual(await search(h, 'izmir'), ['İzmir'])
  assert.deepEqual(await search(h, 'İZMİR'), ['İzmir'])
  // toLowerCase gives `ΚΟΣ` a final ς (`κος`), which is not in `κοσμος`: the fold makes every sigma σ.
  assert.deepEqual(await search(h, 'ΚΟΣ'), ['ΚΟΣΜΟΣ'])
  assert.deepEqual(await search(h, 'κοσμοσ'), ['ΚΟΣΜΟΣ'])
  assert.deepEqual(await search(h, 'κοσμος'), ['ΚΟΣΜΟΣ'])
  assert.deepEqual(await search(h, 'ΟΔΌΣ'), ['Οδός'])
  // LIKE's wildcards are literal.
  assert.deepEqual(await search(h, '0%'), ['100% pure'])
  assert.deepEqual(await search(h, '%'), ['100% pure'])
  assert.deepEqual(await search(h, 'a_b'), ['a_b'])
  assert.deepEqual(await search(h, '_'), ['a_b'])
  assert.deepEqual(await search(h, 'PLAIN'), ['plain'])
})

test('GET /v1/admin/keys?q= finds a renamed key by its new name only, and a rotated key\'s successor too', async (t) => {
  const h = await buildTestApp(t)
  const id = await create(h, 'Old Name')
  const renamed = await h.call({ method: 'PATCH', url: `/v1/admin/keys/${id}`, role: 'admin', payload: { name: 'ΣΟΦΙΑ Ölçer' } })
  assert.equal(renamed.statusCode, 200, renamed.body)
  assert.deepEqual(await search(h, 'old'), [])
  assert.deepEqual(await search(h, 'σοφια öl'), ['ΣΟΦΙΑ Ölçer'])

  const rotated = await h.call({ method: 'POST', url: `/v1/admin/keys/${id}/rotate`, role: 'admin', payload: {} })
  assert.equal(rotated.statusCode, 201, rotated.body)
  const found = (await h.call({ method: 'GET', url: `/v1/admin/keys?limit=100&q=${encodeURIComponent('ÖLÇER')}`, role: 'admin' })).json() as { id: number }[]
  assert.deepEqual(found.map((k) => k.id), [id, rotated.json().id])
})

/** Keys stored before the migration that added search_name, then the stores opened (which migrates). */
async function storesMigratedOver (t: TestContext, names: (string | null)[]): Promise<Stores> {
  const row = (name: string | null, i: number): unknown[] => [name, 'customer', 'free', `hash-${i}`, `ps_old${i}`, 0]
  const insert = 'INSERT INTO api_keys (name, role, plan, key_hash, key_prefix, created_at)'
  if (TEST_ENGINE === 'sqlite') {
    const before = SQLITE_MIGRATIONS.findIndex((m) => m.includes('ADD COLUMN search_name'))
    assert.ok(before > 0)
    const path = join(tempDir(t), 'old.db')
    const db = openSqlite(path)
    for (let v = 0; v < before; v++) db.exec(SQLITE_MIGRATIONS[v]!)
    db.exec(`PRAGMA user_version = ${before}`)
    names.forEach((name, i) => db.prepare(`${insert} VALUES (?, ?, ?, ?, ?, ?)`).run(...row(name, i) as (string | number | null)[]))
    db.close()
    const stores = createSqliteStores(path)
    t.after(() => stores.close())
    return stores
  }
  if (!requireService(t, await testPostgresReason())) throw skippedTestEnd('PostgreSQL')
  const before = POSTGRES_MIGRATIONS.findIndex((m) => m.includes('ADD COLUMN search_name'))
  assert.ok(before > 0)
  const schema = await createTestSchema(t)
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` })
  await client.connect()
  try {
    await client.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)')
    for (let v = 0; v < before; v++) {
      await client.query(POSTGRES_MIGRATIONS[v]!)
      await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [v + 1])
    }
    for (const [i, name] of names.entries()) await client.query(`${insert} VALUES ($1, $2, $3, $4, $5, $6)`, row(name, i))
  } finally {
    await client.end()
  }
  const stores = await createPostgresStores(TEST_DATABASE_URL, { schema, poolMax: 2 })
  t.after(() => stores.close())
  return stores
}

test('the migration that adds search_name fills it for the keys already stored, with the app\'s fold', async (t) => {
  const stores = await storesMigratedOver(t, ['Élan', 'İzmir', 'ΚΟΣΜΟΣ', 'Straße', null])
  const h = await buildTestApp(t, { stores })
  assert.deepEqual(await search(h, 'élan'), ['Élan'])
  assert.deepEqual(await search(h, 'izmir'), ['İzmir'])
  assert.deepEqual(await search(h, 'ΚΟΣ'), ['ΚΟΣΜΟΣ'])
  assert.deepEqual(await search(h, 'STRAßE'), ['Straße'])
  // The unnamed key is found by its prefix, never by text.
  assert.deepEqual(await search(h, 'ps_old4'), ['(none)'])
})
