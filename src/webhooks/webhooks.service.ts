// The webhook rules: who may subscribe to what, the SSRF check of the URL, at most 10 endpoints
// per key holder, owners see their own endpoints and admins all, a test of any type the owner may
// receive, replays and recoveries bounded; a test or replay wakes the dispatcher so its first
// attempt does not wait for the next poll.
import { randomBytes } from 'node:crypto'
import type { Caller } from '../accounts/caller.ts'
import { AppError, notFound } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import { decodeCursor, encodeCursor, DEFAULT_PAGE_SIZE, type Page } from '../shared/pagination.ts'
import { isEventType, typesFor } from '../events/catalogue.ts'
import { isKnownPattern, mayEverSee } from './event-types.ts'
import { newSecret } from './signature.ts'
import { checkWebhookUrl, URL_REFUSAL_MESSAGES, type Resolve } from './url-guard.ts'
import type { NewWebhook, Recover, Replay, WebhookListQuery, WebhookPatch } from './webhooks.schema.ts'
import type { AttemptDetail, DeliveryEntry, ReplayLimits, ReplaySelection, WebhookRecord, WebhookStore } from './webhooks.store.ts'
import { disabledEvent } from './webhooks.view.ts'

/** At most this many endpoints per key holder (issue 31). */
export const MAX_WEBHOOKS_PER_OWNER = 10
/** After a rotation the old secret signs too for this long. */
export const PREVIOUS_SECRET_MS = 24 * 3_600_000
/**
 * A replay or a recovery queues at most this many events a request, and a key holder's replays
 * and recoveries together at most REPLAY_PER_HOUR deliveries a UTC hour (issue 48 finding 4: a
 * request queued up to 10,000, as often as asked, against any public host).
 */
export const MAX_REPLAY = 1_000
export const REPLAY_PER_HOUR = 10_000

/** What a replay or a recovery queued; `nextSince`: where the rest begins, when it was cut. */
export interface Queued { queued: number; nextSince: number | null }

export interface WebhookServiceOptions {
  allowedHosts: readonly string[]
  resolve?: Resolve
  /** Called after a test or a replay is queued (the dispatcher's wake). */
  onQueued?: () => void
  /** Says when an owner or an admin disables an endpoint (the dispatcher says the other reasons). */
  log?: { info (fields: object, message: string): void }
  /** MAX_REPLAY and REPLAY_PER_HOUR unless given (tests). */
  replayLimits?: ReplayLimits
}

export interface WebhookService {
  create (caller: Caller, input: NewWebhook): Promise<WebhookRecord>
  list (caller: Caller, query: WebhookListQuery): Promise<Page<WebhookRecord>>
  get (caller: Caller, id: string): Promise<WebhookRecord>
  update (caller: Caller, id: string, patch: WebhookPatch): Promise<WebhookRecord>
  remove (caller: Caller, id: string): Promise<void>
  rotateSecret (caller: Caller, id: string): Promise<WebhookRecord>
  /** `type`: the event type sent with its example; webhook.test when absent. Returns the event id. */
  test (caller: Caller, id: string, type?: string): Promise<string>
  deliveries (caller: Caller, id: string, limit: number): Promise<DeliveryEntry[]>
  /** One attempt of the endpoint with what it sent and got; 404 when absent (or another holder's). */
  attempt (caller: Caller, id: string, attemptId: number): Promise<AttemptDetail>
  replay (caller: Caller, id: string, input: Replay): Promise<Queued>
  recover (caller: Caller, id: string, input: Recover): Promise<Queued>
}

