// Opens what the configuration names: the database engine and the rate-limit store. Returns the
// parts and one close() for all of them. Nothing else in the program opens a connection.
import type { Redis } from 'ioredis'
import { describeDatabase, type Config } from './config.ts'
import { AppError } from './errors.ts'
import { localKeyEvents, parseKeyEvent, type KeyEvents } from './access/key-events.ts'
import { createFallbackRateLimiter, type FallbackRateLimiter } from './ratelimit/fallback.ts'
import type { RateLimiter } from './ratelimit/limiter.ts'
import { createMemoryRateLimiter } from './ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from './ratelimit/redis.ts'
import type { Clock } from './shared/clock.ts'
import type { Readiness } from './shared/readiness.ts'
import { describeOpenFailure, isWorthWaitingFor } from './storage/postgres/errors.ts'
import { createSqliteStores } from './storage/sqlite/index.ts'
import type { Stores } from './storage/stores.ts'

export interface Infra {
  stores: Stores
  limiter: RateLimiter
  readiness: Readiness
  /** Key changes told to every instance: Redis pub/sub when configured, else this process only. */
  keyEvents: KeyEvents
  close (): Promise<void>
}

export interface InfraOptions {
  clock: Clock
  /** Run migrations on open (serve does, under a lock where the engine has one). */
  migrate?: boolean
  /** Told before each wait for a database not reachable yet (openStores). */
  onDatabaseWait?: (reason: string, waitedMs: number) => void
  onLimiterState?: (state: 'ok' | 'degraded', reason?: string) => void
  /** Key prefix of the rate-limit keys in Redis. */
  redisPrefix?: string
}

export class InfraError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'InfraError'
  }
}

/**
 * How long a start (serve, migrate, a CLI command) waits for PostgreSQL to become reachable before
 * it gives up: a container started beside its database (compose starts them together), a
 * database restarting, a 2-CPU machine under load that misses the 2 s connect timeout once. Only
 * "not reachable yet" is waited for (isWorthWaitingFor); a wrong password or database name fails
 * at once. Each wait is told to the caller (onWait), so an operator sees why nothing happens yet.
 */
export const DATABASE_START_WAIT_MS = 30_000

export interface OpenStoresOptions {
  migrate?: boolean
  /** Called before each wait for PostgreSQL: the reason in words, the time waited so far. */
  onWait?: (reason: string, waitedMs: number) => void
  /** The bound of the waits (DATABASE_START_WAIT_MS); tests shorten it. */
  waitMs?: number
}

export async function openStores (config: Config, options: OpenStoresOptions = {}): Promise<Stores> {
  const database = config.database
  if (database.kind === 'sqlite') {
    try {
      return createSqliteStores(database.path, { migrate: options.migrate !== false })
    } catch (error) {
      throw new InfraError(`cannot open ${describeDatabase(database)}: ${(error as Error).message}`)
    }
  }
  // Loaded only when PostgreSQL is configured: pg and the PostgreSQL stores are ~10 MiB of a
  // process that runs on SQLite (docs/performance.md).
  const { createPostgresStores } = await import('./storage/postgres/index.ts')
  const started = Date.now()
  const waitMs = options.waitMs ?? DATABASE_START_WAIT_MS
  for (let pause = 250, tries = 1; ; pause = Math.min(pause * 2, 2000), tries++) {
    try {
      return await createPostgresStores(database.url, {
        migrate: options.migrate !== false,
        ...(config.databasePoolMax !== null && { poolMax: config.databasePoolMax })
      })
    } catch (error) {
      const cause = error instanceof AppError && error.cause !== undefined ? error.cause : error
      // describeDatabase drops the user and password; describeOpenFailure keeps driver text short.
      const reason = describeOpenFailure(cause)
      const waited = Date.now() - started
      if (!isWorthWaitingFor(cause) || waited + pause > waitMs) {
        throw new InfraError(`cannot open ${describeDatabase(database)}: ${reason}${tries > 1 ? ` (waited ${Math.round(waited / 1000)} s)` : ''}`)
      }
      options.onWait?.(reason, waited)
      await new Promise((resolve) => setTimeout(resolve, pause))
    }
  }
}

