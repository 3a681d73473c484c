// The audit log's entry rules on their own (src/audit/audit.rules.ts, auditDraftsOf; issue 52):
// for each kind of change a store records (the events it writes, built by the stores' own
// helpers, or a change to a webhook endpoint), the entries an auditor will read: who acted, the
// action, the target, and each field's value before and after, never a secret. No database: the
// same entries through the API on both engines are audit.http and audit-changes.http. Faults
// caught: a change recorded under the wrong actor (a ban under the request that tripped it), a
// customer's own order audited, a notice audited, an update that records unchanged or bookkeeping
// fields, instants left as numbers, a secret or a key's last use recorded, the wrong target of a
// rotation, a ban or a stock change.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { auditDraftsOf, type AuditDraft, type AuditedChange } from '../../src/audit/audit.rules.ts'
import type { KeyRecord } from '../../src/accounts/keys.store.ts'
import type { CategoryRecord } from '../../src/categories/categories.store.ts'
import { eventDraft } from '../../src/events/catalogue.ts'
import { catalogEvent, keyBanEvent, keyEvent } from '../../src/events/events.store.ts'
import type { OrderRecord } from '../../src/orders/orders.store.ts'
import type { PetRecord } from '../../src/pets/pets.store.ts'
import { SYSTEM_CONTEXT, type ActorContext } from '../../src/shared/actor-context.ts'
import { orderEvent, stockSetEvents } from '../../src/storage/order-events.ts'

const AT = Date.UTC(2026, 10, 29, 12, 0, 0)
const iso = (ms: number): string => new Date(ms).toISOString()
const HOUR = 3_600_000

const STAFF: ActorContext = { actor: { type: 'key', keyId: 2, role: 'staff' }, requestId: 'req-staff', address: '192.0.2.2' }
const ADMIN: ActorContext = { actor: { type: 'key', keyId: 1, role: 'admin' }, requestId: 'req-admin', address: '192.0.2.1' }
const CUSTOMER: ActorContext = { actor: { type: 'key', keyId: 5, role: 'customer' }, requestId: 'req-customer', address: '198.51.100.5' }
const CLI: ActorContext = { actor: { type: 'cli', user: 'ops' }, requestId: null, address: null }

/** The entries of a change made by `context` at AT. */
const entriesOf = (change: AuditedChange, context: ActorContext): AuditDraft[] => auditDraftsOf(change, AT, context)

/** An entry as the log shows it, made at AT by `context`. */
function entry (context: ActorContext, action: string, target: [string, string], changes: AuditDraft['changes']): AuditDraft {
  const { actor, requestId, address } = context
  return { at: AT, actor, action, target: { type: target[0], id: target[1] }, requestId, address, changes }
}

test('a pet created, changed and deleted by staff: the creation records each field, the change only the fields it changed, the deletion the id', () => {
  const pet: PetRecord = { id: 7, name: 'Rex', categoryId: 1, status: 'available', version: 1 }
  assert.deepEqual(entriesOf({ events: [catalogEvent('pet.created', pet)] }, STAFF), [
    entry(STAFF, 'pet.create', ['pet', '7'], {
      id: { before: null, after: 7 },
      name: { before: null, after: 'Rex' },
      categoryId: { before: null, after: 1 },
      status: { before: null, after: 'available' },
      version: { before: null, after: 1 }
    })
  ])
  // Its name kept, its status changed: the version moves with every change, not recorded.
  const sold = { ...pet, status: 'sold', version: 2 }
  assert.deepEqual(entriesOf({ events: [catalogEvent('pet.updated', sold)], before: pet }, STAFF), [
    entry(STAFF, 'pet.update', ['pet', '7'], { status: { before: 'available', after: 'sold' } })
  ])
  assert.deepEqual(entriesOf({ events: [catalogEvent('pet.deleted', { id: 7 })] }, CLI), [
    entry(CLI, 'pet.delete', ['pet', '7'], { id: { before: 7, after: null } })
  ])
})