export function createWebhookService (
  store: WebhookStore,
  clock: Clock,
  options: WebhookServiceOptions
): WebhookService {
  async function checkUrl (url: string): Promise<void> {
    const check = await checkWebhookUrl(url, {
      allowedHosts: options.allowedHosts,
      ...(options.resolve !== undefined && { resolve: options.resolve })
    })
    if (!check.ok) {
      throw new AppError('webhook_url_forbidden', URL_REFUSAL_MESSAGES[check.reason], {
        details: [{ path: '/url', message: URL_REFUSAL_MESSAGES[check.reason] }]
      })
    }
  }

  function checkTypes (caller: Caller, types: readonly string[]): void {
    const unknown = types.flatMap((type, index) => isKnownPattern(type) ? [] : [{ path: `/types/${index}`, message: `${type} is no event type (GET /v1/event_types lists them)` }])
    if (unknown.length > 0) throw new AppError('validation_failed', 'unknown event type', { details: unknown })
    const hidden = types.filter((type) => !mayEverSee(caller.role, type))
    if (hidden.length > 0) throw new AppError('forbidden', `a ${caller.role} key may not receive ${hidden.join(', ')}`)
  }

  const replayLimits = options.replayLimits ?? { max: MAX_REPLAY, perHour: REPLAY_PER_HOUR }

  /** Queues a replay or a recovery within the limits; past the hour's, 429 until the hour ends. */
  async function queueAgain (id: string, selection: ReplaySelection, now: number): Promise<Queued> {
    const result = await store.replay(id, selection, now, replayLimits)
    if ('refused' in result) {
      const seconds = Math.max(1, Math.ceil((result.retryAt - now) / 1000))
      throw new AppError(
        'rate_limited',
        `this key holder's replays and recoveries queued ${replayLimits.perHour} deliveries this hour; retry after ${seconds} s`,
        { headers: { 'retry-after': String(seconds) } }
      )
    }
    if (result.queued > 0) options.onQueued?.()
    return result
  }

  /** The endpoint, when the caller owns it or is an admin; another holder's endpoint does not exist for the caller. */
  async function owned (caller: Caller, id: string): Promise<WebhookRecord> {
    const webhook = await store.getWebhook(id)
    if (webhook === null || (caller.role !== 'admin' && webhook.ownerKeyId !== caller.keyId)) throw notFound(`webhook ${id}`)
    return webhook
  }

  return {
    async create (caller, input) {
      checkTypes(caller, input.types)
      await checkUrl(input.url)
      return await store.createWebhook({
        id: `wh_${randomBytes(12).toString('hex')}`,
        ownerKeyId: caller.keyId,
        url: input.url,
        types: input.types,
        description: input.description ?? null,
        secret: newSecret(),
        now: clock.now()
      }, MAX_WEBHOOKS_PER_OWNER)
    },
    async list (caller, query) {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE
      const rows = await store.listWebhooks(
        caller.role === 'admin' ? null : caller.keyId,
        decodeCursor(query.cursor),
        limit + 1
      )
      const items = rows.slice(0, limit)
      return { items, nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1]!.seq) : null }
    },
    get: owned,
    async update (caller, id, patch) {
      const before = await owned(caller, id)
      if (patch.types !== undefined) checkTypes(caller, patch.types)
      if (patch.url !== undefined) await checkUrl(patch.url)
      const updated = await store.updateWebhook(id, patch, clock.now(), disabledEvent('manual'))
      if (updated === null) throw notFound(`webhook ${id}`)
      if (before.status === 'enabled' && updated.status === 'disabled') {
        options.log?.info({ webhookId: id, ownerKeyId: updated.ownerKeyId, reason: 'manual', by: caller.keyId }, 'a webhook endpoint was disabled')
      }
      return updated
    },
    async remove (caller, id) {
      await owned(caller, id)
      if (!await store.deleteWebhook(id, clock.now())) throw notFound(`webhook ${id}`)
    },
    async rotateSecret (caller, id) {
      await owned(caller, id)
      const now = clock.now()
      const rotated = await store.rotateSecret(id, newSecret(), now + PREVIOUS_SECRET_MS, now)
      if (rotated === null) throw notFound(`webhook ${id}`)
      return rotated
    },
    async test (caller, id, type) {
      const webhook = await owned(caller, id)
      if (type !== undefined && type !== 'webhook.test') {
        if (!isEventType(type)) {
          throw new AppError('validation_failed', 'unknown event type', {
            details: [{ path: '/type', message: `${type} is no event type (GET /v1/event_types lists them)` }]
          })
        }
        // The owner's role, not the caller's: an admin testing a customer's endpoint sends only
        // what that customer may receive.
        const role = webhook.ownerKeyId === caller.keyId ? caller.role : await store.ownerRole(id)
        if (role === null) throw notFound(`webhook ${id}`)
        if (!typesFor(role).includes(type)) throw new AppError('forbidden', `the endpoint's owner, a ${role} key, may not receive ${type}`)
      }
      const now = clock.now()
      // The event written is webhook.test whatever the type sent: a test never puts a fake
      // event of another type into the feed, where other readers would take it for real.
      const eventId = await store.queueTest(id, {
        type: 'webhook.test',
        audience: 'webhook',
        subjectKeyId: webhook.ownerKeyId,
        data: { webhookId: webhook.id, url: webhook.url, sentAt: new Date(now).toISOString() }
      }, now, type === 'webhook.test' ? undefined : type)
      options.onQueued?.()
      return eventId
    },
    async deliveries (caller, id, limit) {
      await owned(caller, id)
      return await store.listDeliveries(id, limit)
    },
    async attempt (caller, id, attemptId) {
      await owned(caller, id)
      const found = await store.getAttempt(id, attemptId)
      if (found === null) throw notFound(`attempt att_${attemptId} of webhook ${id}`)
      return found
    },
    async replay (caller, id, input) {
      await owned(caller, id)
      const now = clock.now()
      const selection = 'eventIds' in input
        ? { eventIds: input.eventIds }
        : { since: Date.parse(input.since), until: input.until === undefined ? now + 1 : Date.parse(input.until) }
      return await queueAgain(id, selection, now)
    },
    async recover (caller, id, input) {
      await owned(caller, id)
      const now = clock.now()
      return await queueAgain(id, { since: Date.parse(input.since), until: now + 1, onlyFailed: true }, now)
    }
  }
}
