// key.expiring reaches a webhook receiver (issue 31): a real receiver on 127.0.0.1 subscribed to
// key.* gets the notice the key-expiring job sent, signed, with the key's view as data, the very
// body GET /v1/admin/keys/{id} answers. Runs on PostgreSQL too (PETSTORE_TEST_ENGINE=postgres).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sendKeyExpiringNotices } from '../../src/jobs/key-expiring.ts'
import { systemClock } from '../../src/shared/clock.ts'
import { startReceiver } from '../webhooks/receiver.ts'
import { received, subscribe, verified, webhookApp } from '../webhooks/helpers.ts'

const DAY = 86_400_000

test('a receiver subscribed to key.* gets key.expiring, with the key\'s view, once the job finds the key within 7 days of its expiry', async (t) => {
  const app = await webhookApp(t)
  const receiver = await startReceiver(t)
  const endpoint = await subscribe(app, receiver, ['key.*'])
  const created = await app.call({
    method: 'POST',
    url: '/v1/admin/keys',
    payload: { role: 'customer', plan: 'pro', name: 'Leaving shop', expiresAt: new Date(Date.now() + 6 * DAY).toISOString() }
  })
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().id as number
  assert.equal(await sendKeyExpiringNotices({ events: app.stores.events, clock: systemClock }), 1)

  const deliveries = await received(receiver, 2, 10_000)
  const payloads = deliveries.map((d) => verified(d, endpoint.secret))
  assert.deepEqual(payloads.map((p) => p.type), ['key.created', 'key.expiring'])
  const view = await app.call({ method: 'GET', url: `/v1/admin/keys/${id}` })
  assert.deepEqual(payloads[1]!.data, view.json())
  await new Promise((resolve) => setTimeout(resolve, 300))
  assert.equal(await sendKeyExpiringNotices({ events: app.stores.events, clock: systemClock }), 0)
  assert.equal(receiver.received.length, 2, 'the notice once')
})
