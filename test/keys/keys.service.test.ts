// The key administration service on its own (src/keys/keys.service.ts, keys.rules.ts,
// keys.view.ts), on the test engine's real key store and a manual clock: one behaviour per test,
// each pinning a fault that mutation testing showed the CLI and HTTP tests would let through
// (docs/testing.md, "Mutation testing").
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test, type TestContext } from 'node:test'
import { GRACE_PERIOD_DEFAULT_S, GRACE_PERIOD_MAX_S, USAGE_DAYS_MAX } from '../../src/keys/keys.schema.ts'
import { createKeyAdmin, generateKey, type KeyAdminHooks } from '../../src/keys/keys.service.ts'
import { hashKey, isExpired, quotaOf, rotationRefusal, subjectOf, subjectOfKey } from '../../src/accounts/keys.rules.ts'
import type { KeyRecord } from '../../src/accounts/keys.store.ts'
import { toApiKey } from '../../src/keys/keys.view.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { openTestStores } from '../helpers/stores.ts'

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0)

async function setup (t: TestContext, hooks: KeyAdminHooks = {}) {
  const stores = await openTestStores(t)
  const clock = manualClock(T0)
  return { stores, clock, admin: createKeyAdmin(stores.keys, clock, hooks) }
}

/** The AppError code and the first detail's path of a rejection. */
async function refusal (promise: Promise<unknown>): Promise<[string, string | undefined]> {
  const error = await promise.then(() => null, (e: unknown) => e) as {
    code?: string
    details?: { path: string }[]
  } | null
  assert.ok(error !== null, 'expected a refusal')
  return [error.code ?? String(error), error.details?.[0]?.path]
}

test('generateKey: psk_ and 43 base64url characters (32 bytes), its first 12 characters as prefix, its SHA-256 hex as hash; never the same twice', () => {
  const a = generateKey()
  assert.match(a.key, /^psk_[0-9A-Za-z]{49}$/)
  assert.equal(a.prefix, a.key.slice(0, 16))
  assert.equal(a.hash, createHash('sha256').update(a.key).digest('hex'))
  assert.equal(hashKey(a.key), a.hash)
  assert.notEqual(generateKey().key, a.key)
})

test('quotaOf: a plan\'s fixed quotas; an enterprise key\'s own, 1 a minute and a day when they are missing', () => {
  assert.deepEqual(quotaOf({ plan: 'free', perMinute: 5, perDay: 5 }), { perMinute: 60, perDay: 1000 })
  assert.deepEqual(quotaOf({ plan: 'enterprise', perMinute: 7, perDay: 70 }), { perMinute: 7, perDay: 70 })
  assert.deepEqual(quotaOf({ plan: 'enterprise', perMinute: null, perDay: null }), { perMinute: 1, perDay: 1 })
})

test('subjects: key:<id> for a key, key:<quotaKeyId> for a rotated one', () => {
  assert.equal(subjectOfKey(12), 'key:12')
  assert.equal(subjectOf({ quotaKeyId: 4 }), 'key:4')
})

test('isExpired: from expiresAt on (inclusive), never without one', () => {
  assert.equal(isExpired({ expiresAt: null }, T0), false)
  assert.equal(isExpired({ expiresAt: T0 }, T0 - 1), false)
  assert.equal(isExpired({ expiresAt: T0 }, T0), true)
  assert.equal(isExpired({ expiresAt: T0 }, T0 + 1), true)
})

test('create: stores name (null when absent), role, plan, quotas, the hash and prefix of the key it returns, no ban, never used', async (t) => {
  const { admin, stores } = await setup(t)
  const made = await admin.create({ role: 'staff', plan: 'enterprise', perMinute: 5, perDay: 50, name: 'ci' })
  assert.deepEqual([made.ban, made.lastUsedAt], [null, null])
  const stored = await stores.keys.findKeyByHash(hashKey(made.key))
  assert.deepEqual(stored, made.record)
  assert.deepEqual([
    stored!.name, stored!.role, stored!.plan, stored!.perMinute, stored!.perDay,
    stored!.prefix, stored!.createdAt, stored!.expiresAt
  ], ['ci', 'staff', 'enterprise', 5, 50, made.key.slice(0, 16), T0, null])
  const plain = await admin.create({ role: 'customer', plan: 'free' })
  assert.deepEqual([plain.record.name, plain.record.perMinute, plain.record.perDay], [null, null, null])
})

