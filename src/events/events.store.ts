// The events port (docs/product.md, events): the outbox every change writes into, in the same
// transaction as the change, and the feed the pull API and the webhook dispatcher read.
//
// A store method that changes state appends its events through the engine's own event log
// (storage/sqlite/events.ts inside the writer's callback, storage/postgres/events.ts inside the
// transaction or the PL/pgSQL function), never through a separate step a crash could skip.
import { RandomPool } from '../shared/random-pool.ts'
import { eventDraft, type EventAudience, type EventDraft, type EventType, type TypeFilter } from './catalogue.ts'

// The draft, the audience and the type filter are the catalogue's (catalogue.ts); the engines
// and the stores name them from here, with the rest of the port.
export type { EventAudience, EventDraft, TypeFilter }

/**
 * A position in the feed. On SQLite commits follow `seq`, so `tx` is always '0'. On PostgreSQL
 * `tx` is the writing transaction's id (xid8, as decimal text): the feed returns only rows of
 * transactions that have all finished, in (tx, seq) order, so no row can appear behind a cursor.
 */
export interface FeedPosition { tx: string; seq: number }

export interface StoredEvent {
  id: string
  type: string
  createdAt: number
  audience: EventAudience
  subjectKeyId: number | null
  data: unknown
  position: FeedPosition
}

/** Who is reading: admin sees everything; staff the shop's events and its own; a customer its own. */
export type Visibility =
  | { role: 'admin' }
  | { role: 'staff' | 'customer'; keyId: number }

export interface EventFeedQuery {
  visibility: Visibility
  types?: TypeFilter
  /** Strictly after this position; null: from the oldest kept. */
  after: FeedPosition | null
  limit: number
}

export interface EventStore {
  /** The events after `after`, oldest first, that the reader may see. */
  listEvents (query: EventFeedQuery): Promise<StoredEvent[]>
  /** Null when absent or not visible to the reader. */
  getEvent (id: string, visibility: Visibility): Promise<StoredEvent | null>
  /** Deletes up to `max` events created before `before` (epoch ms); returns how many. */
  pruneEvents (before: number, max: number): Promise<number>
  /**
   * One batch of a key notice (jobs/key-expiring.ts): for up to `max` keys that are neither
   * revoked nor rotated, whose expiresAt is in (`expiresAfter`, `expiresBy`] and that have not had
   * `notice` yet, records the notice (`key_notices`, unique on key and notice) and appends a key
   * event of `type` with the key's state, in one transaction. A notice another instance recorded
   * first is skipped, so each key has each notice, and its event, once. Returns how many it sent.
   */
  sendKeyNotices (batch: KeyNoticeBatch): Promise<number>
}

/** What sendKeyNotices sends, to which keys (instants in epoch ms). */
export interface KeyNoticeBatch {
  /** The notice's name in `key_notices` (`7d`, `1d`): what makes it once per key. */
  notice: string
  /** The event written for each key (`key.expiring`); its data is the key's state, as keyEvent's. */
  type: EventType
  expiresAfter: number
  expiresBy: number
  now: number
  max: number
}

/** The random part of event ids (shared/random-pool.ts). */
const eventRandom = new RandomPool()

/**
 * A new event id: `evt_` and 32 lowercase hex digits (the same form PostgreSQL's functions make):
 * the millisecond in 12, then 80 random bits. Ids made in time order land at the end of the
 * events' unique index, where a random id dirtied one page of it per event (docs/performance.md,
 * "Orders"); nothing promises an order of ids, and within a millisecond there is none.
 */
export function newEventId (): string {
  const from = eventRandom.take(10)
  const random = eventRandom.bytes.toString('hex', from, from + 10)
  return `evt_${Date.now().toString(16).padStart(12, '0')}${random}`
}

/** A catalogue event (pet.*, category.*): every staff member and admin sees it. */
export function catalogEvent (type: EventType, data: unknown): EventDraft {
  return eventDraft(type, null, data)
}

/**
 * A key administration event (key.*): its data is the key's state `{ record, ban, lastUsedAt }`
 * (the record holds no secret and no hash), rendered with the key view when read. Its holder
 * sees it through the key's quota identity, the caller that every key of a rotation chain speaks for.
 */
export function keyEvent (
  type: EventType,
  state: { record: { quotaKeyId: number }; ban: unknown; lastUsedAt: number | null }
): EventDraft {
  return eventDraft(type, state.record.quotaKeyId, state)
}

/**
 * `key.banned` (a ban starts: `until` is when it will end) or `key.unbanned` (an admin or the CLI
 * lifted it: `until` is the instant it was lifted, its actual end). A ban that simply runs out
 * emits nothing. `keyId` is the quota identity, the ban's owner for the whole rotation chain;
 * `strike` the ban's level (0: recorded before levels were kept).
 */
export function keyBanEvent (type: 'key.banned' | 'key.unbanned', ban: { quotaKeyId: number; until: number; strike: number }): EventDraft {
  const data = { keyId: ban.quotaKeyId, until: new Date(ban.until).toISOString(), strike: ban.strike }
  return eventDraft(type, ban.quotaKeyId, data)
}
