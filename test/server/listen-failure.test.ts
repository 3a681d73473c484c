// A start that fails at listen (the port is in use) closes what it opened before (issue 18 item 7):
// the SQLite file (its WAL is checkpointed and removed when the last connection closes), the
// PostgreSQL pool's connections (counted in pg_stat_activity by a unique application_name) and
// the Redis client (counted in CLIENT LIST by a unique connection name). startServer rejects with
// the listen error, which the CLI turns into one line and exit code 1.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { Redis } from 'ioredis'
import { loadConfig } from '../../src/config.ts'
import { createLogger, startServer } from '../../src/server.ts'
import { withPostgres } from '../helpers/services.ts'
import { TEST_DATABASE_URL } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'
import { cleanupStack, pollUntil, requireServices, schemaDatabaseUrl, TEST_REDIS_URL } from '../scale/helpers.ts'

/** A port some other server listens on, for the length of the test. */
async function busyPort (t: TestContext): Promise<number> {
  const other: Server = createServer()
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => other.close(() => resolve())))
  return (other.address() as { port: number }).port
}

async function startOnBusyPort (t: TestContext, env: Record<string, string>): Promise<unknown> {
  const config = loadConfig({ HOST: '127.0.0.1', PORT: String(await busyPort(t)), METRICS_PORT: '0', LOG_LEVEL: 'silent', ...env })
  return startServer(config, { logger: createLogger(config) }).then(
    async (server) => { await server.close(); return null },
    (error: unknown) => error
  )
}

test('serve on a port in use, SQLite: startServer rejects with EADDRINUSE and the database file is closed', async (t) => {
  // Fault caught: the stores opened before listen stayed open (the connection, the WAL file).
  const path = join(tempDir(t), 'petstore.db')
  const error = await startOnBusyPort(t, { DATABASE_URL: `sqlite:${path}` })
  assert.equal((error as { code?: string } | null)?.code, 'EADDRINUSE')
  assert.ok(existsSync(path), 'the database was opened and migrated')
  assert.equal(existsSync(`${path}-wal`), false, 'the last connection closed: SQLite checkpointed and removed the WAL')
  assert.equal(existsSync(`${path}-shm`), false)
})

test('serve on a port in use, PostgreSQL and Redis: startServer rejects with EADDRINUSE, the pool has no connection left and the Redis client is gone', async (t) => {
  // Fault caught: the pool's connections and the Redis client stayed open after the failed start
  // (30 s for an idle pool connection, for ever for Redis).
  const cleanup = cleanupStack(t)
  if (!await requireServices(t, ['postgres', 'redis'])) return
  const { url } = await schemaDatabaseUrl(t)
  const name = `petstore-listen-failure-${randomBytes(6).toString('hex')}`
  const database = new URL(url())
  database.searchParams.set('application_name', name)
  const redisUrl = new URL(TEST_REDIS_URL)
  redisUrl.searchParams.set('connectionName', name)
  redisUrl.searchParams.set('keyPrefix', `${name}:`)
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 })
  redis.on('error', () => {})
  cleanup(() => redis.disconnect())
  const connections = async () => ({
    postgres: await withPostgres(TEST_DATABASE_URL, async (c) => Number((await c.query('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [name])).rows[0].n)),
    redis: (await redis.call('CLIENT', 'LIST') as string).split('\n').filter((line) => line.includes(` name=${name} `)).length
  })

  // While the start runs, the pool and the client are really open (so the count below means something).
  let seenOpen = { postgres: 0, redis: 0 }
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: String(await busyPort(t)),
    METRICS_PORT: '0',
    LOG_LEVEL: 'silent',
    DATABASE_URL: database.toString(),
    REDIS_URL: redisUrl.toString()
  })
  const error = await startServer(config, {
    logger: createLogger(config),
    beforeListen: async () => { seenOpen = await connections() }
  }).then(async (server) => { await server.close(); return null }, (e: unknown) => e)
  assert.equal((error as { code?: string } | null)?.code, 'EADDRINUSE')
  assert.ok(seenOpen.postgres >= 1 && seenOpen.redis >= 1, `open during the start: ${JSON.stringify(seenOpen)}`)
  await pollUntil(async () => {
    const now = await connections()
    return now.postgres === 0 && now.redis === 0 ? now : undefined
  }, { timeoutMs: 5000, intervalMs: 50, message: 'the pool and the Redis client were not closed' })
})
