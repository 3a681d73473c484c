// What the audit log records and how its chain is made (docs/product.md, the audit log), once
// for both engines: the one rule set (auditDraftsOf) that turns what a change records into its
// entries (their actor, action, target and changes), the canonical JSON and the hash, and the
// walk that `petstore audit verify` makes. The engines only store, through one append each
// (storage/*/audit.ts), which every audited change goes through.
import { createHash } from 'node:crypto'
import { auditActionOf, type EventDraft } from '../events/catalogue.ts'
import type { ActorContext } from '../shared/actor-context.ts'
import { SYSTEM_CONTEXT } from '../shared/actor-context.ts'
import type { AuditEntry, AuditHead, FieldChange } from './audit.store.ts'

/**
 * What a change records, that its entries are derived from: the events it writes, with the
 * record an update read before changing it (`before`, in the shape of the event's data); or a
 * change to a webhook endpoint, which writes no event.
 */
export type AuditedChange =
  | { events: readonly EventDraft[]; before?: unknown }
  | { webhook: WebhookChange }

/** An entry before the chain gives it an id and a hash. */
export type AuditDraft = Omit<AuditEntry, 'id' | 'hash'>

/** Fields never recorded: secrets, hashes of them, and what moves without anyone's change. */
const NOT_RECORDED = /hash|secret|token|password|^key$|^searchName$|^lastUsedAt$/i
/** Fields holding an instant (epoch ms), recorded as ISO 8601 like the API shows them. */
const INSTANT = /(At|Date|until)$/

function recorded (value: unknown, field: string): unknown {
  return typeof value === 'number' && INSTANT.test(field) ? new Date(value).toISOString() : value
}

/** Each recordable field of `record`, as `{ before?, after? }` built by `change`. */
function fieldsOf (record: unknown, change: (value: unknown) => FieldChange): Record<string, FieldChange> {
  const changes: Record<string, FieldChange> = {}
  if (record === null || typeof record !== 'object') return changes
  for (const [field, value] of Object.entries(record)) {
    if (value === undefined || NOT_RECORDED.test(field)) continue
    changes[field] = change(recorded(value, field))
  }
  return changes
}

const created = (record: unknown) => fieldsOf(record, (after) => ({ before: null, after }))
const deleted = (record: unknown) => fieldsOf(record, (before) => ({ before, after: null }))

/** What every update moves by itself: not a field anyone changed. */
const BOOKKEEPING = /^(version|updatedAt)$/

/**
 * An update's changes. With the record before it (`before`, which the store read for its If-Match
 * check), each field whose value changed, `{ before, after }`, and no other. Without it (a
 * revocation, a cancellation), the values after the change, `before` left out rather than guessed.
 */
function updated (record: unknown, before?: unknown): Record<string, FieldChange> {
  if (before === undefined || before === null || typeof before !== 'object') return fieldsOf(record, (after) => ({ after }))
  const changes: Record<string, FieldChange> = {}
  if (record === null || typeof record !== 'object') return changes
  const was = before as Record<string, unknown>
  const is = record as Record<string, unknown>
  for (const field of new Set([...Object.keys(was), ...Object.keys(is)])) {
    if (NOT_RECORDED.test(field) || BOOKKEEPING.test(field)) continue
    // A field absent on one side (an optional one, like a category's description) is null there.
    const from = recorded(was[field] ?? null, field)
    const to = recorded(is[field] ?? null, field)
    if (canonicalJson(from) !== canonicalJson(to)) changes[field] = { before: from, after: to }
  }
  return changes
}

interface Facts { target: AuditEntry['target']; changes: Record<string, FieldChange> }

const idOf = (data: unknown, field = 'id'): string => String((data as Record<string, unknown>)[field])

/**
 * Target and changes of an audited event, from its data (the record its store wrote) and, for an
 * update, the record before it.
 */