export async function openInfra (config: Config, options: InfraOptions): Promise<Infra> {
  const stores = await openStores(config, {
    migrate: options.migrate !== false,
    ...(options.onDatabaseWait !== undefined && { onWait: options.onDatabaseWait })
  })
  let redis: Redis | null = null
  let limiter: RateLimiter
  let fallback: FallbackRateLimiter | null = null
  let keyEvents: KeyEvents = localKeyEvents()
  if (config.redisUrl === null) {
    limiter = createMemoryRateLimiter({ now: options.clock.now, maxSubjects: config.limiterMaxSubjects })
  } else {
    // Loaded only when Redis is configured (~20 MiB of resident memory otherwise spent for nothing).
    const { Redis: RedisClient } = await import('ioredis')
    const client = new RedisClient(config.redisUrl, { ...redisClientOptions(), lazyConnect: false })
    redis = client
    // ioredis reports connection errors as events; the fallback limiter reports the state.
    client.on('error', () => {})
    await firstConnection(client)
    fallback = createFallbackRateLimiter({
      primary: createRedisRateLimiter({ redis: client, prefix: options.redisPrefix ?? 'petstore:rl:', now: options.clock.now }),
      fallback: createMemoryRateLimiter({ now: options.clock.now, maxSubjects: config.limiterMaxSubjects }),
      now: options.clock.now,
      // Readiness pings Redis, so the state is right on an idle instance too (see check()).
      probe: () => client.ping(),
      ...(options.onLimiterState !== undefined && { onStateChange: options.onLimiterState })
    })
    limiter = fallback
    keyEvents = createRedisKeyEvents(client, `${options.redisPrefix ?? 'petstore:rl:'}keys:changed`)
  }

  const readiness: Readiness = {
    async check () {
      const checks: Awaited<ReturnType<Readiness['check']>>['checks'] = {}
      try {
        await stores.ping()
        checks.database = { status: 'ok' }
      } catch {
        checks.database = { status: 'down', reason: 'the database does not answer' }
      }
      if (fallback !== null) {
        const state = await fallback.check()
        checks.redis = state.status === 'ok'
          ? { status: 'ok' }
          : { status: 'degraded', reason: `Redis is unreachable, rate limits use per-instance counters (${state.reason ?? 'no answer'})` }
      }
      const degraded = Object.values(checks).some((c) => c.status !== 'ok')
      return { status: degraded ? 'degraded' : 'ok', checks }
    }
  }

  return {
    stores,
    limiter,
    readiness,
    keyEvents,
    async close () {
      await keyEvents.close()
      await limiter.close()
      if (redis !== null) redis.disconnect()
      await stores.close()
    }
  }
}

/**
 * Key changes over Redis pub/sub. Publishing uses the limiter's client (it fails fast while Redis
 * is away: the 2 s key cache is then the bound); listening needs a connection of its own, which
 * queues its SUBSCRIBE until connected and resubscribes after a reconnect.
 */
export function createRedisKeyEvents (client: Redis, channel: string): KeyEvents {
  const subscriber = client.duplicate({ enableOfflineQueue: true, lazyConnect: false })
  subscriber.on('error', () => {})
  const listeners: Array<(keyId: number) => void> = []
  subscriber.on('message', (from: string, message: string) => {
    if (from !== channel) return
    const keyId = parseKeyEvent(message)
    if (keyId !== null) for (const listener of listeners) listener(keyId)
  })
  const ready = subscriber.subscribe(channel).then(() => {}, () => {})
  return {
    publish (keyId) { client.publish(channel, String(keyId)).catch(() => {}) },
    subscribe (listener) { listeners.push(listener) },
    ready,
    async close () {
      listeners.length = 0
      subscriber.disconnect()
    }
  }
}

/**
 * Waits for the client's first connection, at most connectTimeout (+ a little), and never fails:
 * a Redis that is down at start means per-instance counters until it comes back, not a process
 * that refuses to start. Without this wait, the requests of the first moments (ioredis connects
 * in the background, and commands are not queued meanwhile) would find no connection yet, and
 * the instance would start degraded, on its own counters, for a retry interval.
 */
async function firstConnection (client: Redis): Promise<void> {
  if (client.status === 'ready') return
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer)
      client.off('ready', done)
      client.off('error', done)
      resolve()
    }
    const timer = setTimeout(done, (redisClientOptions().connectTimeout ?? 1000) + 250)
    client.once('ready', done)
    client.once('error', done)
  })
}
