// The client's webhook operations against the real server, and verifyWebhook on deliveries that
// server made to a real receiver, checked against the standardwebhooks package both ways.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { systemClock } from '../../../src/shared/clock.ts'
import { startReceiver } from '../../../test/webhooks/receiver.ts'
import { received } from '../../../test/webhooks/helpers.ts'
import { verifyWebhook, WebhookVerificationError } from '../src/index.ts'
import { serveForClient } from './helpers.ts'

test('a delivery of the real server verifies with verifyWebhook, and a changed body, secret or an old timestamp does not', async (t) => {
  const server = await serveForClient(t, {
    env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50' },
    deps: { clock: systemClock }
  })
  const client = server.client({ apiKey: server.keys.customer, now: Date.now })
  const receiver = await startReceiver(t)
  const endpoint = await client.webhooks.create({ url: `http://127.0.0.1:${receiver.port}/hook`, types: ['webhook.test'] })
  const { eventId } = await client.webhooks.test(endpoint.id)
  const [delivery] = await received(receiver, 1)
  const headers = delivery!.headers as Record<string, string>

  const payload = await verifyWebhook(delivery!.body, headers, endpoint.secret)
  assert.equal(payload.type, 'webhook.test')
  assert.equal(headers['webhook-id'], eventId)
  assert.deepEqual(payload, new Webhook(endpoint.secret).verify(delivery!.body, headers), 'the same answer as the reference package')
  assert.deepEqual(await verifyWebhook(delivery!.body, new Headers(headers), endpoint.secret), payload, 'a fetch Headers works too')

  const other = (await client.webhooks.rotateSecret(endpoint.id)).secret
  await assert.rejects(verifyWebhook(delivery!.body, headers, other), WebhookVerificationError, 'another secret')
  await assert.rejects(verifyWebhook(delivery!.body.replace('webhook.test', 'webhook.tesT'), headers, endpoint.secret), /no webhook-signature matches/)
  const sent = Number(headers['webhook-timestamp']) * 1000
  await assert.rejects(verifyWebhook(delivery!.body, headers, endpoint.secret, { now: () => sent + 301_000 }), /more than 300 s/)
  await assert.rejects(verifyWebhook(delivery!.body, headers, endpoint.secret, { now: () => sent - 301_000 }), /more than 300 s/)
  assert.equal((await verifyWebhook(delivery!.body, headers, endpoint.secret, { now: () => sent + 299_000 })).type, 'webhook.test')
  await assert.rejects(verifyWebhook(delivery!.body, { ...headers, 'webhook-signature': undefined }, endpoint.secret), /missing/)

  const list = await client.webhooks.deliveries(endpoint.id)
  assert.equal(list[0]?.outcome, 'succeeded')
  assert.deepEqual((await client.webhooks.list()).map((w) => w.id), [endpoint.id])
  await client.webhooks.delete(endpoint.id)
})

test('verifyWebhook accepts what the standardwebhooks package signs, one signature among several', async () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
  const body = JSON.stringify({ type: 'order.created', timestamp: '2026-11-21T12:00:00.000Z', data: { id: 1 } })
  const at = new Date()
  const signature = new Webhook(secret).sign('evt_1', at, body)
  const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': `v1,${'A'.repeat(43)}= ${signature}` }
  assert.deepEqual(await verifyWebhook(body, headers, secret), JSON.parse(body))
})