function factsOf (type: string, data: unknown, before: unknown): Facts {
  const [family, verb] = type.split('.') as [string, string]
  switch (family) {
    case 'key': {
      if (verb === 'banned' || verb === 'unbanned') {
        const ban = data as { keyId: number; until: number | string; strike?: number }
        const until = recorded(ban.until, 'until')
        return {
          target: { type: 'key', id: String(ban.keyId) },
          changes: verb === 'banned'
            ? {
                bannedUntil: { before: null, after: until },
                ...(ban.strike !== undefined && { strike: { after: ban.strike } })
              }
            : { bannedUntil: { before: until, after: null } }
        }
      }
      const record = (data as { record: Record<string, unknown> }).record
      // A rotation's event carries the successor: the entry is about the key rotated.
      if (verb === 'rotated') {
        return {
          target: { type: 'key', id: String(record.replaces) },
          changes: { replacedBy: { before: null, after: record.id } }
        }
      }
      const reason = (data as { reason?: unknown }).reason
      return {
        target: { type: 'key', id: String(record.id) },
        changes: verb === 'created'
          ? created(record)
          : { ...updated(record, before), ...(reason !== undefined && { reason: { after: reason } }) }
      }
    }
    case 'inventory':
      return { target: { type: 'inventory', id: idOf(data, 'petId') }, changes: updated(data, before) }
    case 'webhook':
      return {
        target: { type: 'webhook', id: idOf(data) },
        changes: {
          status: { before: 'enabled', after: 'disabled' },
          ...fieldsOf({ reason: (data as { reason?: unknown }).reason }, (after) => ({ after }))
        }
      }
    default:
      return {
        target: { type: family, id: idOf(data) },
        changes: verb === 'created' ? created(data) : verb === 'deleted' ? deleted(data) : updated(data, verb === 'cancelled' ? undefined : before)
      }
  }
}

/**
 * Changes only the service makes, whatever request's turn it runs in: a ban the limiter starts,
 * an endpoint the dispatcher disables after days of failures or because its owner's key is no
 * longer live (its round may be woken by a request, whose actor it must not take).
 */
function isSystems (draft: EventDraft): boolean {
  if (draft.type === 'key.banned') return true
  const reason = draft.type === 'webhook.disabled' ? (draft.data as { reason?: string }).reason : undefined
  return reason === 'failing' || reason === 'owner_inactive'
}

/**
 * An endpoint disabled by its owner's or an admin's PATCH is that PATCH's `webhook.update` entry
 * (its status before and after): one change, one entry.
 */
function isPatchsDisable (draft: EventDraft): boolean {
  return draft.type === 'webhook.disabled' && (draft.data as { reason?: string }).reason === 'manual'
}

/**
 * The audit entries of a change, by `context`'s actor: the one rule set every entry comes from.
 * Each event whose catalogue row names an audit action is an entry (events/catalogue.ts), but
 * customers' own orders (placing, cancelling: their business, not staff changes); a webhook
 * endpoint's change is one entry of its own.
 */
export function auditDraftsOf (change: AuditedChange, at: number, context: ActorContext): AuditDraft[] {
  return 'webhook' in change
    ? [webhookDraft(change.webhook, at, context)]
    : eventDrafts(change.events, at, context, change.before)
}

/**
 * The entries of a change's events. `before` is the record an update's store read before
 * changing it, in the shape of the event's data: the update's entry then holds each changed
 * field before and after (updated above).
 */
function eventDrafts (
  drafts: readonly EventDraft[],
  at: number,
  context: ActorContext,
  before?: unknown
): AuditDraft[] {
  const entries: AuditDraft[] = []
  for (const draft of drafts) {
    const action = auditActionOf(draft.type)
    if (action === null || isPatchsDisable(draft)) continue
    const by = isSystems(draft) ? SYSTEM_CONTEXT : context
    if (action.startsWith('order.') && by.actor.type === 'key' && by.actor.role === 'customer') continue
    entries.push({
      at,
      actor: by.actor,
      action,
      ...factsOf(draft.type, draft.data, before),
      requestId: by.requestId,
      address: by.address
    })
  }
  return entries
}

/**
 * What an endpoint's entries record of it: never its secrets (nor the previous one, nor when that
 * one stops signing).
 */
interface WebhookFields {
  id: string
  ownerKeyId: number
  url: string
  types: string[]
  description: string | null
  status: string
}
const webhookFields = (hook: WebhookFields) => ({
  id: hook.id,
  ownerKeyId: hook.ownerKeyId,
  url: hook.url,
  types: hook.types,
  description: hook.description,
  status: hook.status
})

/** What a change to a webhook endpoint records (it writes no event: this is what its entry is derived from). */
export type WebhookChange =
  | { action: 'webhook.create'; after: WebhookFields }
  | { action: 'webhook.update'; before: WebhookFields; after: WebhookFields }
  | { action: 'webhook.delete'; before: WebhookFields }
  /** Instants (epoch ms) until which the previous secret signs, before and after the rotation. */
  | { action: 'webhook.rotate_secret'; id: string; previousUntil: { before: number | null; after: number } }
  /** A recovery (`POST …/recover`) is a replay of the failed deliveries only: its entry is `webhook.recover`. */
  | {
    action: 'webhook.replay'
    id: string
    selection: { since: number; until: number; onlyFailed?: true } | { eventIds: string[] }
    queued: number
  }

