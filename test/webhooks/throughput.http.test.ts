// One endpoint's backlog drains at the speed of its receiver, not one share a poll: an attempt
// that ends while the last claim was full asks for the next round at once. Before, an endpoint got
// at most WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT deliveries per WEBHOOK_POLL_MS (16 a second at the
// defaults) and a busy shop's events fell behind for good (the bench's webhooks row).
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startReceiver } from './receiver.ts'
import { received, subscribe, webhookApp } from './helpers.ts'

test('a replay of 40 events to one endpoint is delivered within seconds when the poll is a minute', { timeout: 60_000 }, async (t) => {
  // A minute's poll: only the replay's wake and the attempts' own requests can start rounds.
  const app = await webhookApp(t, { env: { WEBHOOK_POLL_MS: '60000', WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: '2' } })
  const receiver = await startReceiver(t)
  const category = await app.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Dogs' } })
  const categoryId = (category.json() as { id: number }).id
  for (let i = 0; i < 40; i++) {
    const created = await app.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: `Pet ${i}`, categoryId } })
    assert.equal(created.statusCode, 201, created.body)
  }
  const endpoint = await subscribe(app, receiver, ['pet.created'])
  const replay = await app.call({
    method: 'POST',
    url: `/v1/webhooks/${endpoint.id}/replay`,
    payload: { since: new Date(Date.now() - 600_000).toISOString() }
  })
  assert.equal(replay.statusCode, 202, replay.body)
  assert.equal((replay.json() as { queued: number }).queued, 40)
  // Fault caught: the next round waits for the poll (2 deliveries, then nothing for a minute).
  const got = await received(receiver, 40, 20_000)
  assert.equal(new Set(got.map((d) => d.headers['webhook-id'])).size, 40)
})
