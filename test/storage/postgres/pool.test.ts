// The PostgreSQL pool is sized to the machine (issue 20 item 5), and DATABASE_POOL_MAX overrides it.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from '../../../src/config.ts'
import { defaultPoolMax } from '../../../src/storage/postgres/database.ts'

test('the pool has 4 connections per CPU, from 4 to 16', () => {
  // Fault caught: a fixed pool, too small for a big machine or larger than a small one can use.
  assert.deepEqual([1, 2, 3, 4, 8, 64].map((cpus) => defaultPoolMax(cpus)), [4, 8, 12, 16, 16, 16])
})

test('DATABASE_POOL_MAX sets the pool size; unset leaves it to the machine; a bad value stops the start', () => {
  assert.equal(loadConfig({}).databasePoolMax, null)
  assert.equal(loadConfig({ DATABASE_POOL_MAX: '24' }).databasePoolMax, 24)
  assert.throws(() => loadConfig({ DATABASE_POOL_MAX: '0' }), ConfigError)
  assert.throws(() => loadConfig({ DATABASE_POOL_MAX: 'many' }), ConfigError)
})
