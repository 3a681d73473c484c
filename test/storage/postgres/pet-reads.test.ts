// Reads of pets on PostgreSQL (storage/postgres/pets.ts), counted by the statements the pool
// sends: GET /v1/pets?id= sends what GET /v1/pets/{petId} sends, the coalesced read by id (issue
// 34: the successor never costs more than what it replaces); the pages asked in one turn go by
// one statement per filter shape, each answered as if read alone; and each page statement keeps,
// as a prepared statement's generic plan, the index its filter calls for.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import type { PetFilter, PetRecord } from '../../../src/pets/pets.store.ts'
import { petPagesSql } from '../../../src/storage/postgres/pets.ts'
import { createPostgresStores, type PostgresStores } from '../../../src/storage/postgres/index.ts'
import { buildTestApp } from '../../helpers/app.ts'
import { requireService } from '../../helpers/services.ts'
import { createTestSchema, openPostgresTestStores, testPostgresReason, TEST_DATABASE_URL } from '../../helpers/stores.ts'

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0)

/**
 * The statements about pets that this process's pg clients send from now to the end of the test:
 * a named statement by its name, another by its text. Other statements (keys, usage, the
 * app's background work) are left out, so a timer firing meanwhile cannot change the count.
 */
function petStatements (t: TestContext): string[] {
  const sent: string[] = []
  const query = pg.Client.prototype.query
  pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    const statement = typeof config === 'string'
      ? config
      : (config as { name?: string }).name ?? (config as { text: string }).text
    if (/\bpets\b/.test(typeof config === 'string' ? config : (config as { text: string }).text)) sent.push(statement)
    return (query as (...args: unknown[]) => unknown).call(this, config, ...rest)
  } as typeof query
  t.after(() => { pg.Client.prototype.query = query })
  return sent
}

async function withPets (t: TestContext, count: number): Promise<{ stores: PostgresStores; pets: PetRecord[] }> {
  const stores = await openPostgresTestStores(t)
  const dogs = await stores.categories.createCategory({ name: 'Dogs' }, NOW)
  const cats = await stores.categories.createCategory({ name: 'Cats' }, NOW)
  const statuses = ['available', 'pending', 'sold'] as const
  const pets: PetRecord[] = []
  for (let i = 0; i < count; i++) {
    const input = { name: i % 4 === 0 ? `Émile ${i}` : `Pet ${i}`, categoryId: i % 2 === 0 ? dogs.id : cats.id, status: statuses[i % 3]! }
    pets.push((await stores.pets.createPet(input, null, NOW)).record)
  }
  return { stores, pets }
}

test('postgres pets: GET /v1/pets?id= sends PostgreSQL the statement GET /v1/pets/{petId} sends, the read by id', async (t) => {
  const { stores, pets } = await withPets(t, 3)
  const h = await buildTestApp(t, { stores })
  const id = pets[1]!.id
  const sent = petStatements(t)
  const sentBy = async (url: string) => {
    const from = sent.length
    const res = await h.call({ method: 'GET', url, role: 'customer' })
    assert.equal(res.statusCode, 200, res.body)
    return sent.slice(from)
  }
  // Fault caught: GET /v1/pets?id= running a statement of its own, a page query the by-id reads
  // of the same turn cannot share (it ran at a third of GET /v1/pets/{petId}'s rate).
  assert.deepEqual(await sentBy(`/v1/pets/${id}`), ['pets_by_ids'])
  assert.deepEqual(await sentBy(`/v1/pets?id=${id}`), ['pets_by_ids'])
})

test('postgres pets: pages of ids only and reads by id asked in one turn go by one statement, each answered as alone', async (t) => {
  const { stores, pets } = await withPets(t, 4)
  const [a, b, c, d] = pets as [PetRecord, PetRecord, PetRecord, PetRecord]
  const sent = petStatements(t)
  const [byId, page, afterCursor, limited, missing] = await Promise.all([
    stores.pets.getPet(a.id),
    stores.pets.listPets({ ids: [d.id, b.id, d.id + 100] }, { afterId: null, limit: 21 }),
    stores.pets.listPets({ ids: [a.id, c.id] }, { afterId: a.id, limit: 21 }),
    stores.pets.listPets({ ids: [d.id, c.id, b.id] }, { afterId: null, limit: 2 }),
    stores.pets.listPets({ ids: [d.id + 100] }, { afterId: null, limit: 21 })
  ])
  assert.deepEqual(byId, a)
  assert.deepEqual(page, [b, d])
  assert.deepEqual(afterCursor, [c])
  assert.deepEqual(limited, [b, c])
  assert.deepEqual(missing, [])
  assert.deepEqual(sent, ['pets_by_ids'])
})

