// The rate limiter a test app runs on: memory by default, the Redis back end (real Redis on
// localhost, a unique key prefix per limiter, its keys deleted afterwards) with
// PETSTORE_TEST_LIMITER=redis, so the HTTP rate-limit tests run unchanged on both.
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import type { RateLimiter } from '../../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from '../../src/ratelimit/redis.ts'

export const TEST_LIMITER = process.env.PETSTORE_TEST_LIMITER === 'redis' ? 'redis' : 'memory'
export const TEST_REDIS_URL = process.env.PETSTORE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** A Redis limiter on its own client; close() deletes its keys and disconnects. */
export async function openRedisTestLimiter (now: () => number, prefix = `test:${randomUUID()}:`): Promise<RateLimiter> {
  const redis = new Redis(TEST_REDIS_URL, { ...redisClientOptions(), lazyConnect: true, commandTimeout: 2000 })
  redis.on('error', () => {})
  try {
    await redis.connect()
  } catch (error) {
    throw new Error(`PETSTORE_TEST_LIMITER=redis but Redis at ${TEST_REDIS_URL} is unreachable: ${(error as Error).message}`, { cause: error })
  }
  const limiter = createRedisRateLimiter({ redis, prefix, now })
  return {
    consume: (subject, quota) => limiter.consume(subject, quota),
    peek: (subject, quota) => limiter.peek(subject, quota),
    unban: (subject) => limiter.unban(subject),
    async close () {
      await limiter.close()
      await deleteRedisKeys(redis, prefix)
      redis.disconnect()
    }
  }
}

export async function openTestLimiter (now: () => number): Promise<RateLimiter> {
  return TEST_LIMITER === 'redis' ? await openRedisTestLimiter(now) : createMemoryRateLimiter({ now })
}

/** Deletes every key under `prefix` (a test's own keys on the shared Redis). */
export async function deleteRedisKeys (redis: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await redis.del(...keys)
  } while (cursor !== '0')
}

/** Why the test Redis cannot be used (one line, no password), or null when it answers. */
export async function redisUnavailableReason (): Promise<string | null> {
  const client = new Redis(TEST_REDIS_URL, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 1000, commandTimeout: 1000, retryStrategy: () => null })
  // The socket's error (ECONNREFUSED) says more than the rejection ("Connection is closed.").
  let socketError: unknown = null
  client.on('error', (error) => { socketError ??= error })
  try {
    await client.connect()
    await client.ping()
    return null
  } catch (error) {
    const { code, message } = (socketError ?? error) as { code?: string; message?: string }
    const url = new URL(TEST_REDIS_URL)
    return `Redis at ${url.hostname}:${url.port || 6379} is unreachable (${code ?? message ?? 'unknown error'}); start it or set PETSTORE_TEST_REDIS_URL`
  } finally {
    client.disconnect()
  }
}
