import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from '../src/config.ts'

test('loadConfig: the defaults of docs/product.md section 2', () => {
  const config = loadConfig({})
  assert.equal(config.host, '127.0.0.1')
  assert.equal(config.port, 3000)
  assert.deepEqual(config.database, { kind: 'sqlite', path: './data/petstore.db' })
  assert.equal(config.redisUrl, null)
  assert.equal(config.getPetSunset.toISOString(), '2027-05-21T00:00:00.000Z')
  assert.equal(config.corsOrigins, '*')
  assert.equal(config.logLevel, 'info')
})

test('loadConfig reads every variable', () => {
  const config = loadConfig({
    PORT: '8080', HOST: '0.0.0.0', DATABASE_URL: 'postgres://u:p@db:5432/shop', REDIS_URL: 'redis://cache:6379',
    PETSTORE_GET_PET_SUNSET: '2027-01-31T10:00:00+01:00', CORS_ORIGINS: 'https://a.example, https://b.example', LOG_LEVEL: 'warn', TRUST_PROXY: '1'
  })
  assert.equal(config.port, 8080)
  assert.deepEqual(config.database, { kind: 'postgres', url: 'postgres://u:p@db:5432/shop' })
  assert.equal(config.redisUrl, 'redis://cache:6379')
  assert.equal(config.getPetSunset.toISOString(), '2027-01-31T09:00:00.000Z')
  assert.deepEqual(config.corsOrigins, ['https://a.example', 'https://b.example'])
  assert.equal(config.trustProxy, 1)
  assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite::memory:' }).database, { kind: 'sqlite', path: ':memory:' })
})

test('loadConfig lists every problem at once and never echoes a database URL', () => {
  try {
    loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://root:hunter2@db/x', PETSTORE_GET_PET_SUNSET: '2027-02-30T00:00:00Z', LOG_LEVEL: 'loud', REDIS_URL: 'cache:6379' })
    assert.fail('should throw')
  } catch (error) {
    assert.ok(error instanceof ConfigError)
    assert.equal(error.problems.length, 5)
    assert.doesNotMatch(error.message, /hunter2/)
  }
  for (const sunset of ['2027-05-21', 'next year', '2027-13-01T00:00:00Z']) {
    assert.throws(() => loadConfig({ PETSTORE_GET_PET_SUNSET: sunset }), ConfigError, sunset)
  }
})
