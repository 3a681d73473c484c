// A new event type is one row of the catalogue (issue 49 section 3, "done when"): a row added
// here, and nothing else, reaches the document (its Event schema and its x-webhooks delivery),
// GET /v1/event_types, a webhook subscription, a test send of its example through the public
// POST /v1/webhooks/{id}/test to a real receiver (verified with the standardwebhooks package) and
// the feed with its type filter.
//
// Everything that derives from the catalogue builds its schemas when its module loads, so the
// row is added first and the app is imported after it (dynamic imports only: a static import of
// the app would load the catalogue's derivations before the row exists).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Type } from 'typebox'
import { addEventTypeRow, eventRow, exampleDraft, type EventType } from '../../src/events/catalogue.ts'

const ADOPTED = 'pet.adopted'
const EXAMPLE = { petId: 7, adoptedAt: '2026-11-21T12:00:00.000Z' }
const DATA = Type.Object({
  petId: Type.Integer({ minimum: 1 }),
  adoptedAt: Type.String({ format: 'date-time' })
}, { title: 'PetAdoptedEventData', additionalProperties: false })
addEventTypeRow(ADOPTED, eventRow({
  audience: 'catalog',
  data: DATA,
  example: EXAMPLE,
  description: 'A pet found a home.',
  audit: null
}))

const { webhookApp, received, subscribe, verified } = await import('../webhooks/helpers.ts')
const { startReceiver } = await import('../webhooks/receiver.ts')

/**
 * The staff key's feed of `filter` once it shows an event. On PostgreSQL the feed serves a row once
 * every transaction older than its own has ended, in the whole cluster: it may lag, never skip.
 */
async function feedOf (h: Awaited<ReturnType<typeof webhookApp>>, filter: string, key: string): Promise<unknown[]> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const feed = await h.call({ method: 'GET', url: `/v1/events?type=${filter}`, key })
    assert.equal(feed.statusCode, 200, feed.body)
    const events = feed.json() as unknown[]
    if (events.length > 0 || Date.now() > deadline) return events
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

test('a type added as one catalogue row is in the document, GET /v1/event_types, a subscription, a test send and the feed', async (t) => {
  const h = await webhookApp(t)
  const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json()
  assert.deepEqual(doc.components.schemas.PetAdoptedEvent.properties.data, { $ref: '#/components/schemas/PetAdoptedEventData' })
  assert.equal(doc['x-webhooks'][ADOPTED].post.summary, ADOPTED)

  const staff = await h.makeKey('staff')
  const listed = ((await h.call({ method: 'GET', url: '/v1/event_types', key: staff.key })).json() as Array<{ type: string }>)
    .find((item) => item.type === ADOPTED)
  assert.deepEqual(listed, {
    type: ADOPTED, family: 'pet', description: 'A pet found a home.', schema: JSON.parse(JSON.stringify(DATA)), example: EXAMPLE
  })
  const customer = await h.call({ method: 'GET', url: '/v1/event_types', role: 'customer' })
  assert.ok(!(customer.json() as Array<{ type: string }>).some((item) => item.type === ADOPTED), 'its audience is staff\'s')

  const receiver = await startReceiver(t)
  const endpoint = await subscribe(h, receiver, [ADOPTED], staff.key)
  // The test send, through the public API: POST /v1/webhooks/{id}/test with the type sends its
  // documented example, signed as any delivery, under the id of the webhook.test event it writes.
  const sent = await h.call({
    method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, key: staff.key, payload: { type: ADOPTED }
  })
  assert.equal(sent.statusCode, 202, sent.body)
  const { eventId: testId } = sent.json() as { eventId: string }
  const [delivery] = await received(receiver, 1, 5000)
  const { timestamp: sentAt, ...body } = verified(delivery!, endpoint.secret)
  assert.deepEqual(body, { id: testId, type: ADOPTED, data: EXAMPLE })
  assert.ok(!Number.isNaN(Date.parse(sentAt)))

  // The feed with its type filter: an event of the type, written through the outbox as a change
  // writes its events (no operation writes pet.adopted: the row is this test's). The endpoint is
  // disabled first, so this event reaches the feed only. The test send is not in it: the feed
  // shows a webhook.test event under its id, never a fake pet.adopted.
  const off = await h.call({
    method: 'PATCH', url: `/v1/webhooks/${endpoint.id}`, key: staff.key, payload: { status: 'disabled' }
  })
  assert.equal(off.statusCode, 200)
  const draft = exampleDraft(ADOPTED as EventType, staff.id)
  const eventId = await h.stores.webhooks.queueTest(endpoint.id, draft, Date.now())
  for (const filter of [ADOPTED, 'pet.*']) {
    const feed = await feedOf(h, filter, staff.key) as Array<{ id: string; createdAt: string }>
    assert.deepEqual(feed, [
      { id: eventId, type: ADOPTED, createdAt: feed[0]?.createdAt, data: EXAMPLE }
    ], `the feed, filtered on ${filter}`)
    assert.notEqual(feed[0]?.id, testId)
  }
  const tests = await feedOf(h, 'webhook.test', staff.key) as Array<{ id: string }>
  assert.deepEqual(tests.map((e) => e.id), [testId], 'the test send is a webhook.test event in the feed')
})
