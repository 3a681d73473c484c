// The public contract of events (docs/product.md, "Events"): the Event record, one schema per
// type (a union keyed by `type`), the feed's query and the known type names, which webhook
// subscriptions validate against too.
import { Type, type Static, type TSchema } from 'typebox'
import { CategorySchema } from '../categories/categories.schema.ts'
import { InventoryItemSchema } from '../inventory/inventory.schema.ts'
import { ApiKeySchema, RevokedApiKeySchema } from '../keys/keys.schema.ts'
import { OrderSchema } from '../orders/orders.schema.ts'
import { PetSchema } from '../pets/pets.schema.ts'
import { Int64, NO_CONTROLS, paramDescription, StringEnum } from '../shared/schemas.ts'

const DeletedSchema = (what: string) => Type.Object({ id: Int64({ description: `The id the ${what} had.` }) }, {
  title: `Deleted${what[0]!.toUpperCase()}${what.slice(1)}`,
  additionalProperties: false,
  description: `The ${what} that was deleted.`,
  examples: [{ id: 13 }]
})
const At = (description: string) => Type.String({ format: 'date-time', description })

const KeyBanDataSchema = Type.Object({
  keyId: Int64({ description: 'The key (its quota identity) the ban is on.' }),
  until: Type.Union([At('key.banned: when the ban will end; key.unbanned: when it was lifted, its actual end (ISO 8601, UTC).'), Type.Null()]),
  strike: Type.Integer({ minimum: 0, description: 'How many bans in a row this one is: 1 for a 15 minute ban, one more for each ban started within 24 hours of the previous one (0: a ban recorded before strikes were kept).' })
}, { title: 'KeyBanEventData', additionalProperties: false, description: 'A ban that starts (key.banned, dated when it started) or that an admin or the command line lifts (key.unbanned). A ban that simply runs out writes no key.unbanned: its end is already known from key.banned.', examples: [{ keyId: 1, until: '2026-11-21T12:15:00.000Z', strike: 1 }] })

const QuotaThresholdDataSchema = Type.Object({
  keyId: Int64({ description: 'The key (its quota identity).' }),
  window: StringEnum(['day'] as const, { description: 'The quota window.' }),
  limit: Type.Integer({ minimum: 0, description: 'Requests allowed in the window.' }),
  used: Type.Integer({ minimum: 0, description: 'Requests of the key (its rotation chain) counted that UTC day by the usage flush that passed the threshold: answered 2xx to 4xx, 429 excepted.' }),
  percent: Type.Integer({ description: 'The threshold passed: 80, 95 or 100.' })
}, {
  title: 'QuotaThresholdEventData',
  additionalProperties: false,
  description: 'A key passed a share of its day quota (once per threshold, key and UTC day; an enterprise key without a day quota never does). Written by the usage flush, within seconds of the request that passed it.',
  examples: [{ keyId: 1, window: 'day', limit: 1000, used: 800, percent: 80 }]
})

const DeprecationUsedDataSchema = Type.Object({
  keyId: Int64({ description: 'The key (its quota identity) that called.' }),
  operationId: Type.String({ description: 'The deprecated operation.' }),
  sunset: Type.Union([At('When the operation stops answering (ISO 8601, UTC).'), Type.Null()]),
  successor: Type.Union([Type.String({ description: 'What to call instead.' }), Type.Null()]),
  calls: Type.Integer({ minimum: 1, description: 'Calls of the operation counted that UTC day when the event was written (the usage flush that first saw one, within seconds of the call).' }),
  day: Type.String({ description: 'The UTC day, YYYY-MM-DD.' })
}, {
  title: 'DeprecationUsedEventData',
  additionalProperties: false,
  description: 'A key called a deprecated operation (once per key, operation and UTC day). Written by the usage flush, within seconds of the first call.',
  examples: [{ keyId: 1, operationId: 'getPet', sunset: '2027-05-21T00:00:00.000Z', successor: 'GET /v1/pets?id={petId}', calls: 3, day: '2026-11-21' }]
})

const WebhookDataSchema = Type.Object({}, { title: 'WebhookEventData', additionalProperties: true, description: 'The webhook endpoint concerned (see the webhook operations).', examples: [{}] })

