// Calls of deprecated operations in the usage recorder (access/usage.ts): counted in memory,
// written in the usage flush, and kept for the next flush when the database refuses one.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { createUsageRecorder } from '../../src/access/usage.ts'
import { utcDay } from '../../src/accounts/keys.rules.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { T0 } from '../helpers/app.ts'
import { openTestStores } from '../helpers/stores.ts'

test('a refused flush keeps the deprecated calls, and the next one adds them once', async (t) => {
  // Catches: calls dropped with a failed batch, or written twice (the retry adding the kept
  // counts on top of a partly written batch), and the last call moving backwards.
  const stores = await openTestStores(t)
  const { record } = await createKeyAdmin(stores.keys, manualClock(T0)).create({ role: 'customer', plan: 'free' })
  let refuse = true
  const recordUsage = stores.keys.recordUsage.bind(stores.keys)
  stores.keys.recordUsage = async (batch) => {
    if (refuse) { refuse = false; throw new Error('database is locked') }
    return recordUsage(batch)
  }
  const usage = createUsageRecorder(stores.keys)
  usage.recordDeprecated('getPet', record.id, T0)
  usage.recordDeprecated('getPet', record.id, T0 + 2_000)
  await assert.rejects(usage.flush(), /database is locked/)
  assert.deepEqual(await stores.keys.deprecatedCalls(utcDay(T0)), [])
  usage.recordDeprecated('getPet', record.id, T0 + 1_000)
  await usage.flush()
  assert.deepEqual(
    await stores.keys.deprecatedCalls(utcDay(T0)),
    [{ operation: 'getPet', keyId: record.id, day: utcDay(T0), calls: 3, lastCallAt: T0 + 2_000 }]
  )
  await usage.flush()
  assert.equal((await stores.keys.deprecatedCalls(utcDay(T0)))[0]!.calls, 3, 'an empty flush adds nothing')
})
