// The public contract of a key's request log (docs/product.md 9.13, GET /v1/keys/me/requests and
// the operator's GET /v1/admin/keys/{keyId}/requests): one logged request, the refusal that
// explains a 401, 403 or 429, and the list's query.
import { Type, type Static } from 'typebox'
import { RoleSchema } from '../accounts/plans.ts'
import { ScopeSchema } from '../accounts/scopes.ts'
import { IdParam, NO_CONTROLS, PageQuery, StringEnum } from '../shared/schemas.ts'

/** How many requests each key keeps, whatever they were (the newest). */
export const KEEP_LAST = 1000
/** Besides them: the key's refusals of this many days… */
export const REFUSAL_DAYS = 7
/** …at most this many (the newest), so that a key hammering while banned cannot grow the table. */
export const REFUSALS_MAX = 10_000

const At = (description: string) => Type.String({ format: 'date-time', description })
const Message = Type.String({ description: 'The refusal\'s message, as the answer said it.' })

const WindowRefusal = (rule: 'minute_window' | 'day_window', window: string) => Type.Object({
  rule: StringEnum([rule] as const, { description: `The ${window} window of the key's quota was used up.` }),
  message: Message,
  limit: Type.Integer({ minimum: 0, description: `The ${window} window's limit (requests).` }),
  resetAt: At(`When the ${window} window reset (ISO 8601, UTC): from then on the key could call again.`)
}, { title: rule === 'minute_window' ? 'MinuteWindowRefusal' : 'DayWindowRefusal', additionalProperties: false })

/**
 * The partner portal's own refusals of a valid key's request (access/access.service.ts). A session
 * that ended is no key's refusal of its own: with a key refused since it is that key's (`key`),
 * and without a live session the key is not known (in no log).
 */
export const PORTAL_REFUSALS = ['csrf_token_invalid'] as const

export const RefusalSchema = Type.Union([
  WindowRefusal('minute_window', 'minute'),
  WindowRefusal('day_window', 'day (UTC)'),
  Type.Object({
    rule: StringEnum(['ban'] as const, { description: 'The key was banned for calling while told to wait.' }),
    message: Message,
    until: At('When the ban ends, or ended (ISO 8601, UTC).'),
    reason: Type.String({ description: 'Why the key was banned.' })
  }, { title: 'BanRefusal', additionalProperties: false }),
  Type.Object({
    rule: StringEnum(['scope'] as const, { description: 'The key is restricted to scopes, and the operation needs another.' }),
    message: Message,
    needed: ScopeSchema
  }, { title: 'ScopeRefusal', additionalProperties: false }),
  Type.Object({
    rule: StringEnum(['role'] as const, { description: 'The operation needs a higher role than the key\'s.' }),
    message: Message,
    needed: RoleSchema
  }, { title: 'RoleRefusal', additionalProperties: false }),
  Type.Object({
    rule: StringEnum(['key'] as const, { description: 'The key itself was refused: revoked, expired, or rotated and past its grace period.' }),
    message: Type.String({ description: 'Why the key was refused, in words: its state, since when, and what to use instead.' }),
    state: StringEnum(['revoked', 'expired', 'rotated'] as const, {
      description: '`revoked`: an admin or the key holder revoked it; `expired`: its expiry passed; `rotated`: a successor replaces it and its grace period is over.'
    }),
    since: At('When it was revoked, or expired (for `rotated`, when its grace period ended), ISO 8601, UTC.'),
    replacedBy: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'The id of the key that replaced it by rotation, or null.' })
  }, { title: 'KeyRefusal', additionalProperties: false }),
  Type.Object({
    rule: StringEnum(['portal'] as const, { description: 'The partner portal\'s own rule refused a request made through its door (`/portal/api/v1/…`), the key being valid.' }),
    message: Message,
    code: StringEnum(PORTAL_REFUSALS, {
      description: '`csrf_token_invalid`: a change (any method but `GET` or `HEAD`) without the session\'s `X-CSRF-Token`, or with another; nothing was changed.'
    })
  }, { title: 'PortalRefusal', additionalProperties: false })
], {
  title: 'RequestRefusal',
  description: 'Which rule refused the request, and its facts: `minute_window` or `day_window` (the quota, `limit` and `resetAt`), `ban` (`until` and `reason`), `scope` (the scope `needed`), `role` (the role `needed`), `key` (the key was revoked, expired or rotated past its grace period: its `state`, `since` and successor; a portal session that ended because its key was is logged so too), `portal` (the partner portal\'s own rule, its `code`).'
})
export type Refusal = Static<typeof RefusalSchema>

