// The storage engine a test runs on: SQLite in memory by default; PostgreSQL (a fresh schema per
// test, dropped afterwards) when PETSTORE_TEST_ENGINE=postgres.
import type { TestContext } from 'node:test'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'

export const TEST_ENGINE = process.env.PETSTORE_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite'

export async function openTestStores (t: TestContext): Promise<Stores> {
  if (TEST_ENGINE === 'postgres') {
    throw new Error('PETSTORE_TEST_ENGINE=postgres: the PostgreSQL engine is not built yet')
  }
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  return stores
}
