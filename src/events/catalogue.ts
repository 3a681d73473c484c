// The event catalogue (docs/product.md, events; issue 49 section 3): every event type, declared
// once, with who may see it, the schema of its data, a documented example, what it means and the
// audit action it records. Everything else is derived from these rows: the document's Event
// schema and `x-webhooks`, GET /v1/event_types, the feed's type filter, webhook subscriptions,
// visibility, the audit mapping, the rendering of stored data and test sends. A new type is one
// row of ROWS; a misspelt type name fails the type check (EventType is the union of the names).
//
// PostgreSQL's place_order and sweep_expired_orders write order.created, inventory.low and
// order.expired in PL/pgSQL (storage/postgres/migrations.ts); test/events/catalogue.test.ts
// holds their names and audiences against these rows.
import { Type, type Static, type TSchema } from 'typebox'
import type { Role } from '../accounts/plans.ts'
import { CategorySchema } from '../categories/categories.schema.ts'
import type { CategoryRecord } from '../categories/categories.store.ts'
import { toPublicCategory } from '../categories/categories.view.ts'
import { InventoryItemSchema } from '../inventory/inventory.schema.ts'
import type { InventoryRecord } from '../inventory/inventory.store.ts'
import { toPublicInventory } from '../inventory/inventory.view.ts'
import { ApiKeySchema, RevokedApiKeySchema } from '../keys/keys.schema.ts'
import type { KeyState } from '../keys/keys.service.ts'
import { toApiKey } from '../keys/keys.view.ts'
import { OrderSchema } from '../orders/orders.schema.ts'
import type { OrderRecord } from '../orders/orders.store.ts'
import { toPublicOrder } from '../orders/orders.view.ts'
import { PetSchema } from '../pets/pets.schema.ts'
import type { PetRecord } from '../pets/pets.store.ts'
import { toPublicPet } from '../pets/pets.view.ts'
import { Int64, StringEnum } from '../shared/schemas.ts'
import { DisabledReasonSchema, WebhookSchema } from './webhook.schema.ts'

/**
 * Which rule of visibility an event falls under: staff sees `order`, `catalog` and `inventory`
 * events whatever their subject; a customer sees its own key's `order`, `key` and `webhook`
 * events; an admin sees everything (docs/product.md 12.4).
 */
export type EventAudience = 'order' | 'catalog' | 'inventory' | 'key' | 'webhook'

/** Audiences staff sees whatever the subject (and, of the others, those about its own key). */
export const STAFF_AUDIENCES: readonly EventAudience[] = ['order', 'catalog', 'inventory']
/** Audiences a customer sees, of its own key's events only. */
export const CUSTOMER_AUDIENCES: readonly EventAudience[] = ['order', 'key', 'webhook']

/** One event type as the catalogue declares it. */
export interface EventTypeRow {
  audience: EventAudience
  /** The schema of the event's `data`, as the API shows it (a GET's view of the resource). */
  data: TSchema
  /** What the event means and when it is written, for the document and GET /v1/event_types. */
  description: string
  /** The audit log's action for the change it reports (docs/product.md 14.1); null: not audited. */
  audit: string | null
  /**
   * The stored data to the API's shape, when read (the feature's own view): the store keeps the
   * record it knew (an OrderRecord, a KeyState …). The identity for types that store their final
   * object.
   */
  view: (stored: unknown) => unknown
  /** The example as stored: `view(stored)` is the documented example, valid against `data`. */
  stored: unknown
}

/** A row whose store writes the final object: the example is the data itself. */
export function eventRow<S extends TSchema> (spec: {
  audience: EventAudience
  data: S
  description: string
  audit: string | null
  example: Static<S>
}): EventTypeRow {
  const { example, ...rest } = spec
  return { ...rest, view: (stored) => stored, stored: example }
}

/** A row whose store writes its record, rendered with the feature's view when read. */
export function viewedEventRow<S extends TSchema, R> (spec: {
  audience: EventAudience
  data: S
  description: string
  audit: string | null
  view: (record: R) => Static<S>
  /** A record as the store writes it; its view is the documented example. */
  example: R
}): EventTypeRow {
  const { example, view, ...rest } = spec
  return { ...rest, view: (stored) => view(stored as R), stored: example }
}

const At = (description: string) => Type.String({ format: 'date-time', description })

const DeletedSchema = (what: string) => Type.Object({ id: Int64({ description: `The id the ${what} had.` }) }, {
  title: `Deleted${what[0]!.toUpperCase()}${what.slice(1)}`,
  additionalProperties: false,
  description: `The ${what} that was deleted.`,
  examples: [{ id: 13 }]
})

