// The event catalogue (events/catalogue.ts, issue 49 section 3): each row's example is valid
// against its data schema, a misspelt type fails the type check, the audit mapping and the
// audience rules come from the rows, and the events PL/pgSQL writes (place_order,
// sweep_expired_orders) are catalogue types with the row's audience and TypeScript's id form.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Ajv } from 'ajv'
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats'
import {
  auditActionOf,
  eventDraft,
  eventTypeRow,
  eventTypes,
  exampleDraft,
  exampleOf,
  mayEverSee,
  maySee,
  typeFilterOf,
  typesFor,
  viewOf,
  type EventType
} from '../../src/events/catalogue.ts'
import { parseTypeFilter } from '../../src/events/events.service.ts'
import { POSTGRES_MIGRATIONS } from '../../src/storage/postgres/migrations.ts'

// ajv-formats is CommonJS with a default export; under Node's ESM loader it arrives wrapped.
const addFormats =
  ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin

test('every type\'s example is valid against its data schema, and a test send stores what reads as the example', () => {
  const ajv = new Ajv({ strict: false, allErrors: true })
  addFormats(ajv)
  assert.equal(eventTypes().length, 24)
  for (const type of eventTypes()) {
    const row = eventTypeRow(type)!
    const valid = ajv.compile(row.data)
    assert.ok(valid(exampleOf(type)), `${type}: ${ajv.errorsText(valid.errors)}`)
    assert.ok(row.description.length > 0, `${type} is described`)
    // Fault caught: a test send that stores the API's shape, which the view then renders again.
    const draft = exampleDraft(type, 7)
    assert.deepEqual({ ...draft, data: viewOf(draft.type, draft.data) }, {
      type, audience: row.audience, subjectKeyId: 7, data: exampleOf(type)
    })
  }
})

test('a misspelt type fails the type check (and, were it forced through, the draft)', () => {
  // @ts-expect-error 'order.craeted' is no EventType: tsc fails if this line compiles.
  assert.throws(() => eventDraft('order.craeted', null, {}))
  const known: EventType = 'order.created'
  assert.equal(eventDraft(known, 3, {}).audience, 'order')
})

test('the audit mapping is the rows\': each audited change\'s action, none for purchases and notices', () => {
  const audited = Object.fromEntries(eventTypes().flatMap((type) => {
    const action = auditActionOf(type)
    return action === null ? [] : [[type, action]]
  }))
  assert.deepEqual(audited, {
    'order.updated': 'order.update',
    'order.completed': 'order.complete',
    'order.cancelled': 'order.cancel',
    'pet.created': 'pet.create',
    'pet.updated': 'pet.update',
    'pet.deleted': 'pet.delete',
    'category.created': 'category.create',
    'category.updated': 'category.update',
    'category.deleted': 'category.delete',
    'inventory.updated': 'inventory.update',
    'key.created': 'key.create',
    'key.updated': 'key.update',
    'key.rotated': 'key.rotate',
    'key.revoked': 'key.revoke',
    'key.banned': 'key.ban',
    'key.unbanned': 'key.unban',
    'webhook.disabled': 'webhook.disable'
  })
  assert.equal(auditActionOf('pet.adopted'), null, 'an unknown type is audited as nothing')
})

test('audiences: a customer receives its orders\', key\'s and webhooks\' types; staff and admin every type', () => {
  const customer = typesFor('customer')
  assert.deepEqual(customer.filter((type) => !/^(order|key|quota|deprecation|webhook)\./.test(type)), [])
  assert.ok(customer.includes('order.created') && customer.includes('quota.threshold') && customer.includes('webhook.test'))
  assert.deepEqual(typesFor('staff'), eventTypes())
  assert.deepEqual(typesFor('admin'), eventTypes())
  assert.equal(mayEverSee('customer', 'pet.*'), false)
  assert.equal(mayEverSee('customer', 'order.*'), true)
  assert.equal(mayEverSee('staff', 'key.revoked'), true)
  assert.equal(mayEverSee('admin', 'pet.adopted'), false, 'an unknown type: never')
  const mine = { audience: 'key' as const, subjectKeyId: 5 }
  assert.equal(maySee({ role: 'customer', keyId: 5 }, mine), true)
  assert.equal(maySee({ role: 'customer', keyId: 6 }, mine), false)
  assert.equal(maySee({ role: 'staff', keyId: 6 }, mine), false, 'staff sees another key\'s key events only as admin')
  assert.equal(maySee({ role: 'staff', keyId: 6 }, { audience: 'catalog', subjectKeyId: null }), true)
})