/** Every event type and the schema of its `data`, by family. Order: the document's. */
const DATA: Record<string, TSchema> = {
  'order.created': OrderSchema,
  'order.updated': OrderSchema,
  'order.completed': OrderSchema,
  'order.cancelled': OrderSchema,
  'order.expired': OrderSchema,
  'pet.created': PetSchema,
  'pet.updated': PetSchema,
  'pet.deleted': DeletedSchema('pet'),
  'category.created': CategorySchema,
  'category.updated': CategorySchema,
  'category.deleted': DeletedSchema('category'),
  'inventory.updated': InventoryItemSchema,
  'inventory.low': InventoryItemSchema,
  'key.created': ApiKeySchema,
  'key.updated': ApiKeySchema,
  'key.rotated': ApiKeySchema,
  'key.revoked': RevokedApiKeySchema,
  'key.expiring': ApiKeySchema,
  'key.banned': KeyBanDataSchema,
  'key.unbanned': KeyBanDataSchema,
  'quota.threshold': QuotaThresholdDataSchema,
  'deprecation.used': DeprecationUsedDataSchema,
  'webhook.test': WebhookDataSchema,
  'webhook.disabled': WebhookDataSchema
}

/** The known event types, in the document's order. */
export const EVENT_TYPES = Object.keys(DATA)
export type EventType = string
/** The families (`order` of `order.created`): `order.*` selects one. */
export const EVENT_FAMILIES = [...new Set(EVENT_TYPES.map((type) => type.slice(0, type.indexOf('.'))))]

export const EVENT_ID_PATTERN = '^evt_[0-9a-f]{32}$'
const EventId = Type.String({ pattern: EVENT_ID_PATTERN, description: 'Unique event id: `evt_` and 32 lowercase hex digits; the same in this feed and in every webhook delivery of the event (`webhook-id`).' })

const titleOf = (type: string): string => `${type.split(/[._]/).map((part) => part[0]!.toUpperCase() + part.slice(1)).join('')}Event`

function eventBranch (type: string, data: TSchema) {
  return Type.Object({
    id: EventId,
    type: StringEnum([type] as const, { description: 'The event type.' }),
    createdAt: At('When the change was made (ISO 8601, UTC): the instant of its transaction.'),
    data
  }, { title: titleOf(type), additionalProperties: false, description: `A \`${type}\` event.` })
}

const EVENT_EXAMPLE = { id: 'evt_6f1c2b3a4d5e4f60718293a4b5c6d7e8', type: 'pet.created', createdAt: '2026-11-21T12:00:00.000Z', data: { id: 1, name: 'Rex', categoryId: 1, status: 'available' } }

/** The Event record: `data` is the resource as a GET of it answered at that moment, or the small object of its type. */
export interface ApiEvent { id: string; type: EventType; createdAt: string; data: unknown }

export const EventSchema = Type.Unsafe<ApiEvent>({
  type: 'object',
  oneOf: EVENT_TYPES.map((type) => eventBranch(type, DATA[type]!)),
  discriminator: { propertyName: 'type' },
  title: 'Event',
  description: 'Something that changed, written in the same transaction as the change. `data` depends on `type`: the order, pet, category, inventory item or key (without its secret) as a GET of it would have answered at that moment, `{ "id" }` for a deletion, or the small object of a key, quota, deprecation or webhook event.',
  examples: [EVENT_EXAMPLE]
})

export const EventsSchema = Type.Array(EventSchema, { title: 'Events', description: 'An array of Event objects, oldest first.', examples: [[EVENT_EXAMPLE]] })

export const EventIdParams = Type.Object({
  eventId: Type.String({ pattern: EVENT_ID_PATTERN, description: 'The event id (`evt_` and 32 lowercase hex digits).', examples: [EVENT_EXAMPLE.id] })
}, { additionalProperties: false })

/** One type name, or a family followed by `.*`, as the `type` filter takes them. */
const TYPE_LIST_PATTERN = '^[a-z_]+\\.[a-z_*]+(,[a-z_]+\\.[a-z_*]+)*$'

export const EventListQuery = Type.Object({
  type: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 1000,
    pattern: TYPE_LIST_PATTERN,
    description: `Only these types: a comma-separated list of type names (\`order.created\`) and families (\`order.*\`: every type that starts with \`order.\`). An unknown name is \`400 validation_failed\`. The known types: ${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}.`,
    examples: ['order.*,pet.created']
  })),
  limit: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 20,
    description: paramDescription('Page size, 1 to 100.'),
    examples: [20]
  })),
  // The example is the cursor of "before the first event": a real cursor.
  cursor: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 200,
    pattern: NO_CONTROLS,
    description: 'Opaque cursor from the `Link: rel="next"` header of the previous page; without it, the feed starts at the oldest event kept.',
    examples: ['djE6MDow']
  }))
}, { additionalProperties: false })
export type EventListQuery = Static<typeof EventListQuery>

/** The feed's Link: on every page, so that a consumer polls it for what comes later. */
export const FeedLinkHeader = { link: Type.String({ description: 'The next page, as `<URL>; rel="next"`: on every page, the last and empty ones included. Poll it for events that come later; it keeps `type` and `limit`.' }) }
