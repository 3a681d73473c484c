// The rate limiter a test app runs on: memory by default, the Redis back end (real Redis, a unique
// key prefix per limiter, its keys deleted afterwards) with PETSTORE_TEST_LIMITER=redis, so the
// HTTP rate-limit tests run unchanged on both. A missing Redis follows the rule of services.ts.
import { randomUUID } from 'node:crypto'
import type { TestContext } from 'node:test'
import { Redis } from 'ioredis'
import type { RateLimiter } from '../../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from '../../src/ratelimit/redis.ts'
import { deleteRedisKeys, redisUnavailableReason, requireService, skippedTestEnd } from './services.ts'

export const TEST_LIMITER = process.env.PETSTORE_TEST_LIMITER === 'redis' ? 'redis' : 'memory'
/** The Redis the tests use: PETSTORE_TEST_REDIS_URL, else the local server. */
export const TEST_REDIS_URL = process.env.PETSTORE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

let probed: Promise<string | null> | undefined

/** Why the test Redis cannot be used (one line, no password), or null when it answers; probed once per process. */
export function testRedisReason (): Promise<string | null> {
  probed ??= redisUnavailableReason(TEST_REDIS_URL).then((reason) => reason === null ? null : `${reason}; start it or set PETSTORE_TEST_REDIS_URL`)
  return probed
}

/** A client on the test Redis, connected; the caller disconnects it. */
export async function connectTestRedis (): Promise<Redis> {
  const redis = new Redis(TEST_REDIS_URL, { ...redisClientOptions(), lazyConnect: true, commandTimeout: 2000 })
  redis.on('error', () => {}) // connection errors surface as rejected commands
  await redis.connect()
  return redis
}

/**
 * A Redis limiter on its own client; close() deletes its keys and disconnects. Gate the test on
 * testRedisReason() first.
 */
export async function openRedisTestLimiter (now: () => number, prefix = `test:${randomUUID()}:`): Promise<RateLimiter> {
  const redis = await connectTestRedis()
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

export async function openTestLimiter (t: TestContext, now: () => number): Promise<RateLimiter> {
  if (TEST_LIMITER === 'memory') return createMemoryRateLimiter({ now })
  if (!requireService(t, await testRedisReason())) throw skippedTestEnd('PETSTORE_TEST_LIMITER=redis')
  return openRedisTestLimiter(now)
}
