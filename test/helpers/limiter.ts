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
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
        cursor = next
        if (keys.length > 0) await redis.del(...keys)
      } while (cursor !== '0')
      redis.disconnect()
    }
  }
}

export async function openTestLimiter (now: () => number): Promise<RateLimiter> {
  return TEST_LIMITER === 'redis' ? await openRedisTestLimiter(now) : createMemoryRateLimiter({ now })
}
