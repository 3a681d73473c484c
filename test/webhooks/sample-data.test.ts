// The sample data of `serve --sample-data` does not surprise (issue 49 section 2): it once gave the
// sample customer two identical disabled endpoints at hooks.partner.example and two unexplained
// webhook.disabled events. Now: one endpoint, whose description says what it is, disabled by
// hand, and the one event that says so.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { manualClock } from '../../src/shared/clock.ts'
import { loadSampleData, loadSampleKeysAndOrders, SAMPLE_WEBHOOK_ID } from '../../src/sample-data.ts'
import { T0 } from '../helpers/app.ts'
import { pollUntil } from '../helpers/server.ts'
import { openTestStores } from '../helpers/stores.ts'

test('the sample customer has one disabled endpoint that says what it is, and one webhook.disabled event about it', async (t) => {
  const stores = await openTestStores(t)
  await loadSampleData(stores)
  const keys = await loadSampleKeysAndOrders(stores, manualClock(T0))
  const customer = keys.find((k) => k.role === 'customer')!

  const endpoints = await stores.webhooks.listWebhooks(null, null, 10)
  assert.deepEqual(
    endpoints.map((w) => [w.id, w.ownerKeyId, w.status, w.disabledReason]),
    [[SAMPLE_WEBHOOK_ID, customer.id, 'disabled', 'manual']]
  )
  assert.match(endpoints[0]!.description ?? '', /^Sample endpoint of `serve --sample-data`: hooks\.partner\.example receives nothing/)

  // On PostgreSQL the feed shows a transaction once every older one has ended (on the whole
  // server, other tests' included): read until the event shows, then check there is one.
  const { value: feed } = await pollUntil(async () => {
    const events = await stores.events.listEvents({
      visibility: { role: 'customer', keyId: customer.id },
      types: { exact: ['webhook.disabled'], prefixes: [] },
      after: null,
      limit: 10
    })
    return events.length > 0 ? events : undefined
  }, { timeoutMs: 5000, message: 'the webhook.disabled event in the feed' })
  assert.equal(feed.length, 1)
  const data = feed[0]!.data as { id: string; description: string; reason: string }
  assert.deepEqual([data.id, data.reason, data.description], [SAMPLE_WEBHOOK_ID, 'manual', endpoints[0]!.description])
})
