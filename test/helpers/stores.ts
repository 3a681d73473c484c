// The storage engine a test runs on: SQLite in memory by default; PostgreSQL (a fresh schema per
// test, dropped afterwards) when PETSTORE_TEST_ENGINE=postgres. A missing PostgreSQL follows the
// rule of services.ts.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import type { TestContext } from 'node:test'
import { createPostgresStores, type PostgresStores, type PostgresStoresOptions } from '../../src/storage/postgres/index.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { postgresUnavailableReason, requireService, skippedTestEnd, withPostgres } from './services.ts'

export const TEST_ENGINE = process.env.PETSTORE_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite'

/** The PostgreSQL the tests use: PETSTORE_TEST_DATABASE_URL, else the local server's `test` database. */
export const TEST_DATABASE_URL = process.env.PETSTORE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

export async function openTestStores (t: TestContext): Promise<Stores> {
  if (TEST_ENGINE === 'postgres') return openPostgresTestStores(t)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  return stores
}

let probed: Promise<string | null> | undefined

/** Why the test PostgreSQL cannot be used (one line, no password), or null when it answers; probed once per process. */
export function testPostgresReason (): Promise<string | null> {
  probed ??= postgresUnavailableReason(TEST_DATABASE_URL).then((reason) => reason === null ? null : `${reason}; start it or set PETSTORE_TEST_DATABASE_URL`)
  return probed
}

async function newSchema (): Promise<{ schema: string; drop (): Promise<void> }> {
  const schema = `petstore_test_${randomBytes(6).toString('hex')}`
  await withPostgres(TEST_DATABASE_URL, (c) => c.query(`CREATE SCHEMA ${schema}`))
  return { schema, drop: () => withPostgres(TEST_DATABASE_URL, (c) => dropSchema(c, schema)) }
}

/**
 * DROP SCHEMA … CASCADE locks the schema's tables one by one: a connection of the test's stores
 * still running a statement (a job's run, a pool closed after this hook) can deadlock with it
 * (40P01, seen in CI on the two-instance audit test). The server then aborts one side; the drop
 * is tried again, a little later, up to five times.
 */
async function dropSchema (c: { query (sql: string): Promise<unknown> }, schema: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      return
    } catch (error) {
      if ((error as { code?: string }).code !== '40P01' || attempt === 5) throw error
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt))
    }
  }
}

/**
 * A fresh, empty schema for one test (`petstore_test_<random>`), dropped with everything in it
 * (CASCADE) when the test ends, so tests never share data and can run side by side. Pass it to
 * createPostgresStores as `schema` (it becomes the connections' search_path).
 */
export async function createTestSchema (t: TestContext): Promise<string> {
  const { schema, drop } = await newSchema()
  t.after(drop)
  return schema
}

/** The PostgreSQL engine on a fresh schema (see createTestSchema), closed then dropped after the test. */
export async function openPostgresTestStores (
  t: TestContext,
  options: PostgresStoresOptions = {}
): Promise<PostgresStores> {
  return (await openPostgresTestSchema(t, options)).stores
}

/** openPostgresTestStores, with the schema's name (to read its tables behind the stores). */
export async function openPostgresTestSchema (
  t: TestContext,
  options: PostgresStoresOptions = {}
): Promise<{ stores: PostgresStores; schema: string }> {
  if (!requireService(t, await testPostgresReason())) throw skippedTestEnd('PostgreSQL')
  const { schema, drop } = await newSchema()
  let stores: PostgresStores | null = null
  t.after(async () => {
    await stores?.close()
    await drop()
  })
  stores = await createPostgresStores(TEST_DATABASE_URL, { poolMax: 4, ...options, schema })
  return { stores, schema }
}

/** Stores on one engine, with a way to read its tables behind them. */
export interface EngineUnderTest {
  stores: Stores
  /** Runs a read-only statement on a connection of its own (unqualified table names) and returns its rows. */
  rows<T> (sql: string): Promise<T[]>
}

/**
 * Both engines, for a test written once and run on each: SQLite in a file of the test's (so a
 * second, read-only connection sees what the stores committed), PostgreSQL on a fresh schema
 * (skipped, or failed under CI, as services.ts says when it does not answer).
 */
export const ENGINES: ReadonlyArray<{ name: 'sqlite' | 'postgres'; open (t: TestContext, dir: string): Promise<EngineUnderTest> }> = [
  {
    name: 'sqlite',
    async open (t, dir) {
      const path = join(dir, 'p.db')
      const stores = createSqliteStores(path)
      t.after(async () => { await stores.close() })
      return {
        stores,
        async rows<T> (sql: string) {
          const db = new DatabaseSync(path, { readOnly: true })
          try { return db.prepare(sql).all() as T[] } finally { db.close() }
        }
      }
    }
  },
  {
    name: 'postgres',
    async open (t) {
      const { stores, schema } = await openPostgresTestSchema(t, { poolMax: 2 })
      return {
        stores,
        rows: async <T>(sql: string) => await withPostgres(TEST_DATABASE_URL, async (c) => {
          await c.query(`SET search_path TO ${schema}`)
          return (await c.query(sql)).rows as T[]
        })
      }
    }
  }
]
