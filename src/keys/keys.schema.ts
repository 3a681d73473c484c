// The key administration API's shapes (docs/product.md sections 3 and 4; roles and plans are
// accounts/plans.ts). Examples name the keys
// `serve --sample-data` makes: 1 customer, 2 staff, 3 admin.
import { Type, type Static } from 'typebox'
import { IdParam, Int64, NO_CONTROLS, PageQuery, paramDescription, StringEnum } from '../shared/schemas.ts'
import { KEY_STATUSES } from '../accounts/keys.status.ts'
import { KEY_FORMATS, KEY_PATTERN, REVOCATION_REASONS } from '../accounts/keys.rules.ts'
import { PLANS, PlanSchema, ROLES, RoleSchema, type Plan, type Role } from '../accounts/plans.ts'
import { SCOPES, ScopeSchema, type Scope } from '../accounts/scopes.ts'

const keyIdParams = (example: number) => Type.Object({ keyId: IdParam('The key id.', [example]) }, { additionalProperties: false })
export const KeyIdParams = keyIdParams(1)
/** revokeApiKey's example revokes a key no other example uses (2, the sample staff key). */
export const RevokeKeyIdParams = keyIdParams(2)

const Quota = (description: string, example: number) => Type.Integer({
  minimum: 1,
  maximum: 1_000_000_000,
  description,
  examples: [example]
})
const PerMinute = Quota('Requests per UTC minute (enterprise only); at most perDay, or `400 validation_failed`.', 2_000)
const PerDay = Quota('Requests per UTC day (enterprise only); at least perMinute, or `400 validation_failed`.', 500_000)
const KeyName = Type.String({ minLength: 1, maxLength: 100, pattern: NO_CONTROLS, description: 'A label for people, 1 to 100 characters, no control characters.', examples: ['Partner shop'] })

export const BanSchema = Type.Object({
  until: Type.String({ format: 'date-time', description: 'When the ban ends.' }),
  reason: Type.String()
}, { title: 'Ban', additionalProperties: false, examples: [{ until: '2026-11-23T12:15:00.000Z', reason: 'kept calling while rate limited' }] })

/** A checksummed key (its last 6 characters are the checksum of the 43 before them). */
const KEY_EXAMPLE = 'psk_7Hq2xV9mT4bN8cR1sW6yK3fJ5dL0gA2eZ8uP1oQ3iY51W2QmU'

const API_KEY_EXAMPLE = {
  id: 1,
  name: 'sample customer',
  role: 'customer',
  plan: 'free',
  limits: { perMinute: 60, perDay: 1_000 },
  prefix: 'psk_Zc4Lq8VnT2bW',
  format: 'checksummed',
  createdAt: '2026-11-23T09:00:00.000Z',
  revokedAt: null,
  expiresAt: null,
  replaces: null,
  replacedBy: null,
  lastUsedAt: '2026-11-23T09:12:41.087Z',
  scopes: null,
  ban: null
}

export const ApiKeySchema = Type.Object({
  id: Int64(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: RoleSchema,
  plan: PlanSchema,
  limits: Type.Object({ perMinute: Type.Integer(), perDay: Type.Integer() }, {
    additionalProperties: false,
    description: 'The quotas in force for this key.'
  }),
  prefix: Type.String({ description: 'The first characters of the key, to recognise it; the key itself is never shown again.' }),
  format: StringEnum(KEY_FORMATS, { description: '`checksummed`: `psk_`, 43 random base62 characters and a 6-character checksum, which secret scanners and this service check without any lookup (docs/api.md). `legacy`: a key made before checksums (`psk_` and 43 base64url characters); it works until it is rotated or expires: rotate it to get a checksummed key.', examples: ['checksummed'] }),
  createdAt: Type.String({ format: 'date-time' }),
  revokedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'From this instant the key answers `401 api_key_expired`; null: it never expires. A rotation sets it to the end of the grace period.', example: '2027-02-19T12:00:00.000Z' }),
  replaces: Type.Union([Int64(), Type.Null()], { description: 'The key this one replaced by rotation (they share one quota and ban), if any.', example: null }),
  replacedBy: Type.Union([Int64(), Type.Null()], { description: 'The key that replaced this one by rotation, if any.', example: null }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'The last request made with the key; null: never used. Every instance writes it within 5 seconds.', example: '2026-11-21T11:58:02.113Z' }),
  scopes: Type.Union([Type.Array(ScopeSchema), Type.Null()], { description: 'A restricted key\'s scopes, in a fixed order: it may call only the operations whose scope it holds (`403 insufficient_scope` otherwise). Null: everything its role allows. Set at creation; a rotation keeps them.', example: ['catalog:read'] }),
  ban: Type.Union([BanSchema, Type.Null()], { description: 'The ban in force, if any. A ban covers every key of a rotation chain while they share a quota.' })
}, { title: 'ApiKey', additionalProperties: false, examples: [API_KEY_EXAMPLE] })
export type ApiKey = Static<typeof ApiKeySchema>