test('create: expiresAt must be a date-time strictly after now (validation_failed at /expiresAt); one millisecond later is kept', async (t) => {
  const { admin } = await setup(t)
  assert.deepEqual(await refusal(admin.create({ role: 'customer', plan: 'free', expiresAt: 'tomorrow' })), ['validation_failed', '/expiresAt'])
  assert.deepEqual(await refusal(admin.create({ role: 'customer', plan: 'free', expiresAt: new Date(T0).toISOString() })), ['validation_failed', '/expiresAt'])
  const made = await admin.create({ role: 'customer', plan: 'free', expiresAt: new Date(T0 + 1).toISOString() })
  assert.equal(made.record.expiresAt, T0 + 1)
})

test('quotas: enterprise needs both, other plans take none, perMinute may equal perDay but not exceed it', async (t) => {
  const { admin } = await setup(t)
  assert.deepEqual(await refusal(admin.create({ role: 'customer', plan: 'enterprise', perMinute: 5 })), ['validation_failed', '/perMinute'])
  assert.deepEqual(await refusal(admin.create({ role: 'customer', plan: 'enterprise', perDay: 5 })), ['validation_failed', '/perMinute'])
  assert.deepEqual(await refusal(admin.create({ role: 'customer', plan: 'pro', perMinute: 5 })), ['validation_failed', '/perMinute'])
  assert.deepEqual(await refusal(admin.create({ role: 'customer', plan: 'pro', perDay: 5 })), ['validation_failed', '/perMinute'])
  assert.deepEqual(await refusal(admin.create({ role: 'customer', plan: 'enterprise', perMinute: 6, perDay: 5 })), ['validation_failed', '/perMinute'])
  assert.equal((await admin.create({ role: 'customer', plan: 'enterprise', perMinute: 5, perDay: 5 })).record.perDay, 5)
  assert.equal((await admin.create({ role: 'customer', plan: 'pro', perMinute: null as unknown as number })).record.plan, 'pro', 'null quotas are no quotas')
})

test('rotate: the grace period is a whole number of seconds from 0 to the maximum (default one day); the old key then ends now + grace', async (t) => {
  const changed: KeyRecord[] = []
  const { admin, stores } = await setup(t, { onKeyChanged: (r) => changed.push(r) })
  for (const bad of [-1, GRACE_PERIOD_MAX_S + 1, 1.5]) {
    const key = await admin.create({ role: 'customer', plan: 'free' })
    assert.deepEqual(await refusal(admin.rotate(key.record.id, { gracePeriodSeconds: bad })), ['validation_failed', '/gracePeriodSeconds'], String(bad))
  }
  const cases: [number | undefined, number][] = [
    [0, 0],
    [GRACE_PERIOD_MAX_S, GRACE_PERIOD_MAX_S],
    [undefined, GRACE_PERIOD_DEFAULT_S]
  ]
  for (const [grace, seconds] of cases) {
    const key = await admin.create({ role: 'customer', plan: 'free' })
    const rotated = await admin.rotate(key.record.id, grace === undefined ? {} : { gracePeriodSeconds: grace })
    assert.equal(rotated.old.expiresAt, T0 + seconds * 1000)
    assert.equal((await stores.keys.getKey(key.record.id))!.expiresAt, T0 + seconds * 1000)
    assert.deepEqual([
      rotated.record.replaces,
      rotated.key.startsWith('psk_'),
      (await stores.keys.findKeyByHash(hashKey(rotated.key)))?.id === rotated.record.id
    ], [key.record.id, true, true])
    assert.deepEqual(changed.at(-1), rotated.old, 'every instance forgets the old key')
  }
  for (const id of [0, -1, 1.5]) assert.deepEqual(await refusal(admin.rotate(id, {})), ['not_found', undefined])
})

test('rotationRefusal: a revoked, an expired (at its instant) or a replaced key cannot be rotated; a live one can', async (t) => {
  const { admin } = await setup(t)
  const key = (await admin.create({ role: 'customer', plan: 'free', expiresAt: new Date(T0 + 1000).toISOString() })).record
  assert.equal(rotationRefusal(key, T0 + 999), null)
  assert.equal(rotationRefusal(key, T0 + 1000)?.code, 'api_key_not_rotatable')
  assert.match(rotationRefusal(key, T0 + 1000)!.message, /expired at 2026-11-21T12:00:01.000Z/)
  assert.match(rotationRefusal({ ...key, revokedAt: T0 }, T0)!.message, /was revoked at 2026-11-21T12:00:00.000Z/)
  assert.match(rotationRefusal({ ...key, replacedBy: 9 }, T0)!.message, /key 9 replaces it; rotate key 9 instead/)
})

