// The event feed's rules: who sees what (by the caller's role), the type filter and the cursor;
// and the list of the types a caller may receive, from the catalogue. The store reads; the routes
// render what it returns (render.ts).
import { AppError, notFound } from '../errors.ts'
import type { Caller } from '../accounts/caller.ts'
import { eventTypeRow, exampleOf, familyOf, parsePattern, typesFor } from './catalogue.ts'
import type { EventListQuery, EventTypeInfo } from './events.schema.ts'
import type { EventStore, FeedPosition, StoredEvent, TypeFilter, Visibility } from './events.store.ts'

export const DEFAULT_FEED_LIMIT = 20
/** The largest xid8 (PostgreSQL's 64-bit transaction id): a cursor past it is not ours. */
const MAX_TX = 2n ** 64n - 1n

/** The feed's cursor: base64url of `v1:<tx>:<seq>`, the position of the last event returned. */
export function encodeFeedCursor (position: FeedPosition): string {
  return Buffer.from(`v1:${position.tx}:${position.seq}`).toString('base64url')
}

function invalidCursor (): AppError {
  return new AppError('validation_failed', 'invalid cursor: use the one from the Link header of the previous page', { details: [{ path: 'cursor', message: 'is not a cursor this API issued' }] })
}

/** The position a cursor names; null without one (from the oldest event kept). Throws validation_failed. */
export function decodeFeedCursor (cursor: string | undefined): FeedPosition | null {
  if (cursor === undefined) return null
  const text = /^[A-Za-z0-9_-]{1,100}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : ''
  const match = /^v1:(0|[1-9][0-9]{0,19}):(0|[1-9][0-9]{0,15})$/.exec(text)
  if (match === null || BigInt(match[1]!) > MAX_TX || !Number.isSafeInteger(Number(match[2]))) throw invalidCursor()
  return { tx: match[1]!, seq: Number(match[2]) }
}

/** `order.*,pet.created` as exact names and prefixes; an unknown name or family is validation_failed. */
export function parseTypeFilter (text: string | undefined): TypeFilter | undefined {
  if (text === undefined) return undefined
  const exact: string[] = []
  const prefixes: string[] = []
  const unknown: string[] = []
  for (const name of new Set(text.split(','))) {
    const pattern = parsePattern(name)
    if (pattern === undefined) unknown.push(name)
    else if ('prefix' in pattern) prefixes.push(pattern.prefix)
    else exact.push(pattern.exact)
  }
  if (unknown.length > 0) {
    const names = unknown.map((n) => `"${n}"`).join(', ')
    throw new AppError('validation_failed', `unknown event type ${names}: use a type name (order.created) or a family (order.*); GET /v1/event_types lists them`, {
      details: unknown.map((name) => ({ path: 'type', message: `"${name}" is not a known event type or family` }))
    })
  }
  return { exact, prefixes }
}

/** Admin sees every event; staff the shop's and its own key's; a customer its own. */
export function visibilityOf (caller: Caller): Visibility {
  return caller.role === 'admin' ? { role: 'admin' } : { role: caller.role, keyId: caller.keyId }
}

export interface EventPage {
  items: StoredEvent[]
  /** Always set: the position after the last event returned, or the one asked for when none is new. */
  nextCursor: string
}

export interface EventService {
  list (query: EventListQuery, caller: Caller): Promise<EventPage>
  /** Throws not_found when absent or not visible to the caller. */
  get (id: string, caller: Caller): Promise<StoredEvent>
  /** The types the caller's role may receive (docs/product.md 12.4), as the catalogue declares them. */
  types (caller: Caller): EventTypeInfo[]
}

/** The catalogue's rows a role may receive, as GET /v1/event_types shows them. */
export function eventTypesFor (role: Caller['role']): EventTypeInfo[] {
  return typesFor(role).map((type) => {
    const row = eventTypeRow(type)!
    return { type, family: familyOf(type), description: row.description, schema: row.data, example: exampleOf(type) }
  })
}

export function createEventService (events: EventStore): EventService {
  return {
    async list (query, caller) {
      const after = decodeFeedCursor(query.cursor)
      const types = parseTypeFilter(query.type)
      const items = await events.listEvents({
        visibility: visibilityOf(caller),
        after,
        limit: query.limit ?? DEFAULT_FEED_LIMIT,
        ...(types !== undefined && { types })
      })
      // The feed never ends: an empty page links to the same position, to be polled again.
      const position = items.at(-1)?.position ?? after ?? { tx: '0', seq: 0 }
      return { items, nextCursor: encodeFeedCursor(position) }
    },
    async get (id, caller) {
      const event = await events.getEvent(id, visibilityOf(caller))
      if (event === null) throw notFound(`event ${id}`)
      return event
    },
    types (caller) {
      return eventTypesFor(caller.role)
    }
  }
}
