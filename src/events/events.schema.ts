// The public contract of events (docs/product.md, "Events"): the Event record, one schema per
// type (a union keyed by `type`, built from the catalogue's rows), the feed's query, and the
// list of types (GET /v1/event_types).
import { Type, type Static, type TSchema } from 'typebox'
import { NO_CONTROLS, paramDescription, StringEnum } from '../shared/schemas.ts'
import { eventTypeRow, eventTypes, exampleOf } from './catalogue.ts'

export const EVENT_ID_PATTERN = '^evt_[0-9a-f]{32}$'
const EventId = Type.String({ pattern: EVENT_ID_PATTERN, description: 'Unique event id: `evt_` and 32 lowercase hex digits; the same in this feed and in every webhook delivery of the event (`webhook-id`).' })

const At = (description: string) => Type.String({ format: 'date-time', description })

/** The name of a type's Event schema in the document (`OrderCreatedEvent`); x-webhooks reads its data. */
export const eventTitleOf = (type: string): string =>
  `${type.split(/[._]/).map((part) => part[0]!.toUpperCase() + part.slice(1)).join('')}Event`

function eventBranch (type: string, data: TSchema, description: string) {
  return Type.Object({
    id: EventId,
    type: StringEnum([type] as const, { description: 'The event type.' }),
    createdAt: At('When the change was made (ISO 8601, UTC): the instant of its transaction.'),
    data
  }, { title: eventTitleOf(type), additionalProperties: false, description: `A \`${type}\` event: ${description}` })
}

const EVENT_EXAMPLE = {
  id: 'evt_01a1fdfa46001c3a4d5e4f60718293a4',
  type: 'pet.created',
  createdAt: '2026-11-21T12:00:00.000Z',
  data: exampleOf('pet.created')
}

/**
 * The Event record: `data` is the resource as a GET of it answered at that moment, or the small
 * object of its type. `type` is the stored name, which an older row may hold though the
 * catalogue dropped it.
 */
export interface ApiEvent { id: string; type: string; createdAt: string; data: unknown }

export const EventSchema = Type.Unsafe<ApiEvent>({
  type: 'object',
  oneOf: eventTypes().map((type) => {
    const { data, description } = eventTypeRow(type)!
    return eventBranch(type, data, description)
  }),
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
    description: `Only these types: a comma-separated list of type names (\`order.created\`) and families (\`order.*\`: every type that starts with \`order.\`). An unknown name is \`400 validation_failed\`. The known types: ${eventTypes().map((t) => `\`${t}\``).join(', ')}; \`GET /v1/event_types\` describes each.`,
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

/** One type of GET /v1/event_types: the catalogue's row as a receiver needs it. */
export const EventTypeInfoSchema = Type.Object({
  type: Type.String({ description: 'The type name, as events and deliveries carry it in `type`.', examples: ['order.created'] }),
  family: Type.String({ description: 'Its family: `order.*` subscribes to (or filters on) every type of the family.', examples: ['order'] }),
  description: Type.String({ description: 'What the event reports, and when it is written.' }),
  schema: Type.Object({}, {
    additionalProperties: true,
    description: 'The JSON Schema of the event\'s `data` (the one the API description declares for this type).'
  }),
  example: Type.Unsafe<unknown>({ description: 'An example of `data`, valid against `schema`; a test send (`POST /v1/webhooks/{webhookId}/test`) delivers it.' })
}, {
  title: 'EventTypeInfo',
  additionalProperties: false,
  description: 'An event type the caller may receive, from the event catalogue.'
})
export type EventTypeInfo = Static<typeof EventTypeInfoSchema>

export const EventTypesSchema = Type.Array(EventTypeInfoSchema, {
  title: 'EventTypes',
  description: 'The event types the caller may receive (in the feed and at its webhook endpoints), in the catalogue\'s order.',
  examples: [[{
    type: 'pet.created',
    family: 'pet',
    description: eventTypeRow('pet.created')!.description,
    schema: JSON.parse(JSON.stringify(eventTypeRow('pet.created')!.data)) as Record<string, unknown>,
    example: exampleOf('pet.created')
  }]]
})
