// The key administration service (src/keys/keys.service.ts) where the `keys` mutation run of
// 2026-11-24 found no test: the admin the CLI builds (no hooks), the deprecation report's
// grouping and order, and ids that cannot be stored. One behaviour per test, on the test engine's
// real key store and a manual clock (docs/testing.md, "Mutation testing").
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import type { DeprecatedOperation } from '../../src/shared/deprecation.ts'
import { utcDay } from '../../src/accounts/keys.rules.ts'
import type { KeyStore } from '../../src/accounts/keys.store.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { openTestStores } from '../helpers/stores.ts'

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0)
const DAY = 86_400_000

/** The test engine's key store, with a count of the store methods called. */
async function countedKeys (t: TestContext): Promise<{ keys: KeyStore; calls: Map<string, number> }> {
  const stores = await openTestStores(t)
  const calls = new Map<string, number>()
  const keys = new Proxy(stores.keys, {
    get (target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        calls.set(String(name), (calls.get(String(name)) ?? 0) + 1)
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    }
  })
  return { keys, calls }
}

const op = (operationId: string, extra: Partial<DeprecatedOperation> = {}): DeprecatedOperation =>
  ({ operationId, method: 'GET', path: `/v1/${operationId}`, deprecatedAt: new Date(T0 - 10 * DAY), ...extra })

test('the admin the CLI builds (no hooks): deprecations lists no operations, and update and revoke still change the row', async (t) => {
  const { keys } = await countedKeys(t)
  const admin = createKeyAdmin(keys, manualClock(T0))
  assert.deepEqual(await admin.deprecations(), { from: utcDay(T0 - 29 * DAY), operations: [] })
  const id = (await admin.create({ role: 'customer', plan: 'free', name: 'a' })).record.id
  assert.equal((await admin.update(id, { name: 'b' }, null)).record.name, 'b')
  assert.equal((await keys.getKey(id))!.name, 'b')
  await admin.revoke(id, null)
  assert.equal((await keys.getKey(id))!.revokedAt, T0)
})

test('deprecations: each operation counts only its own calls; no sunset or successor is null; keys with the same last call come in id order; each key is read once', async (t) => {
  const { keys, calls } = await countedKeys(t)
  const operations = [
    op('getPet', { sunsetAt: new Date(T0 + 100 * DAY), successor: { method: 'GET', path: '/v1/pets?id={petId}', operationId: 'listPets' } }),
    op('oldThing')
  ]
  const admin = createKeyAdmin(keys, manualClock(T0), { deprecatedOperations: () => operations })
  const a = (await admin.create({ role: 'customer', plan: 'free', name: 'A' })).record
  const b = (await admin.create({ role: 'customer', plan: 'free', name: 'B' })).record
  const yesterday = utcDay(T0 - DAY)
  const today = utcDay(T0)
  await keys.recordUsage({
    counts: [],
    lastUsed: [],
    deprecated: [
      { operation: 'getPet', keyId: b.id, day: today, calls: 2, lastCallAt: T0 - 1000 },
      { operation: 'getPet', keyId: a.id, day: today, calls: 1, lastCallAt: T0 - 1000 },
      { operation: 'oldThing', keyId: a.id, day: yesterday, calls: 4, lastCallAt: T0 - DAY },
      { operation: 'oldThing', keyId: a.id, day: today, calls: 3, lastCallAt: T0 - 5000 }
    ]
  })
  calls.clear()
  const report = await admin.deprecations()
  assert.equal(calls.get('getKey'), 2, 'one read per key, however many rows it has')
  assert.deepEqual(report.operations, [{
    operationId: 'getPet',
    method: 'GET',
    path: '/v1/getPet',
    deprecatedAt: new Date(T0 - 10 * DAY).toISOString(),
    sunsetAt: new Date(T0 + 100 * DAY).toISOString(),
    successor: { method: 'GET', path: '/v1/pets?id={petId}', operationId: 'listPets' },
    keys: [
      {
        keyId: a.id, name: 'A', prefix: a.prefix, calls: 1, lastCallAt: new Date(T0 - 1000).toISOString(),
        days: [{ date: today, calls: 1 }]
      },
      {
        keyId: b.id, name: 'B', prefix: b.prefix, calls: 2, lastCallAt: new Date(T0 - 1000).toISOString(),
        days: [{ date: today, calls: 2 }]
      }
    ]
  }, {
    operationId: 'oldThing',
    method: 'GET',
    path: '/v1/oldThing',
    deprecatedAt: new Date(T0 - 10 * DAY).toISOString(),
    sunsetAt: null,
    successor: null,
    keys: [
      {
        keyId: a.id, name: 'A', prefix: a.prefix, calls: 7, lastCallAt: new Date(T0 - 5000).toISOString(),
        days: [{ date: yesterday, calls: 4 }, { date: today, calls: 3 }]
      }
    ]
  }])
})

test('rotate and revoke of an id no store can hold (0, negative, fractional, beyond 2^53): not_found naming it, and the store is never asked', async (t) => {
  const { keys, calls } = await countedKeys(t)
  const admin = createKeyAdmin(keys, manualClock(T0))
  for (const id of [0, -1, 2.5, 2 ** 63]) {
    await assert.rejects(admin.revoke(id, null), { code: 'not_found', message: `key ${id} not found` })
    await assert.rejects(admin.rotate(id, {}), { code: 'not_found', message: `key ${id} not found` })
  }
  assert.deepEqual([calls.get('revokeKey'), calls.get('rotateKey')], [undefined, undefined])
})