/** The data of a key.revoked event: the key view and why it was revoked. */
export const RevokedApiKeySchema = Type.Object({
  ...ApiKeySchema.properties,
  reason: Type.Optional(StringEnum(REVOCATION_REASONS, { description: 'Why: `requested` by an admin, or `leaked` (reported through POST /v1/keys/leaked). Absent from events written before reasons were recorded: those were requested.', examples: ['leaked'] }))
}, { title: 'RevokedApiKey', additionalProperties: false, description: 'The revoked key as a GET of it answers, and why it was revoked.', examples: [{ ...API_KEY_EXAMPLE, revokedAt: '2026-11-23T10:00:00.000Z', reason: 'leaked' }] })

export const ApiKeysSchema = Type.Array(ApiKeySchema, { title: 'ApiKeys', examples: [[API_KEY_EXAMPLE]] })

const Scopes = Type.Optional(Type.Array(ScopeSchema, {
  minItems: 1, maxItems: SCOPES.length, uniqueItems: true,
  description: 'Restricts the key to these scopes, each within its role (customer: `catalog:read`, `orders:read`, `orders:write`, `inventory:read`, `webhooks:manage`; staff also `catalog:write`, `inventory:write`; admin also `keys:admin`); one outside the role is `400 validation_failed`. Absent: everything the role allows.',
  example: ['catalog:read']
}))

const ExpiresAt = Type.Optional(Type.String({ format: 'date-time', description: 'When the key stops working (then `401 api_key_expired`); must be in the future. Absent: never.', example: '2027-02-19T12:00:00Z' }))

const NewPlanApiKeySchema = Type.Object({
  name: Type.Optional(KeyName),
  role: RoleSchema,
  plan: StringEnum(['free', 'pro', 'business'] as const, { description: 'A plan with fixed quotas.', examples: ['pro'] }),
  expiresAt: ExpiresAt,
  scopes: Scopes
}, { title: 'NewPlanApiKey', additionalProperties: false, description: 'A key on a plan with fixed quotas: no perMinute or perDay.', examples: [{ name: 'Partner shop', role: 'customer', plan: 'pro' }] })

const NewEnterpriseApiKeySchema = Type.Object({
  name: Type.Optional(KeyName),
  role: RoleSchema,
  plan: StringEnum(['enterprise'] as const, { description: 'Quotas set per key.', examples: ['enterprise'] }),
  perMinute: PerMinute,
  perDay: PerDay,
  expiresAt: ExpiresAt,
  scopes: Scopes
}, {
  title: 'NewEnterpriseApiKey',
  additionalProperties: false,
  description: 'An enterprise key: both quotas are required, and perMinute may not exceed perDay.',
  examples: [{ name: 'Wholesale partner', role: 'customer', plan: 'enterprise', perMinute: 2_000, perDay: 500_000 }]
})

/**
 * The enterprise rule in the schema: a `oneOf` keyed by `plan` (the document adds the
 * discriminator's mapping), so generators and validating proxies know that perMinute and
 * perDay come with enterprise and only with it. The validator picks the branch by `plan`, so
 * its messages speak of that branch only. The type is the flat shape both branches fit.
 */
export const NewApiKeySchema = Type.Unsafe<{
  name?: string
  role: Role
  plan: Plan
  perMinute?: number
  perDay?: number
  expiresAt?: string
  scopes?: Scope[]
}>({
  // Ajv's discriminator applies to objects only: without the type, "text" or null passed validation.
  type: 'object',
  oneOf: [NewPlanApiKeySchema, NewEnterpriseApiKeySchema],
  discriminator: { propertyName: 'plan' },
  description: 'perMinute and perDay are required for the enterprise plan and refused for the others; perMinute may not exceed perDay.',
  examples: [{ name: 'Partner shop', role: 'customer', plan: 'pro' }]
})
export type NewApiKey = Static<typeof NewApiKeySchema>