const EXAMPLE = {
  id: 1042,
  at: '2026-11-21T14:02:07.123Z',
  method: 'GET',
  route: '/v1/pets/{petId}',
  operationId: 'getPet',
  query: null,
  status: 429,
  code: 'rate_limited',
  requestId: '0b6f8a56-3c1e-4f2a-9d7b-5e4c3b2a1f00',
  latencyMs: 0.41,
  via: 'http',
  refusal: {
    rule: 'minute_window',
    message: 'rate limit exceeded; retry in 53 s',
    limit: 60,
    resetAt: '2026-11-21T14:03:00.000Z'
  }
}

export const KeyRequestSchema = Type.Object({
  id: Type.Integer({ minimum: 1, description: 'The entry\'s id: larger is newer.' }),
  at: At('When the request arrived (ISO 8601, UTC).'),
  method: Type.String({ description: 'The HTTP method.' }),
  route: Type.String({ description: 'The operation\'s path template (`/v1/pets/{petId}`); for a path no operation has, the path itself.' }),
  operationId: Type.Union([Type.String(), Type.Null()], { description: 'The operation called; null for a path no operation has.' }),
  query: Type.Union([Type.String(), Type.Null()], { description: 'The query string as sent, without `?`, the values of parameters that may carry a secret (`token`, `password`, `api_key` …) and anything shaped like a key replaced by `[redacted]`, cut to 500 characters; null when there was none. Bodies are never kept.' }),
  status: Type.Integer({ description: 'The status answered.' }),
  code: Type.Union([Type.String(), Type.Null()], { description: 'The error code answered (`rate_limited`, `not_found` …); null for a success.' }),
  requestId: Type.String({ description: 'The request\'s `Request-Id`, as answered.' }),
  latencyMs: Type.Number({ minimum: 0, description: 'Milliseconds from the request\'s arrival to its answer, as measured by the server.' }),
  via: StringEnum(['http', 'mcp', 'portal'] as const, { description: '`mcp`: an agent\'s tool call through the MCP endpoint; `portal`: a call the partner portal made for its session (`/portal/api/v1/…`); `http`: any other request.' }),
  refusal: Type.Union([RefusalSchema, Type.Null()], { description: 'For a request refused by the quota, a ban, a scope, the role, the partner portal\'s CSRF check, or because the key itself was revoked or expired: which rule and its facts; null otherwise.' })
}, {
  title: 'KeyRequest',
  additionalProperties: false,
  description: 'One request made with the key.',
  examples: [EXAMPLE]
})
export type ApiKeyRequest = Static<typeof KeyRequestSchema>

export const KeyRequestsSchema = Type.Array(KeyRequestSchema, {
  title: 'KeyRequests', description: 'Requests made with the key, newest first.', examples: [[EXAMPLE]]
})

export const KeyRequestListQuery = Type.Object({
  limit: PageQuery.limit,
  // The example is a real cursor (`v1:100`): the entries older than entry 100.
  cursor: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 200,
    pattern: NO_CONTROLS,
    description: 'Opaque cursor from the `Link: rel="next"` header of the previous page.',
    examples: ['djE6MTAw']
  })),
  status: Type.Optional(Type.String({
    pattern: '^([1-5][0-9]{2}|[1-5]xx)$',
    description: 'Only this status (`429`), or this class of statuses (`4xx`, `5xx`).',
    examples: ['4xx']
  })),
  code: Type.Optional(Type.String({
    minLength: 1, maxLength: 60, pattern: '^[a-z_]+$',
    description: 'Only the requests answered with this error code (`rate_limited`, `insufficient_scope` …).',
    examples: ['rate_limited']
  })),
  operationId: Type.Optional(Type.String({
    minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_]+$',
    description: 'Only the calls of this operation (its operationId, such as `getPet`).',
    examples: ['getPet']
  })),
  requestId: Type.Optional(Type.String({
    minLength: 1, maxLength: 64, pattern: NO_CONTROLS,
    description: 'Only the request with this `Request-Id`: how to find the request an answer names.',
    examples: ['0b6f8a56-3c1e-4f2a-9d7b-5e4c3b2a1f00']
  }))
}, { additionalProperties: false })
export type KeyRequestListQuery = Static<typeof KeyRequestListQuery>

/** The key whose log an admin reads (GET /v1/admin/keys/{keyId}/requests): key 1 is the sample customer's. */
export const KeyRequestsParams = Type.Object({
  keyId: IdParam('The key id (a revoked or expired key\'s too).', [1])
}, { additionalProperties: false })
export type KeyRequestsParams = Static<typeof KeyRequestsParams>
