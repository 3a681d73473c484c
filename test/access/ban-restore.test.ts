// With in-process limits (no REDIS_URL), a restart forgets counters but never bans: a starting
// instance loads the bans in force from the database (docs/product.md section 4).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { restoreBans } from '../../src/access/ban-sync.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { createLogger, startServer } from '../../src/server.ts'
import { manualClock, systemClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { requireService } from '../helpers/services.ts'
import { openPostgresTestStores, testPostgresReason } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'

test('a key banned before a restart is still banned after it (429 api_key_banned, same end), and a lifted ban is not restored', async (t) => {
  const dir = tempDir(t, 'petstore-bans-')
  const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, PORT: '0' })
  const start = () => startServer(config, { logger: createLogger({ logLevel: 'silent' }) })

  // Quotas of 1 a day: the day window binds, so no minute boundary during the test changes a count.
  const first = await start()
  const admin = createKeyAdmin(first.infra.stores.keys, systemClock)
  const banned = await admin.create({ role: 'customer', plan: 'enterprise', perMinute: 1, perDay: 1 })
  const pardoned = await admin.create({ role: 'customer', plan: 'enterprise', perMinute: 1, perDay: 1 })
  const get = async (url: string, key: string) => fetch(`${url}/v1/pets`, { headers: { 'x-api-key': key } })
  for (const key of [banned.key, pardoned.key]) {
    const codes: number[] = []
    for (let i = 0; i < 22; i++) codes.push((await get(first.url, key)).status)
    assert.deepEqual(codes, [200, ...Array(21).fill(429)])
  }
  const before = await (await get(first.url, banned.key)).json() as { code: string; message: string }
  assert.equal(before.code, 'api_key_banned')
  await admin.unban(pardoned.record.id)
  await first.close()

  const second = await start()
  t.after(() => second.close())
  const after = await get(second.url, banned.key)
  assert.equal(after.status, 429)
  const body = await after.json() as { code: string; message: string }
  assert.equal(body.code, 'api_key_banned')
  assert.equal(body.message, before.message, 'the same ban, ending at the same instant')
  assert.ok(Number(after.headers.get('retry-after')) > 800)
  assert.equal((await get(second.url, pardoned.key)).status, 200, 'a lifted ban stays lifted; the counters start afresh')
})

for (const engine of ['sqlite', 'postgres'] as const) test(`restoreBans (${engine}) loads every ban in force, keys and addresses, and not ended or lifted ones; a restored ban escalates the next one`, async (t) => {
  const clock = manualClock(Date.UTC(2026, 10, 21, 12))
  let stores: Stores
  if (engine === 'sqlite') {
    const sqlite = createSqliteStores(':memory:')
    t.after(() => sqlite.close())
    stores = sqlite
  } else {
    if (!requireService(t, await testPostgresReason())) return
    stores = await openPostgresTestStores(t)
  }
  const now = clock.now()
  const admin = createKeyAdmin(stores.keys, clock)
  const key = await admin.create({ role: 'customer', plan: 'free' })
  // A 30 min (level 2) ban.
  await stores.keys.recordBan({
    keyId: key.record.id,
    subject: `key:${key.record.id}`,
    startedAt: now - 60_000,
    endsAt: now + 29 * 60_000,
    reason: 'r'
  })
  await stores.keys.recordBan({ keyId: null, subject: 'ip:203.0.113.7', startedAt: now - 1000, endsAt: now + 899_000, reason: 'r' })
  await stores.keys.recordBan({ keyId: null, subject: 'ip:198.51.100.9', startedAt: now - 3_600_000, endsAt: now - 1, reason: 'r' })
  const limiter = createMemoryRateLimiter({ now: clock.now })
  assert.equal(await restoreBans(stores.keys, limiter, now), 2)
  const quota = { perMinute: 1, perDay: 10 }
  assert.equal((await limiter.consume(`key:${key.record.id}`, quota)).code, 'api_key_banned')
  assert.equal((await limiter.consume('ip:203.0.113.7', quota)).retryAfterSeconds, 899)
  assert.equal((await limiter.consume('ip:198.51.100.9', quota)).allowed, true)
  // After the restored 30 min ban, the next one within 24 h is level 3: an hour.
  clock.advance(30 * 60_000)
  const subject = `key:${key.record.id}`
  await limiter.consume(subject, quota)
  let last = await limiter.consume(subject, quota)
  for (let i = 0; i < 20; i++) last = await limiter.consume(subject, quota)
  assert.equal(last.code, 'api_key_banned')
  assert.equal(last.ban?.level, 3)
  assert.equal(last.ban!.until - last.ban!.startedAt, 3_600_000)
})
