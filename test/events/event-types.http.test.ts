// GET /v1/event_types and the document, derived from the event catalogue (issue 49 sections 2
// and 3), on both engines: each role gets the types it may receive with description, schema and
// an example valid against it; the document's Event union and x-webhooks name every catalogue
// type, deliveries carrying the event id; and event ids are time-ordered whoever writes them
// (on PostgreSQL, place_order and sweep_expired_orders write theirs in PL/pgSQL).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Ajv } from 'ajv'
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats'
import { eventTypeRow, eventTypes, typesFor } from '../../src/events/catalogue.ts'
import { eventTitleOf } from '../../src/events/events.schema.ts'
import type { StoredEvent } from '../../src/events/events.store.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'

const addFormats =
  ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin
const MINUTE = 60_000

interface EventTypeInfo { type: string; family: string; description: string; schema: object; example: unknown }

test('GET /v1/event_types lists the types each role may receive, with description, data schema and an example valid against it', async (t) => {
  const h = await buildTestApp(t)
  const ajv = new Ajv({ strict: false, allErrors: true })
  addFormats(ajv)
  for (const role of ['customer', 'staff', 'admin'] as const) {
    const res = await h.call({ method: 'GET', url: '/v1/event_types', role })
    assert.equal(res.statusCode, 200, res.body)
    const items = res.json() as EventTypeInfo[]
    assert.deepEqual(items.map((i) => i.type), typesFor(role), role)
    for (const item of items) {
      const row = eventTypeRow(item.type)!
      assert.equal(item.family, item.type.split('.')[0])
      assert.equal(item.description, row.description)
      // Fault caught: a schema that loses its keywords on the way out (serialized as {}).
      assert.deepEqual(item.schema, JSON.parse(JSON.stringify(row.data)), `${item.type}: the catalogue's schema`)
      const valid = ajv.compile(item.schema)
      assert.ok(valid(item.example), `${item.type}: ${ajv.errorsText(valid.errors)}`)
    }
  }
  assert.ok(!typesFor('customer').includes('pet.created'), 'a customer is not offered the catalogue\'s events')
  // Charged like any read: unknown query parameters refused like elsewhere.
  const odd = await h.call({ method: 'GET', url: '/v1/event_types?family=order', role: 'customer' })
  assert.equal(odd.statusCode, 400)
  assert.equal(odd.json().code, 'validation_failed')
})

test('GET /v1/event_types is charged like any read', async (t) => {
  const h = await buildTestApp(t)
  const customer = await h.makeKey('customer', 'enterprise', { perMinute: 2, perDay: 100 })
  const answers = []
  for (let i = 0; i < 3; i++) answers.push((await h.call({ method: 'GET', url: '/v1/event_types', key: customer.key })).statusCode)
  assert.deepEqual(answers, [200, 200, 429])
})

test('unknown types point to GET /v1/event_types, in the feed\'s filter and in a subscription', async (t) => {
  const h = await buildTestApp(t)
  const feed = await h.call({ method: 'GET', url: '/v1/events?type=order.craeted', role: 'customer' })
  assert.equal(feed.statusCode, 400)
  assert.match(feed.json().message, /GET \/v1\/event_types lists them/)
  const hook = await h.call({
    method: 'POST', url: '/v1/webhooks', role: 'customer', payload: { url: 'https://93.184.215.14/hook', types: ['order.craeted'] }
  })
  assert.equal(hook.statusCode, 400)
  assert.match(hook.json().details[0].message, /GET \/v1\/event_types lists them/)
})

interface Doc {
  paths: Record<string, Record<string, { operationId: string; 'x-required-scopes'?: string[] }>>
  components: { schemas: Record<string, { description?: string; properties?: Record<string, unknown> }> }
  'x-webhooks': Record<string, { post: { description: string; requestBody: { content: { 'application/json': { schema: Body } } } } }>
}

interface Body { required: string[]; properties: Record<string, unknown> }

test('the document: one Event schema and one x-webhooks delivery per catalogue type, the delivery with the event id', async (t) => {
  const h = await buildTestApp(t)
  const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc
  assert.deepEqual(Object.keys(doc['x-webhooks']), eventTypes())
  for (const type of eventTypes()) {
    const row = eventTypeRow(type)!
    const branch = doc.components.schemas[eventTitleOf(type)]
    assert.ok(branch?.description?.includes(row.description), `${type}: its Event schema, described by its row`)
    const delivery = doc['x-webhooks'][type]!.post
    assert.ok(delivery.description.startsWith(row.description), `${type}: its delivery, described by its row`)
    const body = delivery.requestBody.content['application/json'].schema
    assert.deepEqual(body.required, ['id', 'type', 'timestamp', 'data'])
    assert.deepEqual(body.properties.data, branch!.properties!.data, `${type}: the delivery's data is the event's`)
  }
  const operation = doc.paths['/event_types']?.get
  assert.equal(operation?.operationId, 'listEventTypes')
  assert.deepEqual(operation['x-required-scopes'], ['catalog:read', 'orders:read', 'inventory:read', 'keys:admin'])
})

/**
 * Every event in the feed once it holds each of `types` (PostgreSQL's feed shows an event only
 * when every older transaction of the cluster has ended: another test file's open transaction
 * can hold the last ones back for a while, so a count of events is not enough to wait for).
 */
async function eventsOnce (h: TestApp, types: string[]): Promise<StoredEvent[]> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const events = await h.stores.events.listEvents({ visibility: { role: 'admin' }, after: null, limit: 100 })
    if (types.every((type) => events.some((e) => e.type === type)) || Date.now() > deadline) return events
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** The millisecond an event id starts with: `evt_` and 12 hex digits of it. */
const instantOf = (id: string): number => Number.parseInt(id.slice(4, 16), 16)

test('event ids are time-ordered whoever writes them: order.created, inventory.low and order.expired included', async (t) => {
  // Faults caught (PostgreSQL): place_order or sweep_expired_orders writing `evt_` and a random
  // UUID, whose first 12 digits are no instant.
  const from = Date.now()
  const h = await buildTestApp(t, { env: { INVENTORY_LOW_THRESHOLD: '2' } })
  const category = (await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })).json()
  const pet = (await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Goldie', categoryId: category.id } })).json()
  assert.equal((await h.call({ method: 'PUT', url: `/v1/store/inventory/${pet.id}`, role: 'staff', payload: { quantity: 4 } })).statusCode, 200)
  const customer = await h.makeKey('customer', 'pro')
  const placed = await h.call({ method: 'POST', url: '/v1/store/orders', key: customer.key, payload: { petId: pet.id, quantity: 2 } })
  assert.equal(placed.statusCode, 201, placed.body)
  // The hold runs out; staff's next order sweeps the lapsed one first (order.expired).
  h.clock.set(T0 + 31 * MINUTE)
  const again = await h.call({ method: 'POST', url: '/v1/store/orders', role: 'staff', payload: { petId: pet.id, quantity: 1 } })
  assert.equal(again.statusCode, 201, again.body)
  const expected = ['order.created', 'inventory.low', 'order.expired']
  const events = await eventsOnce(h, expected)
  const to = Date.now()
  const written = events.map((e) => e.type)
  for (const type of expected) assert.ok(written.includes(type), `${type} written: ${written.join(', ')}`)
  for (const event of events) {
    assert.match(event.id, /^evt_[0-9a-f]{32}$/)
    const at = instantOf(event.id)
    assert.ok(at >= from && at <= to, `${event.type} ${event.id}: made between ${from} and ${to}, not at ${at}`)
  }
})