const KeyBanDataSchema = Type.Object({
  keyId: Int64({ description: 'The key (its quota identity) the ban is on.' }),
  until: Type.Union([
    At('key.banned: when the ban will end; key.unbanned: when it was lifted, its actual end (ISO 8601, UTC).'),
    Type.Null()
  ]),
  strike: Type.Integer({ minimum: 0, description: 'How many bans in a row this one is: 1 for a 15 minute ban, one more for each ban started within 24 hours of the previous one (0: a ban recorded before strikes were kept).' })
}, {
  title: 'KeyBanEventData',
  additionalProperties: false,
  description: 'A ban that starts (key.banned, dated when it started) or that an admin or the command line lifts (key.unbanned). A ban that simply runs out writes no key.unbanned: its end is already known from key.banned.',
  examples: [{ keyId: 1, until: '2026-11-21T12:15:00.000Z', strike: 1 }]
})

const QuotaThresholdDataSchema = Type.Object({
  keyId: Int64({ description: 'The key (its quota identity).' }),
  window: StringEnum(['day'] as const, { description: 'The quota window.' }),
  limit: Type.Integer({ minimum: 0, description: 'Requests allowed in the window.' }),
  used: Type.Integer({ minimum: 0, description: 'Requests of the key (its rotation chain) counted that UTC day by the usage flush that passed the threshold: charged to its windows, whatever the answer.' }),
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

const WEBHOOK_EXAMPLE: Static<typeof WebhookSchema> = {
  id: 'wh_5f0c6b1e8d2a4c7b9e3f1a20',
  url: 'https://hooks.partner.example/petstore',
  types: ['order.*'],
  status: 'enabled',
  ownerKeyId: 1,
  createdAt: '2026-11-21T12:00:00.000Z',
  updatedAt: '2026-11-21T12:00:00.000Z'
}

const WebhookTestDataSchema = Type.Object({
  webhookId: Type.String({ description: 'The endpoint the test was sent to.' }),
  url: Type.String({ description: 'Its URL when the test was asked for.' }),
  sentAt: At('When the test was asked for (ISO 8601, UTC).')
}, {
  title: 'WebhookTestEventData',
  additionalProperties: false,
  description: 'A test delivery asked for by `POST /v1/webhooks/{webhookId}/test`.',
  examples: [{ webhookId: WEBHOOK_EXAMPLE.id, url: WEBHOOK_EXAMPLE.url, sentAt: '2026-11-21T12:00:00.000Z' }]
})

const WebhookDisabledDataSchema = Type.Object({
  ...WebhookSchema.properties,
  reason: DisabledReasonSchema
}, {
  title: 'WebhookDisabledEventData',
  additionalProperties: false,
  description: 'The endpoint as a GET of it answers, disabled, and why.',
  examples: [{ ...WEBHOOK_EXAMPLE, status: 'disabled', reason: 'failing' }]
})

// The stored examples: records as the stores write them, whose views are the documented examples.
const T0 = Date.parse('2026-11-21T12:00:00.000Z')
const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
const ORDER: OrderRecord = {
  id: 1,
  petId: 10,
  quantity: 2,
  shipDate: null,
  complete: false,
  ownerKeyId: 1,
  createdAt: T0,
  expiresAt: T0 + 30 * MINUTE,
  version: 1
}
const PET: PetRecord = { id: 1, name: 'Rex', categoryId: 1, status: 'available', version: 1 }
const CATEGORY: CategoryRecord = { id: 1, name: 'Dogs', description: 'Loyal companions of every size.', version: 1 }
const STOCK: InventoryRecord = { petId: 10, quantity: 12, status: 'available', version: 3 }
const KEY: KeyState = {
  record: {
    id: 1,
    name: 'sample customer',
    role: 'customer',
    plan: 'free',
    perMinute: null,
    perDay: null,
    prefix: 'psk_Zc4Lq8VnT2bW',
    createdAt: T0,
    revokedAt: null,
    expiresAt: null,
    replaces: null,
    replacedBy: null,
    quotaKeyId: 1,
    lastUsedAt: T0 + 12 * MINUTE,
    version: 1,
    scopes: null
  },
  ban: null,
  lastUsedAt: T0 + 12 * MINUTE
}
const ROTATED_KEY: KeyState = {
  ...KEY,
  record: { ...KEY.record, id: 2, prefix: 'psk_Qm8Rt3VxN7cY', replaces: 1, lastUsedAt: null },
  lastUsedAt: null
}
const EXPIRING_KEY: KeyState = { ...KEY, record: { ...KEY.record, expiresAt: T0 + 7 * DAY } }
const REVOKED_KEY = { ...KEY, record: { ...KEY.record, revokedAt: T0 + 60 * MINUTE, version: 2 }, reason: 'requested' as const }

/**
 * Every event type, in the document's order. Audit actions are the type as a verb; a notice or a
 * customer's own purchase is no change anyone audits (docs/product.md 14.2).
 */
const ROWS = {
  'order.created': viewedEventRow({
    audience: 'order', data: OrderSchema, view: toPublicOrder, example: ORDER, audit: null,
    description: 'An order was placed: its stock is held until `expiresAt`. A purchase, not audited.'
  }),
  'order.updated': viewedEventRow({
    audience: 'order', data: OrderSchema, view: toPublicOrder, example: { ...ORDER, shipDate: T0 + 10 * DAY, version: 2 },
    audit: 'order.update',
    description: 'Staff changed an open order (its ship date or quantity).'
  }),
  'order.completed': viewedEventRow({
    audience: 'order', data: OrderSchema, view: toPublicOrder,
    example: { ...ORDER, shipDate: T0 + 10 * DAY, complete: true, expiresAt: null, version: 2 },
    audit: 'order.complete',
    description: 'Staff completed an order: it will never expire.'
  }),
  'order.cancelled': viewedEventRow({
    audience: 'order', data: OrderSchema, view: toPublicOrder, example: ORDER, audit: 'order.cancel',
    description: 'An open order was cancelled (by its customer or staff) and its stock went back; `data` is the order as it was.'
  }),
  'order.expired': viewedEventRow({
    audience: 'order', data: OrderSchema, view: toPublicOrder, example: ORDER, audit: null,
    description: 'An open order lapsed at `expiresAt` (rule 10) and its stock went back; `data` is the order as it was.'
  }),
  'pet.created': viewedEventRow({
    audience: 'catalog', data: PetSchema, view: toPublicPet, example: PET, audit: 'pet.create',
    description: 'A pet was added to the catalogue.'
  }),
  'pet.updated': viewedEventRow({
    audience: 'catalog', data: PetSchema, view: toPublicPet, example: { ...PET, status: 'pending', version: 2 }, audit: 'pet.update',
    description: 'A pet changed: by staff, or its status by an order taking or returning its last units.'
  }),
  'pet.deleted': eventRow({
    audience: 'catalog', data: DeletedSchema('pet'), example: { id: 13 }, audit: 'pet.delete',
    description: 'A pet was removed from the catalogue.'
  }),
  'category.created': viewedEventRow({
    audience: 'catalog', data: CategorySchema, view: toPublicCategory, example: CATEGORY, audit: 'category.create',
    description: 'A category was added.'
  }),
  'category.updated': viewedEventRow({
    audience: 'catalog', data: CategorySchema, view: toPublicCategory, example: { ...CATEGORY, name: 'Dogs and puppies', version: 2 },
    audit: 'category.update',
    description: 'A category changed.'
  }),
  'category.deleted': eventRow({
    audience: 'catalog', data: DeletedSchema('category'), example: { id: 13 }, audit: 'category.delete',
    description: 'A category was removed.'
  }),
  'inventory.updated': viewedEventRow({
    audience: 'inventory', data: InventoryItemSchema, view: toPublicInventory, example: STOCK, audit: 'inventory.update',
    description: 'Staff set the stock of a pet.'
  }),
  'inventory.low': viewedEventRow({
    audience: 'inventory', data: InventoryItemSchema, view: toPublicInventory, example: { ...STOCK, quantity: 2, version: 4 },
    audit: null,
    description: 'The stock of a pet fell from above the low-stock threshold to at or below it (a notice, not audited).'
  }),
  'key.created': viewedEventRow({
    audience: 'key', data: ApiKeySchema, view: toApiKey, example: KEY, audit: 'key.create',
    description: 'An API key was created (never its secret).'
  }),
  'key.updated': viewedEventRow({
    audience: 'key', data: ApiKeySchema, view: toApiKey, example: { ...KEY, record: { ...KEY.record, name: 'sample shop', version: 2 } },
    audit: 'key.update',
    description: 'An admin changed a key (its name, plan, quotas or expiry).'
  }),
  'key.rotated': viewedEventRow({
    audience: 'key', data: ApiKeySchema, view: toApiKey, example: ROTATED_KEY, audit: 'key.rotate',
    description: 'A key was rotated: `data` is the successor, whose `replaces` names the old key.'
  }),
  'key.revoked': viewedEventRow({
    audience: 'key', data: RevokedApiKeySchema, view: toApiKey, example: REVOKED_KEY, audit: 'key.revoke',
    description: 'A key was revoked (one event per live key of its rotation chain); `reason` says why.'
  }),
  'key.expiring': viewedEventRow({
    audience: 'key', data: ApiKeySchema, view: toApiKey, example: EXPIRING_KEY, audit: null,
    description: 'A key expires in 7 days, or in 1 day (once each; a notice, not audited).'
  }),
  'key.banned': eventRow({
    audience: 'key', data: KeyBanDataSchema, example: { keyId: 1, until: '2026-11-21T12:15:00.000Z', strike: 1 }, audit: 'key.ban',
    description: 'A ban started on a key (its rotation chain) for calling while rate limited.'
  }),
  'key.unbanned': eventRow({
    audience: 'key', data: KeyBanDataSchema, example: { keyId: 1, until: '2026-11-21T12:05:00.000Z', strike: 1 }, audit: 'key.unban',
    description: 'An admin or the command line lifted a ban (a ban that runs out writes none).'
  }),
  'quota.threshold': eventRow({
    audience: 'key', data: QuotaThresholdDataSchema, example: { keyId: 1, window: 'day', limit: 1000, used: 800, percent: 80 },
    audit: null,
    description: 'A key passed 80, 95 or 100% of its day quota (a notice, not audited).'
  }),
  'deprecation.used': eventRow({
    audience: 'key',
    data: DeprecationUsedDataSchema,
    example: { keyId: 1, operationId: 'getPet', sunset: '2027-05-21T00:00:00.000Z', successor: 'GET /v1/pets?id={petId}', calls: 3, day: '2026-11-21' },
    audit: null,
    description: 'A key called a deprecated operation, the first time that UTC day (a notice, not audited).'
  }),
  'webhook.test': eventRow({
    audience: 'webhook', data: WebhookTestDataSchema,
    example: { webhookId: WEBHOOK_EXAMPLE.id, url: WEBHOOK_EXAMPLE.url, sentAt: '2026-11-21T12:00:00.000Z' },
    audit: null,
    description: 'A test delivery, sent only to the endpoint it was asked for.'
  }),
  'webhook.disabled': eventRow({
    audience: 'webhook', data: WebhookDisabledDataSchema, example: { ...WEBHOOK_EXAMPLE, status: 'disabled', reason: 'failing' },
    audit: 'webhook.disable',
    description: 'An endpoint was disabled: after 5 days in which every attempt failed, or by its owner or an admin.'
  })
} satisfies Record<string, EventTypeRow>

/** The name of an event type: a misspelt one fails the type check. */
export type EventType = keyof typeof ROWS

/** The rows by name: ROWS, and the rows a test adds (addEventTypeRow). */
const catalogue = new Map<string, EventTypeRow>(Object.entries(ROWS))

/**
 * Adds a row, for a test that shows a new type reaching every derivation
 * (test/events/catalogue-row.http.test.ts): call it before importing what derives from the
 * catalogue (the app), since schemas are built when their modules load. The API never calls it.
 */
export function addEventTypeRow (name: string, spec: EventTypeRow): void {
  if (!/^[a-z_]+\.[a-z_]+$/.test(name) || catalogue.has(name)) throw new Error(`${name}: not a new event type name`)
  catalogue.set(name, spec)
}

/** Every event type, in the catalogue's order. */
export function eventTypes (): EventType[] {
  return [...catalogue.keys()] as EventType[]
}

/** Whether `name` is a known type. */
export function isEventType (name: string): name is EventType {
  return catalogue.has(name)
}

/** The row of a type, or undefined for a name the catalogue does not know. */
export function eventTypeRow (name: string): EventTypeRow | undefined {
  return catalogue.get(name)
}

/** The family of a type (`order` of `order.created`): `order.*` selects every type of it. */
export const familyOf = (type: string): string => type.slice(0, type.indexOf('.'))

/** The known families, in the catalogue's order. */
export function eventFamilies (): string[] {
  return [...new Set(eventTypes().map(familyOf))]
}

/** The documented example of a type's data: what GET /v1/event_types and the document show. */
export function exampleOf (type: EventType): unknown {
  const spec = catalogue.get(type)!
  return spec.view(spec.stored)
}

/** The data of a stored event of this type, in the API's shape (the identity for an unknown type). */
export function viewOf (type: string, stored: unknown): unknown {
  const spec = catalogue.get(type)
  return spec === undefined ? stored : spec.view(stored)
}

/** An event about to be written with the change it reports (events.store.ts). */
export interface EventDraft {
  type: EventType
  audience: EventAudience
  /** The key whose holder may see it: an order's owner, the key a key event is about, a webhook's owner. */
  subjectKeyId: number | null
  /**
   * The record as the store knows it (rendered to the API's shape when read, by the row's
   * view), or the final object for the types that store one.
   */
  data: unknown
}

/**
 * The draft of an event: its audience is the catalogue's. `subjectKeyId`: the key whose holder
 * may see it (an order's owner, the key a key event is about, a webhook's owner), null for the
 * shop's events (catalogue, stock).
 */
export function eventDraft (type: EventType, subjectKeyId: number | null, data: unknown): EventDraft {
  return { type, audience: catalogue.get(type)!.audience, subjectKeyId, data }
}

/**
 * A draft of `type` carrying its documented example, for a test send: stored as the type's store
 * would store it, so it reads (and is delivered) as `exampleOf(type)`.
 */
export function exampleDraft (type: EventType, subjectKeyId: number | null): EventDraft {
  return eventDraft(type, subjectKeyId, catalogue.get(type)!.stored)
}

/** The audit action of a type's change, or null when its events are not audited. */
export function auditActionOf (type: string): string | null {
  return catalogue.get(type)?.audit ?? null
}

/**
 * A type name or a `family.*` pattern as the feed's filter takes it: an exact name, a prefix
 * (`order.`), or undefined when it names no known type.
 */
export function parsePattern (pattern: string): { exact: EventType } | { prefix: string } | undefined {
  if (pattern.endsWith('.*')) {
    const family = pattern.slice(0, -2)
    return eventTypes().some((type) => familyOf(type) === family) ? { prefix: `${family}.` } : undefined
  }
  return isEventType(pattern) ? { exact: pattern } : undefined
}

export function isKnownPattern (pattern: string): boolean {
  return parsePattern(pattern) !== undefined
}

/** The types a pattern selects (none for an unknown one). */
export function typesOf (pattern: string): EventType[] {
  const parsed = parsePattern(pattern)
  if (parsed === undefined) return []
  return 'exact' in parsed ? [parsed.exact] : eventTypes().filter((type) => type.startsWith(parsed.prefix))
}

/** `order.*` matches a prefix; other names match exactly. Empty or absent: every type. */
export interface TypeFilter { exact: readonly string[]; prefixes: readonly string[] }

/** Known patterns as the feed's type filter (`order.*` is a prefix); unknown ones are left out. */
export function typeFilterOf (patterns: readonly string[]): TypeFilter {
  const parsed = patterns.map(parsePattern)
  return {
    exact: parsed.flatMap((p) => p !== undefined && 'exact' in p ? [p.exact] : []),
    prefixes: parsed.flatMap((p) => p !== undefined && 'prefix' in p ? [p.prefix] : [])
  }
}

/** Whether `type` is one that `patterns` (names and `family.*`) select. */
export function matchesTypes (patterns: readonly string[], type: string): boolean {
  return patterns.some((p) => p.endsWith('.*') ? type.startsWith(p.slice(0, -1)) : p === type)
}

/** Whether a role may ever see events of this audience (of its own key, for the key audiences). */
function audienceOpenTo (role: Role, audience: EventAudience): boolean {
  return role !== 'customer' || CUSTOMER_AUDIENCES.includes(audience)
}

/**
 * Whether a role may ever see events of this type or pattern: staff and admin every type (staff
 * sees the key and webhook events about its own key), a customer only its own orders', key's and
 * webhooks'. An unknown pattern: never.
 */
export function mayEverSee (role: Role, pattern: string): boolean {
  const types = typesOf(pattern)
  return types.length > 0 && types.some((type) => audienceOpenTo(role, catalogue.get(type)!.audience))
}

/** The types a role may receive, in the catalogue's order (GET /v1/event_types). */
export function typesFor (role: Role): EventType[] {
  return eventTypes().filter((type) => audienceOpenTo(role, catalogue.get(type)!.audience))
}

/** The reader's rule for one event (storage/event-filters.ts writes the same rule in SQL). */
export function maySee (
  owner: { role: Role; keyId: number },
  event: { audience: EventAudience; subjectKeyId: number | null }
): boolean {
  if (owner.role === 'admin') return true
  if (owner.role === 'staff') return STAFF_AUDIENCES.includes(event.audience) || event.subjectKeyId === owner.keyId
  return event.subjectKeyId === owner.keyId && CUSTOMER_AUDIENCES.includes(event.audience)
}
