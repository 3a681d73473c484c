// Redis memory per subject is bounded (SECURITY.md): a client address's day counter lives only as
// long as it can matter, not until the end of the UTC day, so a flood of one-off addresses costs
// minutes of memory, not a day's. Real Redis, a unique key prefix.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { DAY_MS, dayResetAt } from '../../src/ratelimit/limiter.ts'
import { createRedisRateLimiter } from '../../src/ratelimit/redis.ts'
import { T0 } from '../helpers/app.ts'
import { connectTestRedis, testRedisReason } from '../helpers/limiter.ts'
import { deleteRedisKeys, requireService } from '../helpers/services.ts'

const FREE = { perMinute: 60, perDay: 1000 }
const MARGIN = 60_000

// Fault caught: every address's day counter lived until the end of the UTC day (about 22 h on
// average): 293,000 one-off addresses held 587,000 keys and 87 MB.
test('an address\'s day counter lives n × (1 day / perDay) after its n-th request; a key\'s until the day ends; an exhausted address stays refused', async (t) => {
  if (!requireService(t, await testRedisReason())) return
  const redis = await connectTestRedis()
  const prefix = `test:${randomUUID()}:`
  t.after(async () => { await deleteRedisKeys(redis, prefix); redis.disconnect() })
  let now = T0
  const limiter = createRedisRateLimiter({ redis, prefix, now: () => now })
  const dayKey = (subject: string) => `${prefix}{${subject}}:d:${Math.floor(now / DAY_MS)}`
  const ttl = async (subject: string) => redis.pttl(dayKey(subject))

  await limiter.consume('ip:192.0.2.1', FREE)
  await limiter.consume('ip:192.0.2.1', FREE)
  const perRequest = DAY_MS / FREE.perDay // 86.4 s
  const two = await ttl('ip:192.0.2.1')
  assert.ok(two <= 2 * perRequest + MARGIN && two > 2 * perRequest + MARGIN - 5000, `2 requests: ${two} ms`)
  await limiter.consume('ip6:2001:db8:1:2::/64', FREE)
  assert.ok(await ttl('ip6:2001:db8:1:2::/64') <= perRequest + MARGIN, 'IPv6 blocks too')

  await limiter.consume('key:1', FREE)
  const keyTtl = await ttl('key:1')
  assert.ok(keyTtl > dayResetAt(now) - now + MARGIN - 5000, `a key's day counter lives until the day ends: ${keyTtl} ms`)

  // An address that spends its whole day quota keeps its counter until the day ends.
  const busy = 'ip:192.0.2.9'
  for (let i = 0; i < FREE.perDay; i++) {
    if (i % FREE.perMinute === 0) now += 60_000 // a new minute window every 60 requests
    await limiter.consume(busy, FREE)
  }
  const refused = await limiter.consume(busy, FREE)
  assert.equal(refused.allowed, false)
  assert.equal(refused.day.remaining, 0)
  assert.ok(await ttl(busy) > dayResetAt(now) - now, 'exhausted: kept until the day ends')

  // The cost of one address, for SECURITY.md: its two counters.
  const bytes = Number(await redis.call('MEMORY', 'USAGE', dayKey('ip:192.0.2.1'))) + Number(await redis.call('MEMORY', 'USAGE', `${prefix}{ip:192.0.2.1}:m:${Math.floor(T0 / 60_000)}`))
  t.diagnostic(`one address: ${bytes} bytes in Redis (prefix of ${prefix.length} characters)`)
  assert.ok(bytes < 400, `${bytes} bytes`)
})
