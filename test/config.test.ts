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

test('loadConfig: the connection limits and the grace period, their defaults and their variables', () => {
  assert.deepEqual(loadConfig({}).server, {
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    writeTimeoutMs: 30_000,
    keepAliveTimeoutMs: 72_000,
    maxConnections: 1000,
    maxConnectionsPerAddress: 100,
    shutdownGraceMs: 10_000
  })
  assert.deepEqual(loadConfig({
    HEADERS_TIMEOUT_MS: '500',
    REQUEST_TIMEOUT_MS: '900',
    WRITE_TIMEOUT_MS: '2000',
    KEEP_ALIVE_TIMEOUT_MS: '5000',
    MAX_CONNECTIONS: '64',
    SHUTDOWN_GRACE_MS: '25000'
  }).server, {
    headersTimeoutMs: 500,
    requestTimeoutMs: 900,
    writeTimeoutMs: 2000,
    keepAliveTimeoutMs: 5000,
    maxConnections: 64,
    maxConnectionsPerAddress: 6,
    shutdownGraceMs: 25_000
  })
  // The per-address cap: a tenth of MAX_CONNECTIONS unless set, at least 1, never above MAX_CONNECTIONS.
  assert.equal(loadConfig({ MAX_CONNECTIONS: '5' }).server.maxConnectionsPerAddress, 1)
  assert.equal(loadConfig({ MAX_CONNECTIONS: '64', MAX_CONNECTIONS_PER_ADDRESS: '64' }).server.maxConnectionsPerAddress, 64)
  assert.equal(loadConfig({ MAX_CONNECTIONS_PER_ADDRESS: '8' }).server.maxConnectionsPerAddress, 8)
  for (const value of ['0', '1001', 'ten']) {
    assert.throws(() => loadConfig({ MAX_CONNECTIONS_PER_ADDRESS: value }), /MAX_CONNECTIONS_PER_ADDRESS must be a whole number from 1 to 1000/, value)
  }
  // 0 would switch a limit off in Node: refused, like any non-number.
  for (const [variable, value] of [['HEADERS_TIMEOUT_MS', '0'], ['MAX_CONNECTIONS', '-1'], ['SHUTDOWN_GRACE_MS', '10s'], ['KEEP_ALIVE_TIMEOUT_MS', '1.5'], ['WRITE_TIMEOUT_MS', '0']]) {
    assert.throws(
      () => loadConfig({ [variable!]: value }),
      (error: unknown) => error instanceof ConfigError
        && error.problems.length === 1
        && error.problems[0]!.startsWith(`${variable} must be a whole number`),
      `${variable}=${value}`
    )
  }
  assert.throws(() => loadConfig({ HEADERS_TIMEOUT_MS: '40000' }), /HEADERS_TIMEOUT_MS \(40000\) must not exceed REQUEST_TIMEOUT_MS \(30000\)/)
})

test('loadConfig: the metrics listener is on loopback by default, its port the default one unless set (0 to 65535)', () => {
  assert.deepEqual(loadConfig({}).metrics, { host: '127.0.0.1', port: null })
  assert.deepEqual(loadConfig({ METRICS_HOST: '0.0.0.0', METRICS_PORT: '9100' }).metrics, { host: '0.0.0.0', port: 9100 })
  assert.equal(loadConfig({ METRICS_PORT: '0' }).metrics.port, 0)
  for (const value of ['65536', 'x', '-1']) assert.throws(() => loadConfig({ METRICS_PORT: value }), /METRICS_PORT must be a whole number from 0 to 65535/, value)
})