/** The entry of a change to a webhook endpoint, by `context`'s actor. */
function webhookDraft (change: WebhookChange, at: number, context: ActorContext): AuditDraft {
  const id = 'id' in change ? change.id : 'after' in change ? change.after.id : change.before.id
  let changes: Record<string, FieldChange>
  switch (change.action) {
    case 'webhook.create': changes = created(webhookFields(change.after)); break
    case 'webhook.update': changes = updated(webhookFields(change.after), webhookFields(change.before)); break
    case 'webhook.delete': changes = deleted(webhookFields(change.before)); break
    case 'webhook.rotate_secret': {
      // Built by hand: the field's name would be taken for a secret's and left out (NOT_RECORDED).
      const { before, after } = change.previousUntil
      changes = {
        previousSecretUntil: { before: before === null ? null : recorded(before, 'At'), after: recorded(after, 'At') }
      }
      break
    }
    case 'webhook.replay': {
      const { selection } = change
      const range = 'eventIds' in selection
        ? { eventIds: selection.eventIds }
        : { since: recorded(selection.since, 'At'), until: recorded(selection.until, 'At') }
      changes = { replay: { after: range }, queued: { after: change.queued } }
      break
    }
  }
  const recovery = change.action === 'webhook.replay' && 'onlyFailed' in change.selection && change.selection.onlyFailed === true
  return {
    at,
    actor: context.actor,
    action: recovery ? 'webhook.recover' : change.action,
    target: { type: 'webhook', id },
    requestId: context.requestId,
    address: context.address,
    changes
  }
}

/** JSON with every object's keys sorted (RFC 8785's order for these ASCII names), no white space. */
export function canonicalJson (value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`
  const fields = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
  return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
}

/** The hash of entry `draft` numbered `id` after an entry whose hash is `previous` ('' for the first). */
export function chainHash (previous: string, id: number, draft: AuditDraft): string {
  const { at, actor, action, target, requestId, address, changes } = draft
  return createHash('sha256')
    .update(previous + canonicalJson({ id, at, actor, action, target, requestId, address, changes }))
    .digest('hex')
}

/** The entry that follows `head` in the chain. */
export function nextEntry (head: AuditHead, draft: AuditDraft): AuditEntry {
  const id = head.count + 1
  return { id, ...draft, hash: chainHash(head.hash, id, draft) }
}

/** The first fault a verification finds: the entry it names and why. */
export interface AuditFault { entry: number; problem: 'changed' | 'removed' | 'inserted'; message: string }

/**
 * The walk of `petstore audit verify`: feed it every entry in id order, then the head read with
 * them; `fault` is the first entry changed, removed or inserted, or null for an intact chain.
 */
export function createChainCheck (): {
  visit (entry: AuditEntry): boolean
  finish (head: AuditHead): AuditFault | null
  readonly checked: number
} {
  let expected = 1
  let previous = ''
  let fault: AuditFault | null = null
  return {
    visit (entry) {
      if (entry.id > expected) {
        fault = { entry: expected, problem: 'removed', message: `entry ${expected} was removed: the log goes from entry ${expected - 1} to entry ${entry.id}` }
      } else if (entry.hash !== chainHash(previous, entry.id, entry)) {
        fault = { entry: entry.id, problem: 'changed', message: `entry ${entry.id} was changed (or inserted in its place): its hash does not follow from entry ${entry.id - 1} and its content` }
      }
      if (fault !== null) return false
      previous = entry.hash
      expected++
      return true
    },
    finish (head) {
      if (fault !== null) {
        // A well-formed entry past the head's count was appended by hand, not by the API.
        if (fault.entry > head.count && fault.problem === 'changed') {
          return { entry: fault.entry, problem: 'inserted', message: `entry ${fault.entry} was inserted: the head counts ${head.count} entries` }
        }
        return fault
      }
      const last = expected - 1
      if (last < head.count) return { entry: last + 1, problem: 'removed', message: `entry ${last + 1} was removed: the log ends at entry ${last}, the head counts ${head.count}` }
      if (last > head.count) return { entry: head.count + 1, problem: 'inserted', message: `entry ${head.count + 1} was inserted: the head counts ${head.count} entries` }
      if (previous !== head.hash) return { entry: last, problem: 'changed', message: `entry ${last} was changed: its hash is not the head's` }
      return null
    },
    get checked () { return expected - 1 }
  }
}