export const ApiKeyPatchSchema = Type.Object({
  name: Type.Optional(KeyName),
  role: Type.Optional(RoleSchema),
  plan: Type.Optional(PlanSchema),
  perMinute: Type.Optional(PerMinute),
  perDay: Type.Optional(PerDay)
}, { title: 'ApiKeyPatch', additionalProperties: false, minProperties: 1, description: 'The fields to change; at least one. perMinute and perDay are for enterprise keys only; moving a key off enterprise drops them. After the change perMinute may not exceed perDay.', examples: [{ name: 'Partner shop (EU)' }] })
export type ApiKeyPatch = Static<typeof ApiKeyPatchSchema>

export const CreatedApiKeySchema = Type.Object({
  ...ApiKeySchema.properties,
  key: Type.String({ pattern: `^${KEY_PATTERN}$`, description: 'The API key. Shown once: only its hash is stored. `psk_`, 43 random base62 characters and their 6-character checksum (docs/api.md): secret scanners find it by this pattern.' })
}, {
  title: 'CreatedApiKey',
  additionalProperties: false,
  examples: [{ ...API_KEY_EXAMPLE, id: 4, name: 'Partner shop', prefix: 'psk_7Hq2xV9mT4bN', key: KEY_EXAMPLE }]
})

/** At most this many keys per leak report. */
export const LEAKED_KEYS_MAX = 100

export const LeakedKeysSchema = Type.Object({
  keys: Type.Array(Type.String({ minLength: 1, maxLength: 200, pattern: NO_CONTROLS, description: 'A key found where it should not be: any text without control characters may be sent; only a valid key of this service is acted on.' }), {
    minItems: 1, maxItems: LEAKED_KEYS_MAX, description: `The keys found, 1 to ${LEAKED_KEYS_MAX}.`
  })
}, { title: 'LeakedKeys', additionalProperties: false, description: 'Keys found exposed (in a repository, a paste, a log).', examples: [{ keys: [KEY_EXAMPLE] }] })
export type LeakedKeys = Static<typeof LeakedKeysSchema>

/** The one answer to a leak report: the same bytes whatever was sent, so it tells nothing about any key. */
export const LEAK_REPORT_ANSWER = {
  status: 'accepted',
  message: 'Every valid key among those sent is revoked, with the keys of its rotation; this answer is the same whether any key was valid or not.'
} as const

export const LeakReportSchema = Type.Object({
  status: StringEnum(['accepted'] as const),
  message: Type.String()
}, { title: 'LeakReport', additionalProperties: false, description: 'Always this very object.', examples: [LEAK_REPORT_ANSWER] })

export const KeyListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(StringEnum(KEY_STATUSES, {
    description: 'Only keys with this status, one per key, the first that applies: `revoked`; `rotated` (a successor replaces it); `expired`; `banned` (a ban in force on its rotation chain); `expiring` (it expires within 7 days); `active`.',
    examples: ['banned']
  })),
  role: Type.Optional(StringEnum(ROLES, { description: 'Only keys with this role.', examples: ['customer'] })),
  plan: Type.Optional(StringEnum(PLANS, { description: 'Only keys on this plan.', examples: ['pro'] })),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NO_CONTROLS, description: 'Search: keys whose name contains this text (case-insensitive), or whose prefix starts with it (`psk_Zc4L`).', examples: ['partner'] }))
}, { additionalProperties: false })

/** Rotation's grace period: a day by default, a week at most (docs/product.md section 9). */
export const GRACE_PERIOD_DEFAULT_S = 86_400
export const GRACE_PERIOD_MAX_S = 604_800

export const RotateApiKeySchema = Type.Object({
  gracePeriodSeconds: Type.Optional(Type.Integer({
    minimum: 0, maximum: GRACE_PERIOD_MAX_S, default: GRACE_PERIOD_DEFAULT_S,
    description: 'How long the old key keeps working beside the new one, in seconds: 0 (it stops at once) to 604800 (a week). Default 86400 (a day).',
    example: 3600
  }))
}, { title: 'ApiKeyRotation', additionalProperties: false, description: 'Optional: no body is the same as `{}` (the default grace period).', example: { gracePeriodSeconds: 3600 } })
export type RotateApiKey = Static<typeof RotateApiKeySchema>

/** Usage per key: the last 30 days by default, 90 at most. */
export const USAGE_DAYS_DEFAULT = 30
export const USAGE_DAYS_MAX = 90

export const KeyUsageQuery = Type.Object({
  days: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: USAGE_DAYS_MAX,
    default: USAGE_DAYS_DEFAULT,
    description: paramDescription('How many UTC days to cover, today included: 1 to 90.'),
    example: 7
  }))
}, { additionalProperties: false })