test('postgres pets: the pages asked in one turn go by one statement per filter shape, each answered as if read alone', async (t) => {
  const { stores, pets } = await withPets(t, 40)
  const [dogs, cats] = [pets[0]!.categoryId, pets[1]!.categoryId]
  const asks: Array<[PetFilter, { afterId: number | null; limit: number }]> = [
    [{}, { afterId: null, limit: 6 }],
    [{}, { afterId: null, limit: 6 }], // the same page twice
    [{}, { afterId: pets[30]!.id, limit: 21 }],
    [{ status: 'sold' }, { afterId: null, limit: 4 }],
    [{ status: 'pending' }, { afterId: pets[10]!.id, limit: 4 }],
    [{ categoryId: cats }, { afterId: null, limit: 5 }],
    [{ categoryId: dogs + cats + 100 }, { afterId: null, limit: 5 }],
    [{ nameContains: 'émile' }, { afterId: null, limit: 21 }],
    [{ status: 'available', categoryId: dogs, nameContains: 'émile 1' }, { afterId: null, limit: 21 }],
    [{ ids: [pets[5]!.id, pets[3]!.id, pets[6]!.id], status: 'available' }, { afterId: null, limit: 21 }]
  ]
  const alone: PetRecord[][] = []
  for (const [filter, page] of asks) alone.push(await stores.pets.listPets(filter, page))
  assert.ok(alone.filter((p) => p.length > 1).length >= 6, 'most pages hold several pets')

  const sent = petStatements(t)
  const together = await Promise.all(asks.map(([filter, page]) => stores.pets.listPets(filter, page)))
  assert.deepEqual(together, alone)
  assert.notEqual(together[0], together[1], 'the same page twice: each caller has an array of its own')
  // Fault caught: a statement per page (50 requests in flight, 50 round trips), or a page asked
  // twice read twice.
  assert.deepEqual(sent.toSorted(), ['pets_pages_', 'pets_pages_c', 'pets_pages_is', 'pets_pages_n', 'pets_pages_s', 'pets_pages_scn'])
})

test('postgres pets: each page statement, as a generic plan, scans the index its filters call for, never the whole table or a sort', async (t) => {
  if (!requireService(t, await testPostgresReason())) return
  const schema = await createTestSchema(t)
  await (await createPostgresStores(TEST_DATABASE_URL, { schema })).close()
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` })
  await client.connect()
  t.after(() => client.end())
  // 5,000 pets, 20 of them sold: the plan a prepared statement keeps is made without the values,
  // and a rare status must not cost a walk of the whole primary key.
  await client.query("INSERT INTO categories (name) SELECT 'c' || g FROM generate_series(1, 10) g")
  await client.query(`INSERT INTO pets (name, search_name, category_id, status)
    SELECT 'Pet ' || g, 'pet ' || g, 1 + g % 10, CASE WHEN g % 250 = 0 THEN 'sold' ELSE 'available' END FROM generate_series(1, 5000) g`)
  await client.query('ANALYZE pets')
  await client.query('SET plan_cache_mode = force_generic_plan')
  const cases: Array<[PetFilter, RegExp]> = [
    [{}, /Index Scan using pets_pkey on pets\s+Index Cond: \(id > r\.after_id\)/],
    [{ status: 'sold' }, /Index Scan using pets_by_status on pets\s+Index Cond: \(\(ROW\(status, id\) > ROW\(r\.want_status, r\.after_id\)\) AND \(status <= r\.want_status\)\)/],
    [{ categoryId: 1 }, /Index Scan using pets_by_category on pets\s+Index Cond: \(\(ROW\(category_id, id\)/],
    [{ status: 'sold', categoryId: 1, nameContains: 'x' }, /Index Scan using pets_by_category on pets\s+Index Cond: \(\(ROW\(category_id, id\)/],
    [{ ids: [1, 2], status: 'sold' }, /Index Scan using pets_pkey on pets\s+Index Cond: \(\(id > r\.after_id\) AND \(id = ANY \(r\.want_ids\)\)\)/]
  ]
  for (const [i, [filter, scan]] of cases.entries()) {
    await client.query(`PREPARE page_${i} (jsonb) AS ${petPagesSql(filter)}`)
    const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE page_${i} ('[]')`)).rows.map((r) => r['QUERY PLAN']).join('\n')
    // Fault caught: `status = value` (or category_id) in a generic plan, a walk of the primary
    // key filtering every row.
    assert.match(plan, scan, plan)
    assert.doesNotMatch(plan, /Sort|Seq Scan|Bitmap/, plan)
  }
})