test('a category\'s optional description: absent on one side of an update is null there; left out of a creation when absent', () => {
  const bare: CategoryRecord = { id: 3, name: 'Cats', version: 1 }
  // A row converter that leaves the field undefined records nothing of it either.
  assert.deepEqual(entriesOf({ events: [catalogEvent('category.created', { ...bare, description: undefined })] }, STAFF), [
    entry(STAFF, 'category.create', ['category', '3'], {
      id: { before: null, after: 3 }, name: { before: null, after: 'Cats' }, version: { before: null, after: 1 }
    })
  ])
  const described = { ...bare, description: 'Independent.', version: 2 }
  assert.deepEqual(entriesOf({ events: [catalogEvent('category.updated', described)], before: bare }, STAFF), [
    entry(STAFF, 'category.update', ['category', '3'], { description: { before: null, after: 'Independent.' } })
  ])
  assert.deepEqual(entriesOf({ events: [catalogEvent('category.updated', { ...bare, version: 3 })], before: described }, STAFF), [
    entry(STAFF, 'category.update', ['category', '3'], { description: { before: 'Independent.', after: null } })
  ])
  // A change that changed nothing recordable is still an entry (someone acted), with no changes.
  assert.deepEqual(entriesOf({ events: [catalogEvent('category.updated', { ...bare, version: 4 })], before: bare }, STAFF), [
    entry(STAFF, 'category.update', ['category', '3'], {})
  ])
})

test('staff setting the stock: one entry on the pet\'s inventory with the quantity before and after; the low-stock notice it triggers is not audited', () => {
  const before = { petId: 10, quantity: 12, status: 'available' as const, version: 3 }
  const after = { ...before, quantity: 2, version: 4 }
  const events = stockSetEvents(12, after, 5)
  assert.deepEqual(events.map((e) => e.type), ['inventory.updated', 'inventory.low'])
  assert.deepEqual(entriesOf({ events, before }, STAFF), [
    entry(STAFF, 'inventory.update', ['inventory', '10'], { quantity: { before: 12, after: 2 } })
  ])
})

test('orders: staff\'s and an admin\'s changes are audited with instants as ISO 8601; a customer\'s own are its business; placing and lapsing are not changes', () => {
  const order: OrderRecord = {
    id: 40, petId: 10, quantity: 2, shipDate: null, complete: false, ownerKeyId: 5,
    createdAt: AT - HOUR, expiresAt: AT + HOUR, version: 1
  }
  const shipped = { ...order, shipDate: AT + 48 * HOUR, version: 2 }
  assert.deepEqual(entriesOf({ events: [orderEvent('order.updated', shipped)], before: order }, STAFF), [
    entry(STAFF, 'order.update', ['order', '40'], { shipDate: { before: null, after: iso(AT + 48 * HOUR) } })
  ])
  const done = { ...shipped, complete: true, expiresAt: null, version: 3 }
  assert.deepEqual(entriesOf({ events: [orderEvent('order.completed', done)], before: shipped }, ADMIN), [
    entry(ADMIN, 'order.complete', ['order', '40'], {
      complete: { before: false, after: true },
      expiresAt: { before: iso(AT + HOUR), after: null }
    })
  ])
  // A cancellation records the order as it is left, every field after, whatever was read before.
  assert.deepEqual(entriesOf({ events: [orderEvent('order.cancelled', order)], before: order }, STAFF), [
    entry(STAFF, 'order.cancel', ['order', '40'], {
      id: { after: 40 },
      petId: { after: 10 },
      quantity: { after: 2 },
      shipDate: { after: null },
      complete: { after: false },
      ownerKeyId: { after: 5 },
      createdAt: { after: iso(AT - HOUR) },
      expiresAt: { after: iso(AT + HOUR) },
      version: { after: 1 }
    })
  ])
  for (const type of ['order.updated', 'order.cancelled', 'order.completed'] as const) {
    assert.deepEqual(entriesOf({ events: [orderEvent(type, order)], before: order }, CUSTOMER), [], `${type} by its customer`)
  }
  for (const type of ['order.created', 'order.expired'] as const) {
    assert.deepEqual(entriesOf({ events: [orderEvent(type, order)] }, STAFF), [], type)
  }
})

const KEY: KeyRecord = {
  id: 8, name: 'partner shop', role: 'customer', plan: 'free', perMinute: null, perDay: null,
  prefix: 'psk_Zc4Lq8VnT2bW', createdAt: AT - 24 * HOUR, revokedAt: null, expiresAt: null,
  replaces: null, replacedBy: null, quotaKeyId: 8, lastUsedAt: AT - HOUR, version: 1, scopes: ['catalog:read', 'orders:write']
}
const keyState = (record: KeyRecord, extra: Record<string, unknown> = {}) =>
  ({ record, ban: null, lastUsedAt: record.lastUsedAt, ...extra })