test('usage: days from 1 to the maximum (default 30), today included; the instance\'s pending usage is flushed first; a missing key is not_found', async (t) => {
  let flushed = 0
  const { admin, stores, clock } = await setup(t, {
    usage: { flush: async () => { flushed++ }, lastUsedAt: () => null }
  })
  const key = await admin.create({ role: 'customer', plan: 'free' })
  const id = key.record.id
  for (const bad of [0, USAGE_DAYS_MAX + 1, 2.5]) assert.deepEqual(await refusal(admin.usage(id, { days: bad })), ['validation_failed', '/days'])
  await stores.keys.recordUsage({
    counts: [
      { keyId: id, day: '2026-10-23', allowed: 1, limited: 0, banned: 0 },
      { keyId: id, day: '2026-10-22', allowed: 2, limited: 0, banned: 0 },
      { keyId: id, day: '2026-11-21', allowed: 3, limited: 1, banned: 2 }
    ],
    lastUsed: []
  })
  assert.deepEqual((await admin.usage(id, {})).days.map((d) => d.date), ['2026-10-23', '2026-11-21'], '30 days back from 2026-11-21 is 2026-10-23')
  assert.deepEqual(await admin.usage(id, { days: 1 }), {
    keyId: id,
    days: [{ date: '2026-11-21', allowed: 3, limited: 1, banned: 2, mcp: 0, other4xx: 0 }],
    deprecated: []
  })
  assert.equal((await admin.usage(id, { days: USAGE_DAYS_MAX })).days.length, 3)
  assert.equal(flushed, 3)
  clock.advance(0)
  assert.deepEqual(await refusal(admin.usage(id + 100, {})), ['not_found', undefined])
})

test('lastUsedAt: the later of the stored instant and this instance\'s pending use', async (t) => {
  let pending: number | null = null
  const { admin, stores } = await setup(t, { usage: { flush: async () => {}, lastUsedAt: () => pending } })
  const id = (await admin.create({ role: 'customer', plan: 'free' })).record.id
  assert.equal((await admin.get(id)).lastUsedAt, null)
  pending = T0 + 5
  assert.equal((await admin.get(id)).lastUsedAt, T0 + 5, 'never stored: the pending use')
  await stores.keys.recordUsage({ counts: [], lastUsed: [{ keyId: id, at: T0 + 10 }] })
  assert.equal((await admin.get(id)).lastUsedAt, T0 + 10, 'stored later than pending')
  pending = T0 + 20
  assert.equal((await admin.get(id)).lastUsedAt, T0 + 20, 'pending later than stored')
  pending = null
  assert.equal((await admin.get(id)).lastUsedAt, T0 + 10)
})

test('list: each filter alone narrows the list (status, role, plan, q); without filters every key', async (t) => {
  const { admin, clock } = await setup(t)
  const a = await admin.create({ role: 'customer', plan: 'free', name: 'alpha' })
  const b = await admin.create({ role: 'staff', plan: 'pro', name: 'beta' })
  await admin.revoke(b.record.id, null)
  clock.advance(1)
  const ids = async (query: Parameters<typeof admin.list>[0]) => (await admin.list(query)).items.map((s) => s.record.id)
  assert.deepEqual(await ids({}), [a.record.id, b.record.id])
  assert.deepEqual(await ids({ status: 'revoked' }), [b.record.id])
  assert.deepEqual(await ids({ role: 'customer' }), [a.record.id])
  assert.deepEqual(await ids({ plan: 'pro' }), [b.record.id])
  assert.deepEqual(await ids({ q: 'alp' }), [a.record.id])
  const page = await admin.list({ limit: 1 })
  assert.equal(page.items.length, 1)
  assert.notEqual(page.nextCursor, null)
})

test('rateLimit: the minute and day windows the limiter reports (used = limit - remaining, reset in whole seconds rounded up) and its ban; without peek it refuses', async (t) => {
  const { stores, clock } = await setup(t)
  const peeks: [string, unknown][] = []
  const admin = createKeyAdmin(stores.keys, clock, {
    peek: (subject, quota) => {
      peeks.push([subject, quota])
      return {
        allowed: true,
        minute: { limit: 60, remaining: 45, resetAt: T0 + 30_001 },
        day: { limit: 1000, remaining: 990, resetAt: T0 + 43_200_000 },
        ban: { until: T0 + 600_000, reason: 'too many 429s' }
      } as never
    }
  })
  const key = await admin.create({ role: 'customer', plan: 'free' })
  assert.deepEqual(await admin.rateLimit(key.record.id), {
    keyId: key.record.id,
    subject: `key:${key.record.id}`,
    windows: {
      minute: { limit: 60, used: 15, remaining: 45, reset: Math.ceil((T0 + 30_001) / 1000) },
      day: { limit: 1000, used: 10, remaining: 990, reset: (T0 + 43_200_000) / 1000 }
    },
    ban: { until: new Date(T0 + 600_000).toISOString(), reason: 'too many 429s' }
  })
  assert.deepEqual(peeks, [[`key:${key.record.id}`, { perMinute: 60, perDay: 1000 }]])
  const bare = createKeyAdmin(stores.keys, clock)
  await assert.rejects(bare.rateLimit(key.record.id), /rateLimit needs the limiter/)
})

