// The storage engine a test runs on: SQLite in memory by default; PostgreSQL (a fresh schema per
// test, dropped afterwards) when PETSTORE_TEST_ENGINE=postgres.
import { randomBytes } from 'node:crypto'
import type { TestContext } from 'node:test'
import pg from 'pg'
import { createPostgresStores, type PostgresStores, type PostgresStoresOptions } from '../../src/storage/postgres/index.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'

export const TEST_ENGINE = process.env.PETSTORE_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite'

/** The PostgreSQL the tests use: PETSTORE_TEST_DATABASE_URL, else the local server's `test` database. */
export const TEST_DATABASE_URL = process.env.PETSTORE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

export async function openTestStores (t: TestContext): Promise<Stores> {
  if (TEST_ENGINE === 'postgres') return openPostgresTestStores(t)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  return stores
}

/** Why the test PostgreSQL cannot be used (one line, no password), or null when it answers. */
export async function postgresUnavailableReason (): Promise<string | null> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 2000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return null
  } catch (error) {
    const url = new URL(TEST_DATABASE_URL)
    const { code, message } = error as { code?: string; message?: string }
    return `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname} is unreachable (${code ?? message ?? 'unknown error'}); ` +
      'start it or set PETSTORE_TEST_DATABASE_URL'
  } finally {
    await client.end().catch(() => {})
  }
}

async function admin<T> (fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 2000 })
  client.on('error', () => {})
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end().catch(() => {})
  }
}

async function newSchema (): Promise<{ schema: string; drop (): Promise<void> }> {
  const schema = `petstore_test_${randomBytes(6).toString('hex')}`
  await admin((c) => c.query(`CREATE SCHEMA ${schema}`))
  return { schema, drop: () => admin(async (c) => { await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`) }) }
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

let reachable: Promise<string | null> | undefined

/** The PostgreSQL engine on a fresh schema (see createTestSchema), closed then dropped after the test. */
export async function openPostgresTestStores (t: TestContext, options: PostgresStoresOptions = {}): Promise<PostgresStores> {
  reachable ??= postgresUnavailableReason()
  const reason = await reachable
  if (reason !== null) {
    // Without CI, a missing server skips the test (README: npm test); the throw only ends its body.
    if (process.env.CI === undefined || process.env.CI === '') t.skip(`PETSTORE_TEST_ENGINE=postgres: ${reason}`)
    const error = new Error(`PETSTORE_TEST_ENGINE=postgres: ${reason}`)
    error.stack = error.message
    throw error
  }
  const { schema, drop } = await newSchema()
  let stores: PostgresStores | null = null
  t.after(async () => {
    await stores?.close()
    await drop()
  })
  stores = await createPostgresStores(TEST_DATABASE_URL, { poolMax: 4, ...options, schema })
  return stores
}