test('keys: a creation records each field but the key\'s last use; an update only what an admin changed; a revocation its state and why', () => {
  const { lastUsedAt: _lastUse, ...recorded } = KEY
  assert.deepEqual(entriesOf({ events: [keyEvent('key.created', keyState(KEY))] }, CLI), [
    entry(CLI, 'key.create', ['key', '8'], Object.fromEntries(Object.entries(recorded).map(([field, value]) => [
      field, { before: null, after: field === 'createdAt' ? iso(KEY.createdAt) : value }
    ])))
  ])
  // Renamed and given a day's expiry; its last use moved and its scopes were written again, equal.
  const changed: KeyRecord = {
    ...KEY, name: 'partner shop (EU)', expiresAt: AT + 24 * HOUR, lastUsedAt: AT, version: 2, scopes: ['catalog:read', 'orders:write']
  }
  assert.deepEqual(entriesOf({ events: [keyEvent('key.updated', keyState(changed))], before: KEY }, ADMIN), [
    entry(ADMIN, 'key.update', ['key', '8'], {
      name: { before: 'partner shop', after: 'partner shop (EU)' },
      expiresAt: { before: null, after: iso(AT + 24 * HOUR) }
    })
  ])
  // Scopes narrowed: an array compared by value.
  const narrowed: KeyRecord = { ...KEY, scopes: ['catalog:read'], version: 2 }
  assert.deepEqual(entriesOf({ events: [keyEvent('key.updated', keyState(narrowed))], before: KEY }, ADMIN), [
    entry(ADMIN, 'key.update', ['key', '8'], { scopes: { before: ['catalog:read', 'orders:write'], after: ['catalog:read'] } })
  ])
  const revoked: KeyRecord = { ...KEY, revokedAt: AT, version: 2 }
  const [revocation] = entriesOf({ events: [keyEvent('key.revoked', keyState(revoked, { reason: 'leaked' }))] }, ADMIN)
  assert.deepEqual(revocation?.target, { type: 'key', id: '8' })
  assert.equal(revocation.action, 'key.revoke')
  assert.deepEqual(revocation.changes.revokedAt, { after: iso(AT) })
  assert.deepEqual(revocation.changes.reason, { after: 'leaked' })
  assert.equal('lastUsedAt' in revocation.changes, false)
  assert.equal(Object.values(revocation.changes).some((change) => 'before' in change), false, 'no value before is guessed')
})

test('a rotation is an entry on the key rotated, naming its successor; made by its customer holder, it is audited', () => {
  const successor: KeyRecord = { ...KEY, id: 9, prefix: 'psk_Qm8Rt3VxN7cY', replaces: 8, quotaKeyId: 8, lastUsedAt: null, createdAt: AT }
  assert.deepEqual(entriesOf({ events: [keyEvent('key.rotated', keyState(successor))] }, CUSTOMER), [
    entry(CUSTOMER, 'key.rotate', ['key', '8'], { replacedBy: { before: null, after: 9 } })
  ])
})

test('a ban is the system\'s even in the request that tripped it, with its end and strike; an admin\'s unban is the admin\'s', () => {
  const until = AT + 15 * 60_000
  assert.deepEqual(entriesOf({ events: [keyBanEvent('key.banned', { quotaKeyId: 8, until, strike: 2 })] }, CUSTOMER), [
    entry(SYSTEM_CONTEXT, 'key.ban', ['key', '8'], { bannedUntil: { before: null, after: iso(until) }, strike: { after: 2 } })
  ])
  assert.deepEqual(entriesOf({ events: [keyBanEvent('key.unbanned', { quotaKeyId: 8, until: AT, strike: 2 })] }, ADMIN), [
    entry(ADMIN, 'key.unban', ['key', '8'], { bannedUntil: { before: iso(AT), after: null } })
  ])
  // A ban's end kept as epoch ms (the type allows it) is written as ISO 8601 all the same.
  const kept = eventDraft('key.banned', 8, { keyId: 8, until, strike: 1 })
  assert.deepEqual(entriesOf({ events: [kept] }, SYSTEM_CONTEXT)[0]?.changes, {
    bannedUntil: { before: null, after: iso(until) }, strike: { after: 1 }
  })
})