test('one parser of names and families: the feed\'s filter and a subscription\'s agree', () => {
  const patterns = ['order.*', 'pet.created', 'key.*']
  assert.deepEqual(parseTypeFilter(patterns.join(',')), typeFilterOf(patterns))
  assert.deepEqual(typeFilterOf(patterns), { exact: ['pet.created'], prefixes: ['order.', 'key.'] })
  assert.throws(() => parseTypeFilter('order.craeted'), /GET \/v1\/event_types lists them/)
  assert.throws(() => parseTypeFilter('orders.*'), /unknown event type "orders\.\*"/)
})

/**
 * The body of the last definition of each PostgreSQL function, in migration order, by name and
 * number of parameters: an overload is a function of its own (place_order's fifteen-parameter
 * form calls the sixteen-parameter one, migration 29).
 */
function currentFunctions (): Map<string, { name: string; body: string }> {
  const bodies = new Map<string, { name: string; body: string }>()
  const definition = /CREATE (?:OR REPLACE )?FUNCTION (\w+) \(([^)]*)\)([\s\S]*?)\$fn\$;/g
  for (const migration of POSTGRES_MIGRATIONS) {
    for (const match of migration.matchAll(definition)) {
      const parameters = match[2]!.trim() === '' ? 0 : match[2]!.split(',').length
      bodies.set(`${match[1]!}/${parameters}`, { name: match[1]!, body: match[3]! })
    }
  }
  return bodies
}

/** Each event a piece of SQL inserts: its id expression, type and audience. */
function insertedEvents (sql: string): Array<{ id: string; type: string; audience: string }> {
  const insert = /INSERT INTO events \(id, type, created_at, audience, subject_key_id, data\)\s+(?:VALUES \(|SELECT )(.*?), '([a-z_]+\.[a-z_]+)', \w+, '([a-z_]+)'/gs
  return [...sql.matchAll(insert)].map((m) => ({ id: m[1]!, type: m[2]!, audience: m[3]! }))
}

test('PL/pgSQL writes only catalogue types, each with its row\'s audience, and ids of TypeScript\'s form', () => {
  const written = [...currentFunctions().values()]
    .flatMap(({ name, body }) => insertedEvents(body).map((e) => ({ name, ...e })))
  // Fault caught: a parser that finds nothing would pass everything below.
  assert.deepEqual(written.map((e) => `${e.name} ${e.type}`).sort(), [
    'place_order inventory.low',
    'place_order order.created',
    'sweep_expired_orders order.expired'
  ])
  for (const event of written) {
    assert.equal(eventTypeRow(event.type)?.audience, event.audience, `${event.name}: ${event.type} is a catalogue type with its audience`)
    // new_event_id() makes TypeScript's form; an order's own event takes the id the app sent.
    const expected = event.type === 'order.created' ? 'coalesce(p_event_id, new_event_id())' : 'new_event_id()'
    assert.equal(event.id, expected, `${event.name}: ${event.type} gets a time-ordered id`)
  }
  // Every migration, old ones included, only ever wrote catalogue types.
  for (const event of POSTGRES_MIGRATIONS.flatMap(insertedEvents)) assert.ok(eventTypeRow(event.type), event.type)
  // The audiences the events table accepts include every row's.
  const check = /CONSTRAINT events_audience_check CHECK \(audience IN \(([^)]*)\)\)/.exec(POSTGRES_MIGRATIONS.join('\n'))
  const allowed = check![1]!.split(', ').map((a) => a.slice(1, -1))
  for (const type of eventTypes()) assert.ok(allowed.includes(eventTypeRow(type)!.audience), type)
})