test('bans: the chain\'s bans, with start, end, lift and reason as ISO instants; a missing key is not_found', async (t) => {
  const { admin, stores, clock } = await setup(t)
  const id = (await admin.create({ role: 'customer', plan: 'free' })).record.id
  await stores.keys.recordBan({ keyId: id, subject: `key:${id}`, startedAt: T0, endsAt: T0 + 60_000, reason: 'first' } as never)
  clock.advance(1000)
  assert.equal(await admin.unban(id), 1)
  await stores.keys.recordBan({ keyId: id, subject: `key:${id}`, startedAt: T0 + 2000, endsAt: T0 + 62_000, reason: 'second' } as never)
  const { bans } = await admin.bans(id)
  assert.deepEqual(bans.map((b) => [b.startedAt, b.until, b.liftedAt, b.reason]).sort(), [
    [new Date(T0).toISOString(), new Date(T0 + 60_000).toISOString(), new Date(T0 + 1000).toISOString(), 'first'],
    [new Date(T0 + 2000).toISOString(), new Date(T0 + 62_000).toISOString(), null, 'second']
  ])
  assert.deepEqual(await refusal(admin.bans(id + 100)), ['not_found', undefined])
})

test('unban: lifts the ban in the database and tells this instance\'s limiter, with the key and its subject', async (t) => {
  const unbanned: [number, string][] = []
  const { admin, stores } = await setup(t, { onUnban: async (id, subject) => { unbanned.push([id, subject]) } })
  const id = (await admin.create({ role: 'customer', plan: 'free' })).record.id
  await stores.keys.recordBan({ keyId: id, subject: `key:${id}`, startedAt: T0, endsAt: T0 + 60_000, reason: 'x' } as never)
  assert.notEqual((await admin.get(id)).ban, null)
  assert.equal(await admin.unban(id), 1)
  assert.equal((await admin.get(id)).ban, null)
  assert.deepEqual(unbanned, [[id, `key:${id}`]])
})

test('revoke: the key is revoked in the store at now, and every instance is told; an id that cannot exist is not_found', async (t) => {
  const changed: KeyRecord[] = []
  const { admin, stores } = await setup(t, { onKeyChanged: (r) => changed.push(r) })
  const id = (await admin.create({ role: 'customer', plan: 'free' })).record.id
  await admin.revoke(id, null)
  assert.equal((await stores.keys.getKey(id))!.revokedAt, T0)
  assert.deepEqual(changed.map((r) => [r.id, r.revokedAt]), [[id, T0]])
  for (const bad of [0, -1, 2.5]) assert.deepEqual(await refusal(admin.revoke(bad, null)), ['not_found', undefined])
  const plain = createKeyAdmin(stores.keys, manualClock(T0))
  const other = (await plain.create({ role: 'customer', plan: 'free' })).record.id
  await plain.revoke(other, null)
  assert.equal((await stores.keys.getKey(other))!.revokedAt, T0, 'without hooks (the CLI) too')
})

test('update: leaving enterprise drops the custom quotas; staying keeps those not given; name and role change only when given', async (t) => {
  const changed: KeyRecord[] = []
  const { admin } = await setup(t, { onKeyChanged: (r) => changed.push(r) })
  const id = (await admin.create({ role: 'customer', plan: 'enterprise', perMinute: 5, perDay: 50, name: 'n' })).record.id
  const kept = await admin.update(id, { perDay: 80 }, null)
  assert.deepEqual(
    [kept.record.plan, kept.record.perMinute, kept.record.perDay, kept.record.name, kept.record.role],
    ['enterprise', 5, 80, 'n', 'customer']
  )
  const kept2 = await admin.update(id, { perMinute: 6 }, null)
  assert.deepEqual([kept2.record.perMinute, kept2.record.perDay], [6, 80])
  const left = await admin.update(id, { plan: 'pro', name: 'm', role: 'staff' }, null)
  assert.deepEqual(
    [left.record.plan, left.record.perMinute, left.record.perDay, left.record.name, left.record.role],
    ['pro', null, null, 'm', 'staff']
  )
  assert.deepEqual(await refusal(admin.update(id, { plan: 'pro', perMinute: 5 }, null)), ['validation_failed', '/perMinute'])
  assert.deepEqual(await refusal(admin.update(id, { plan: 'enterprise' }, null)), ['validation_failed', '/perMinute'], 'arriving at enterprise needs both quotas')
  const back = await admin.update(id, { plan: 'enterprise', perMinute: 2, perDay: 20 }, null)
  assert.deepEqual([back.record.perMinute, back.record.perDay], [2, 20])
  assert.equal(changed.length, 4)
  assert.deepEqual(changed.at(-1), back.record)
})

