// The public contract of the audit log (docs/product.md, the audit log): an entry, the list's
// query and the head.
import { Type, type Static } from 'typebox'
import { Int64, NO_CONTROLS, paramDescription, StringEnum } from '../shared/schemas.ts'

const Hash = (description: string) => Type.String({ pattern: '^([0-9a-f]{64})?$', description })

export const AuditActorSchema = Type.Object({
  type: StringEnum(['key', 'cli', 'system', 'address'] as const, { description: '`key`: a request made with an API key; `cli`: `petstore keys …` on a server\'s machine; `system`: the service itself (a ban the limiter started, a background job); `address`: a request without a valid key (reporting leaked keys), known by `address`.' }),
  keyId: Type.Optional(Int64({ description: 'The key presented (actor `key`).' })),
  role: Type.Optional(Type.String({ description: 'The key\'s role at the time (actor `key`).' })),
  user: Type.Optional(Type.String({ description: 'The operating system user who ran the command (actor `cli`).' })),
  via: Type.Optional(StringEnum(['portal'] as const, { description: '`portal`: the key\'s holder made the change in the partner portal (`/portal`), which acts as the key (actor `key`); absent for a request made with the key itself.' }))
}, { title: 'AuditActor', additionalProperties: false, description: 'Who made the change.', examples: [{ type: 'key', keyId: 3, role: 'admin' }] })

const FieldChangeSchema = Type.Object({
  before: Type.Optional(Type.Unknown({ description: 'The value before the change; null for a field that did not exist; absent when not read.' })),
  after: Type.Optional(Type.Unknown({ description: 'The value after the change; null for a field deleted.' }))
}, { title: 'AuditFieldChange', additionalProperties: false })

const ENTRY_EXAMPLE = {
  id: 42,
  at: '2026-11-21T12:00:30.000Z',
  actor: { type: 'key', keyId: 3, role: 'admin' },
  action: 'key.revoke',
  target: { type: 'key', id: '7' },
  requestId: 'req-1',
  address: '203.0.113.7',
  changes: { revokedAt: { after: '2026-11-21T12:00:30.000Z' } },
  hash: '5f1c0a4e8d2b7c6a9e3f1d0b8a7c6e5d4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c'
}

export const AuditEntrySchema = Type.Object({
  id: Int64({ description: 'The entry\'s place in the chain: 1, 2, 3 … without gaps.' }),
  at: Type.String({ format: 'date-time', description: 'When the change committed (ISO 8601, UTC).' }),
  actor: AuditActorSchema,
  action: Type.String({ description: 'What was done: `<target type>.<verb>`, such as `key.revoke`, `pet.update`, `key.ban`.' }),
  target: Type.Object({
    type: Type.String({ description: '`key`, `pet`, `category`, `inventory` (by pet id), `order` or `webhook`.' }),
    id: Type.String({ description: 'The target\'s id, as text.' })
  }, { title: 'AuditTarget', additionalProperties: false }),
  requestId: Type.Union([Type.String(), Type.Null()], { description: 'The request that made the change (its `Request-Id`); null outside a request.' }),
  address: Type.Union([Type.String(), Type.Null()], { description: 'The client address of that request; null outside a request.' }),
  changes: Type.Record(Type.String(), FieldChangeSchema, { description: 'Each field the change wrote, with its value before and after. A create records every field (before null), a delete what it removed (after null), an update each field whose value changed (before and after; a key update only the values written, after). Never a secret or the hash of one.' }),
  hash: Hash('SHA-256 (hex) of the previous entry\'s hash (the empty string for entry 1) followed by this entry\'s canonical JSON (every field but `hash`, keys sorted, no white space, `at` in epoch milliseconds).')
}, {
  title: 'AuditEntry', additionalProperties: false, description: 'One change by staff, an admin, the command line or the system, or to a webhook endpoint by its owner.',
  examples: [ENTRY_EXAMPLE]
})

export const AuditEntriesSchema = Type.Array(AuditEntrySchema, { examples: [[ENTRY_EXAMPLE]] })

export const AuditHeadSchema = Type.Object({
  count: Type.Integer({ minimum: 0, description: 'How many entries the log holds.' }),
  hash: Hash('The last entry\'s hash; the empty string when the log is empty. Keep it, with the count, outside the service: `petstore audit verify --known COUNT:HASH` checks that the log still holds that entry, so a cut tail shows.')
}, { title: 'AuditHead', additionalProperties: false, examples: [{ count: 42, hash: '5f1c0a4e8d2b7c6a9e3f1d0b8a7c6e5d4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c' }] })

export const AuditListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 20,
    description: paramDescription('Page size, 1 to 100.'),
    examples: [20]
  })),
  // The example is a real cursor (`v1:100`): the entries below 100.
  cursor: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 200,
    pattern: NO_CONTROLS,
    description: 'Opaque cursor from the `Link: rel="next"` header of the previous page.',
    examples: ['djE6MTAw']
  })),
  actor: Type.Optional(Type.String({ pattern: '^([1-9][0-9]{0,15}|cli|system|address)$', description: 'Only the changes of this key (its id), or of `cli`, `system` or `address`.', examples: ['3'] })),
  action: Type.Optional(Type.String({ maxLength: 100, pattern: '^[a-z]+\\.([a-z]+|\\*)$', description: 'Only this action (`key.revoke`), or a family of them (`key.*`).', examples: ['key.*'] })),
  targetType: Type.Optional(Type.String({ maxLength: 40, pattern: '^[a-z]+$', description: 'Only changes of this kind of record: `key`, `pet`, `category`, `inventory`, `order`, `webhook`.', examples: ['key'] })),
  targetId: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 100,
    pattern: NO_CONTROLS,
    description: 'Only changes of the record with this id (with `targetType`, one record\'s history).',
    examples: ['7']
  })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Only changes at or after this instant.', examples: ['2026-11-21T00:00:00Z'] })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Only changes before this instant.', examples: ['2026-11-22T00:00:00Z'] }))
}, { additionalProperties: false })
export type AuditListQuery = Static<typeof AuditListQuery>