test('notices are not changes: an expiring key, a quota threshold, a deprecated call, a test delivery leave no entry', () => {
  const events = [
    keyEvent('key.expiring', keyState({ ...KEY, expiresAt: AT + 24 * HOUR })),
    eventDraft('quota.threshold', 8, { keyId: 8, window: 'day', limit: 1000, used: 800, percent: 80 }),
    eventDraft('deprecation.used', 8, { keyId: 8, operationId: 'getPet', sunset: null, successor: null, calls: 1, day: '2026-11-29' }),
    eventDraft('webhook.test', 8, { webhookId: 'wh_1', url: 'https://hooks.example/x', sentAt: iso(AT) })
  ]
  assert.deepEqual(entriesOf({ events }, ADMIN), [])
})

const HOOK = {
  id: 'wh_0123456789abcdef01234567',
  ownerKeyId: 8,
  url: 'https://hooks.partner.example/petstore',
  types: ['order.*'],
  description: null,
  status: 'enabled',
  // What the store's record also holds, none of which an entry may carry.
  seq: 4,
  disabledReason: null,
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  previousSecret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD',
  previousSecretUntil: AT + HOUR,
  createdAt: AT - HOUR,
  updatedAt: AT - HOUR,
  failingSince: null,
  version: 1
}

test('webhook endpoints: created, changed and deleted record only the endpoint\'s own fields, never its secrets, its instants or its version', () => {
  const fields = { id: HOOK.id, ownerKeyId: 8, url: HOOK.url, types: ['order.*'], description: null, status: 'enabled' }
  const as = (side: 'before' | 'after') => Object.fromEntries(Object.entries(fields).map(([field, value]) => [
    field, side === 'after' ? { before: null, after: value } : { before: value, after: null }
  ]))
  assert.deepEqual(entriesOf({ webhook: { action: 'webhook.create', after: HOOK } }, CUSTOMER), [
    entry(CUSTOMER, 'webhook.create', ['webhook', HOOK.id], as('after'))
  ])
  const moved = { ...HOOK, url: 'https://hooks.partner.example/v2', status: 'disabled', secret: 'whsec_other', updatedAt: AT, version: 2 }
  assert.deepEqual(entriesOf({ webhook: { action: 'webhook.update', before: HOOK, after: moved } }, ADMIN), [
    entry(ADMIN, 'webhook.update', ['webhook', HOOK.id], {
      url: { before: HOOK.url, after: 'https://hooks.partner.example/v2' },
      status: { before: 'enabled', after: 'disabled' }
    })
  ])
  assert.deepEqual(entriesOf({ webhook: { action: 'webhook.delete', before: HOOK } }, CUSTOMER), [
    entry(CUSTOMER, 'webhook.delete', ['webhook', HOOK.id], as('before'))
  ])
})

test('a secret\'s rotation records until when the previous secret signs, before and after; a replay what it selected and how many it queued', () => {
  const first = { before: null, after: AT + 24 * HOUR }
  assert.deepEqual(entriesOf({ webhook: { action: 'webhook.rotate_secret', id: HOOK.id, previousUntil: first } }, CUSTOMER), [
    entry(CUSTOMER, 'webhook.rotate_secret', ['webhook', HOOK.id], { previousSecretUntil: { before: null, after: iso(AT + 24 * HOUR) } })
  ])
  const second = { before: AT + HOUR, after: AT + 25 * HOUR }
  const again = entriesOf({ webhook: { action: 'webhook.rotate_secret', id: HOOK.id, previousUntil: second } }, CUSTOMER)
  assert.deepEqual(again[0]?.changes, { previousSecretUntil: { before: iso(AT + HOUR), after: iso(AT + 25 * HOUR) } })

  const range = { since: AT - 2 * HOUR, until: AT - HOUR }
  assert.deepEqual(entriesOf({ webhook: { action: 'webhook.replay', id: HOOK.id, selection: range, queued: 17 } }, STAFF), [
    entry(STAFF, 'webhook.replay', ['webhook', HOOK.id], {
      replay: { after: { since: iso(range.since), until: iso(range.until) } },
      queued: { after: 17 }
    })
  ])
  const picked = entriesOf({ webhook: { action: 'webhook.replay', id: HOOK.id, selection: { eventIds: ['evt_1', 'evt_2'] }, queued: 2 } }, STAFF)
  assert.deepEqual(picked[0]?.changes, { replay: { after: { eventIds: ['evt_1', 'evt_2'] } }, queued: { after: 2 } })
  // A recovery (the failed deliveries of a range) is its own action, with the same fields.
  const recovery = { action: 'webhook.replay' as const, id: HOOK.id, selection: { ...range, onlyFailed: true as const }, queued: 3 }
  const recovered = entriesOf({ webhook: recovery }, STAFF)
  assert.deepEqual(recovered, [
    entry(STAFF, 'webhook.recover', ['webhook', HOOK.id], {
      replay: { after: { since: iso(range.since), until: iso(range.until) } },
      queued: { after: 3 }
    })
  ])
})