export const KeyUsageDaySchema = Type.Object({
  date: Type.String({ format: 'date', description: 'The UTC day.' }),
  allowed: Type.Integer({ minimum: 0, description: 'Requests charged to the key\'s windows, whatever the answer (what the day window\'s used counts); free calls are not counted.' }),
  limited: Type.Integer({ minimum: 0, description: 'Requests answered `429 rate_limited`.' }),
  banned: Type.Integer({ minimum: 0, description: 'Requests answered `429 api_key_banned`.' }),
  mcp: Type.Integer({ minimum: 0, description: 'Of the requests counted above, those an agent made through the MCP endpoint: each tool call, `initialize` and the lists. The `POST /mcp` exchanges that carry them are free requests of the key, counted in `allowed` but not here.' }),
  other4xx: Type.Integer({ minimum: 0, description: 'Of `allowed`, the requests answered 4xx: refused for another reason than a window or a ban (`400 validation_failed`, `403` for the role or a scope, `404`, `409`, `410 operation_sunset`, …). They stay in `allowed`, which is what the windows charged; so `allowed - other4xx` (answered 2xx, 3xx or 5xx), `other4xx`, `limited` and `banned` partition the day\'s counted requests, each in exactly one, as the partner portal\'s stacked chart draws them.' })
}, {
  title: 'KeyUsageDay',
  additionalProperties: false,
  example: { date: '2026-11-21', allowed: 1250, limited: 3, banned: 0, mcp: 40, other4xx: 12 }
})

/** A deprecated operation's successor, as the route declares it. */
const SuccessorSchema = Type.Union([
  Type.Object({
    method: Type.String({ description: 'The successor\'s HTTP method.' }),
    path: Type.String({ description: 'The successor\'s path template, as in this document.' }),
    operationId: Type.String({ description: 'The successor\'s operationId.' })
  }, { additionalProperties: false }),
  Type.Null()
], { description: 'The operation to call instead; null: none.' })

export const KeyDeprecatedCallsSchema = Type.Object({
  operationId: Type.String({ description: 'The deprecated operation.' }),
  method: Type.String({ description: 'Its HTTP method.' }),
  path: Type.String({ description: 'Its path template, as in this document.' }),
  deprecatedAt: Type.String({ format: 'date-time', description: 'When it was deprecated.' }),
  sunsetAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'From this instant the operation answers `410 operation_sunset`; null: no sunset set.' }),
  successor: SuccessorSchema,
  calls: Type.Integer({ minimum: 1, description: 'Calls of it with this key over the days covered, whatever the answer.' }),
  lastCallAt: Type.String({ format: 'date-time', description: 'The last of those calls.' })
}, { title: 'KeyDeprecatedCalls', additionalProperties: false })

export const KeyUsageSchema = Type.Object({
  keyId: Int64(),
  days: Type.Array(KeyUsageDaySchema, { description: 'One entry per UTC day with traffic, oldest first.' }),
  deprecated: Type.Array(KeyDeprecatedCallsSchema, { description: 'The deprecated operations this key called over the same days, latest call first, each with its successor and sunset; empty: none. Per key: each key of a rotated pair lists its own calls. Calls reach it with the usage counts (within 5 seconds); this instance\'s are written before the answer.' })
}, {
  title: 'KeyUsage',
  additionalProperties: false,
  example: {
    keyId: 3,
    days: [
      { date: '2026-11-20', allowed: 980, limited: 0, banned: 0, mcp: 0, other4xx: 0 },
      { date: '2026-11-21', allowed: 1250, limited: 3, banned: 0, mcp: 40, other4xx: 12 }
    ],
    deprecated: [{
      operationId: 'getPet',
      method: 'GET',
      path: '/v1/pets/{petId}',
      deprecatedAt: '2026-11-21T00:00:00.000Z',
      sunsetAt: '2027-05-21T00:00:00.000Z',
      successor: { method: 'GET', path: '/v1/pets?id={petId}', operationId: 'listPets' },
      calls: 14,
      lastCallAt: '2026-11-21T09:12:41.087Z'
    }]
  }
})
export type KeyUsage = Static<typeof KeyUsageSchema>

const KeyWindowSchema = Type.Object({
  limit: Type.Integer({ minimum: 0, description: 'The quota of the window.' }),
  used: Type.Integer({ minimum: 0, description: 'Requests charged to it so far.' }),
  remaining: Type.Integer({ minimum: 0, description: 'Requests left in it.' }),
  reset: Type.Integer({ description: 'Unix time (seconds) at which it resets.' })
}, { title: 'KeyRateLimitWindow', additionalProperties: false })