test('toApiKey: the public view, instants as ISO text, null ones null, the ban\'s end and reason', async (t) => {
  const { admin } = await setup(t)
  const made = await admin.create({
    role: 'customer',
    plan: 'enterprise',
    perMinute: 3,
    perDay: 30,
    name: 'v',
    expiresAt: new Date(T0 + 5000).toISOString(),
    scopes: ['orders:write', 'catalog:read']
  })
  const record = { ...made.record, revokedAt: T0 + 1000 }
  assert.deepEqual(toApiKey({ record, ban: { endsAt: T0 + 9000, reason: 'r' } as never, lastUsedAt: T0 + 2000 }), {
    id: record.id, name: 'v', role: 'customer', plan: 'enterprise', limits: { perMinute: 3, perDay: 30 },
    prefix: record.prefix, format: 'checksummed',
    createdAt: new Date(T0).toISOString(), revokedAt: new Date(T0 + 1000).toISOString(),
    expiresAt: new Date(T0 + 5000).toISOString(), replaces: null, replacedBy: null,
    lastUsedAt: new Date(T0 + 2000).toISOString(), scopes: ['catalog:read', 'orders:write'],
    ban: { until: new Date(T0 + 9000).toISOString(), reason: 'r' }
  })
  const plain = toApiKey({ record: { ...made.record, expiresAt: null, scopes: null }, ban: null, lastUsedAt: null })
  assert.deepEqual(
    [plain.revokedAt, plain.expiresAt, plain.lastUsedAt, plain.ban, plain.scopes],
    [null, null, null, null, null]
  )
  assert.equal(toApiKey({ record: { ...made.record, prefix: 'psk_AAAAAAAA' }, ban: null, lastUsedAt: null }).format, 'legacy', 'a 12-character prefix: a key made before checksums')
})

test('validation refusals say what is wrong: the message and each detail name the field and the rule, so an operator at the CLI can fix the call', async (t) => {
  const { admin } = await setup(t)
  const refused = async (promise: Promise<unknown>) => {
    const error = await promise.then(() => null, (e: unknown) => e) as {
      message: string
      details: { path: string; message: string }[]
    }
    return [error.message, error.details]
  }
  assert.deepEqual(await refused(admin.create({ role: 'customer', plan: 'free', expiresAt: 'tomorrow' })), ['expiresAt must be an ISO 8601 date-time', [{ path: '/expiresAt', message: 'must be a date-time' }]])
  assert.deepEqual(
    await refused(admin.create({ role: 'customer', plan: 'free', expiresAt: new Date(T0 - 1000).toISOString() })),
    [
      'expiresAt must be in the future (it is 2026-11-21T11:59:59.000Z, now is 2026-11-21T12:00:00.000Z)',
      [{ path: '/expiresAt', message: 'must be in the future' }]
    ]
  )
  const key = await admin.create({ role: 'customer', plan: 'free' })
  assert.deepEqual(await refused(admin.rotate(key.record.id, { gracePeriodSeconds: -1 })), [
    `gracePeriodSeconds must be a whole number from 0 to ${GRACE_PERIOD_MAX_S}`,
    [{ path: '/gracePeriodSeconds', message: `must be from 0 to ${GRACE_PERIOD_MAX_S}` }]
  ])
  assert.deepEqual(await refused(admin.create({ role: 'customer', plan: 'enterprise', perMinute: 5 })), ['an enterprise key needs both perMinute and perDay', [{ path: '/perMinute', message: 'required for the enterprise plan' }]])
  assert.deepEqual(await refused(admin.create({ role: 'customer', plan: 'pro', perDay: 5 })), ['the pro plan has fixed quotas; perMinute and perDay are for enterprise keys only', [{ path: '/perMinute', message: 'only for the enterprise plan' }]])
  assert.deepEqual(
    await refused(admin.create({ role: 'customer', plan: 'enterprise', perMinute: 6, perDay: 5 })),
    ['perMinute cannot exceed perDay', [{ path: '/perMinute', message: 'exceeds perDay' }]]
  )
})