test('an endpoint disabled after days of failures is the system\'s entry, with the reason; one disabled by a PATCH is that PATCH\'s entry alone', () => {
  const view = {
    id: HOOK.id, url: HOOK.url, types: ['order.*'], status: 'disabled', ownerKeyId: 8, createdAt: iso(AT - HOUR), updatedAt: iso(AT)
  }
  assert.deepEqual(entriesOf({ events: [eventDraft('webhook.disabled', 8, { ...view, reason: 'failing' })] }, STAFF), [
    entry(SYSTEM_CONTEXT, 'webhook.disable', ['webhook', HOOK.id], {
      status: { before: 'enabled', after: 'disabled' },
      reason: { after: 'failing' }
    })
  ])
  assert.deepEqual(entriesOf({ events: [eventDraft('webhook.disabled', 8, { ...view, reason: 'manual' })] }, ADMIN), [])
})

test('an update whose store read no record before (undefined or null) records the values after, none guessed before', () => {
  const pet: PetRecord = { id: 7, name: 'Rex', categoryId: 1, status: 'sold', version: 2 }
  const after = {
    id: { after: 7 }, name: { after: 'Rex' }, categoryId: { after: 1 }, status: { after: 'sold' }, version: { after: 2 }
  }
  for (const before of [undefined, null]) {
    assert.deepEqual(entriesOf({ events: [catalogEvent('pet.updated', pet)], before }, STAFF), [
      entry(STAFF, 'pet.update', ['pet', '7'], after)
    ], String(before))
  }
})

// The dispatcher disables it (webhooks/dispatcher.ts, disableInactiveOwners) in a round that a
// request may have woken: wake()'s timer runs in that request's actor context, whose key the
// entry must not name.
test('an endpoint disabled because its owner has no live key is the system\'s entry, like one disabled for failing', () => {
  const view = {
    id: HOOK.id, url: HOOK.url, types: ['order.*'], status: 'disabled', ownerKeyId: 8, createdAt: iso(AT - HOUR), updatedAt: iso(AT)
  }
  const [disabled] = entriesOf({ events: [eventDraft('webhook.disabled', 8, { ...view, reason: 'owner_inactive' })] }, CUSTOMER)
  assert.deepEqual(disabled?.actor, { type: 'system' })
  assert.equal(disabled.requestId, null)
})

test('one change\'s several events are as many entries, in order, each under its own actor', () => {
  const pet: PetRecord = { id: 7, name: 'Rex', categoryId: 1, status: 'available', version: 1 }
  const events = [
    catalogEvent('pet.updated', { ...pet, name: 'Max', version: 2 }),
    keyBanEvent('key.banned', { quotaKeyId: 2, until: AT + 60_000, strike: 1 }),
    catalogEvent('pet.deleted', { id: 7 })
  ]
  const entries = entriesOf({ events, before: pet }, STAFF)
  assert.deepEqual(entries.map((e) => [e.action, e.actor.type, e.requestId]), [
    ['pet.update', 'key', 'req-staff'], ['key.ban', 'system', null], ['pet.delete', 'key', 'req-staff']
  ])
})

test('secret-like fields of a record are never recorded, whatever record carries them', () => {
  const record = { id: 3, name: 'Cats', passwordHash: 'x', apiToken: 'y', clientSecret: 'z', key: 'psk_...', searchName: 'cats', version: 1 }
  assert.deepEqual(entriesOf({ events: [catalogEvent('category.created', record)] }, STAFF)[0]?.changes, {
    id: { before: null, after: 3 }, name: { before: null, after: 'Cats' }, version: { before: null, after: 1 }
  })
  const changed = { ...record, passwordHash: 'x2', apiToken: 'y2', clientSecret: 'z2', key: 'psk_2', searchName: 'felines', name: 'Felines' }
  assert.deepEqual(entriesOf({ events: [catalogEvent('category.updated', changed)], before: record }, STAFF)[0]?.changes, {
    name: { before: 'Cats', after: 'Felines' }
  })
})