export const KeyRateLimitSchema = Type.Object({
  keyId: Int64(),
  subject: Type.String({ description: 'The quota identity the windows belong to: `key:ID` of the first key of its rotation chain, shared by the chain.' }),
  windows: Type.Object({ minute: KeyWindowSchema, day: KeyWindowSchema }, { additionalProperties: false }),
  ban: Type.Union([BanSchema, Type.Null()], { description: 'The ban in force on this instance\'s limiter, if any.' })
}, {
  title: 'KeyRateLimit',
  additionalProperties: false,
  examples: [{
    keyId: 1,
    subject: 'key:1',
    windows: {
      minute: { limit: 60, used: 3, remaining: 57, reset: 1795435260 },
      day: { limit: 1000, used: 12, remaining: 988, reset: 1795478400 }
    },
    ban: null
  }]
})
export type KeyRateLimit = Static<typeof KeyRateLimitSchema>

/** Ban history: the latest 50 bans of a key's rotation chain. */
export const BAN_HISTORY_MAX = 50

export const KeyBanSchema = Type.Object({
  keyId: Type.Union([Int64(), Type.Null()], { description: 'The key whose request started the ban (any key of the chain).' }),
  startedAt: Type.String({ format: 'date-time' }),
  until: Type.String({ format: 'date-time', description: 'When the ban ends, or ended.' }),
  liftedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When an admin lifted it; null: not lifted.' }),
  reason: Type.String()
}, { title: 'KeyBan', additionalProperties: false })

export const KeyBansSchema = Type.Object({
  keyId: Int64(),
  bans: Type.Array(KeyBanSchema, { description: `The bans of the key's rotation chain, latest first, at most ${BAN_HISTORY_MAX}.` })
}, {
  title: 'KeyBans',
  additionalProperties: false,
  examples: [{ keyId: 1, bans: [{ keyId: 1, startedAt: '2026-11-23T12:00:00.000Z', until: '2026-11-23T12:15:00.000Z', liftedAt: '2026-11-23T12:05:00.000Z', reason: 'kept calling while rate limited: 21 requests before Retry-After had passed' }] }]
})
export type KeyBans = Static<typeof KeyBansSchema>

/** The deprecation view covers the last 30 UTC days, today included. */
export const DEPRECATION_DAYS = 30

export const DeprecationsSchema = Type.Object({
  from: Type.String({ format: 'date', description: `The first UTC day covered: ${DEPRECATION_DAYS} days, today included.` }),
  operations: Type.Array(Type.Object({
    operationId: Type.String(),
    method: Type.String(),
    path: Type.String({ description: 'The path template, as in this document.' }),
    deprecatedAt: Type.String({ format: 'date-time' }),
    sunsetAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'From this instant the operation answers `410 operation_sunset`.' }),
    successor: Type.Union([
      Type.Object({
        method: Type.String(),
        path: Type.String(),
        operationId: Type.String()
      }, { additionalProperties: false }),
      Type.Null()
    ]),
    keys: Type.Array(Type.Object({
      keyId: Int64(),
      name: Type.Union([Type.String(), Type.Null()], { description: 'Null: the key has no name, or no longer exists.' }),
      prefix: Type.Union([Type.String(), Type.Null()]),
      calls: Type.Integer({ minimum: 0, description: 'Calls over the period.' }),
      lastCallAt: Type.String({ format: 'date-time' }),
      days: Type.Array(Type.Object({
        date: Type.String({ format: 'date' }),
        calls: Type.Integer({ minimum: 0 })
      }, { additionalProperties: false }), { description: 'Days with calls, oldest first.' })
    }, { additionalProperties: false }), { description: 'The keys that called it in the period, latest call first. Calls without a valid key are not counted here (they are in the metrics as `anonymous`).' })
  }, { additionalProperties: false }))
}, {
  title: 'Deprecations',
  additionalProperties: false,
  examples: [{
    from: '2026-10-25',
    operations: [{
      operationId: 'getPet', method: 'GET', path: '/v1/pets/{petId}', deprecatedAt: '2026-11-21T00:00:00.000Z', sunsetAt: '2027-05-21T00:00:00.000Z',
      successor: { method: 'GET', path: '/v1/pets?id={petId}', operationId: 'listPets' },
      keys: [{
        keyId: 1,
        name: 'sample customer',
        prefix: 'psk_Zc4Lq8VnT2bW',
        calls: 14,
        lastCallAt: '2026-11-23T09:12:41.087Z',
        days: [{ date: '2026-11-22', calls: 9 }, { date: '2026-11-23', calls: 5 }]
      }]
    }]
  }]
})
export type Deprecations = Static<typeof DeprecationsSchema>
