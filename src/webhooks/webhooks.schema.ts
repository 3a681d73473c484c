// The public contract of webhook endpoints (docs/product.md, webhooks): the endpoint, its
// deliveries, and the bodies of create, change and replay.
import { Type, type Static } from 'typebox'
import { NO_CONTROLS, MULTILINE_TEXT, PageQuery, StringEnum } from '../shared/schemas.ts'
import {
  WEBHOOK_EXAMPLE_ID as EXAMPLE_ID,
  WEBHOOK_EXAMPLE_URL as EXAMPLE_URL,
  webhookExample as example,
  webhookFields,
  WebhookSchema,
  WebhookStatusSchema
} from '../events/webhook.schema.ts'
import { ATTEMPT_DETAILS_KEPT_DAYS } from './attempt.ts'

export { DisabledReasonSchema, WebhookSchema, type Webhook } from '../events/webhook.schema.ts'

const WEBHOOK_ID_PATTERN = '^wh_[0-9a-f]{24}$'
// The create example's host is an address: it must pass the address check where no DNS answers (the examples walk).
const CREATE_EXAMPLE_URL = 'https://93.184.215.14/petstore'

export const WebhookIdParams = Type.Object({
  webhookId: Type.String({ pattern: WEBHOOK_ID_PATTERN, description: 'The endpoint id (`wh_` and 24 hex digits).', examples: [EXAMPLE_ID] })
}, { additionalProperties: false })

const Url = Type.String({ minLength: 1, maxLength: 2048, pattern: NO_CONTROLS, description: 'Where deliveries are POSTed: `https://`, a host that resolves only to public addresses (SECURITY.md), no user name or password.', examples: [EXAMPLE_URL] })
const Types = Type.Array(Type.String({ pattern: '^[a-z_]{1,40}\\.(?:[a-z_]{1,40}|\\*)$', description: 'An event type (`order.created`) or a family (`order.*`).' }), {
  minItems: 1, maxItems: 40, uniqueItems: true, description: 'The event types delivered: names or `family.*`. A type the caller may never see is `403 forbidden`; an unknown one `400 validation_failed`.', examples: [['order.*']]
})
const Description = Type.String({ maxLength: 500, pattern: MULTILINE_TEXT, description: 'A note for the endpoint\'s owner, at most 500 characters.' })

export const NewWebhookSchema = Type.Object({
  url: Url,
  types: Types,
  description: Type.Optional(Description)
}, { title: 'NewWebhook', additionalProperties: false, examples: [{ url: CREATE_EXAMPLE_URL, types: ['order.*'], description: 'Order updates for the partner shop' }] })
export type NewWebhook = Static<typeof NewWebhookSchema>

export const WebhookPatchSchema = Type.Object({
  url: Type.Optional(Url),
  types: Type.Optional(Types),
  description: Type.Optional(Description),
  status: Type.Optional(WebhookStatusSchema)
}, { title: 'WebhookPatch', additionalProperties: false, minProperties: 1, examples: [{ status: 'disabled' }] })
export type WebhookPatch = Static<typeof WebhookPatchSchema>

export const WebhooksSchema = Type.Array(WebhookSchema, { title: 'Webhooks', examples: [[example]] })

export const WebhookWithSecretSchema = Type.Object({
  ...webhookFields,
  secret: Type.String({ description: 'The signing secret (`whsec_` and base64), shown only here: keep it to verify the `webhook-signature` header.' })
}, { title: 'WebhookWithSecret', additionalProperties: false, examples: [{ ...example, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] })
export type WebhookWithSecret = Static<typeof WebhookWithSecretSchema>

export const WebhookListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type WebhookListQuery = Static<typeof WebhookListQuery>

export const DeliveriesQuery = Type.Object({
  limit: PageQuery.limit
}, { additionalProperties: false })

export const DeliverySchema = Type.Object({
  id: Type.Optional(Type.String({ pattern: '^att_[0-9]+$', description: 'The attempt\'s id (`att_` and a number), on an attempt made; a pending one has none yet.' })),
  eventId: Type.String({ description: 'The event delivered: the `webhook-id` header and the body\'s `id`.' }),
  type: Type.String({ description: 'The type delivered (a test\'s: the type it sent).' }),
  attempt: Type.Integer({ description: 'The attempt number within its delivery, from 1 (a replay starts again at 1).' }),
  kind: StringEnum(['first', 'retry', 'replay'] as const, {
    title: 'WebhookAttemptKind',
    description: 'first: the first attempt of a delivery the feed or a test queued; retry: a later attempt, on the retry schedule; replay: the first attempt of a delivery a replay or a recovery queued.'
  }),
  at: Type.String({ format: 'date-time', description: 'When the attempt was made, or when a pending one is due.' }),
  outcome: StringEnum(['succeeded', 'failed', 'pending'] as const, { title: 'DeliveryOutcome' }),
  status: Type.Optional(Type.Integer({ description: 'The receiver\'s HTTP status, when it answered.' })),
  error: Type.Optional(Type.String({ description: 'Why the attempt failed, in a few words (never the receiver\'s body).' })),
  durationMs: Type.Optional(Type.Integer())
}, { title: 'WebhookDelivery', additionalProperties: false })
export const DeliveriesSchema = Type.Array(DeliverySchema, {
  title: 'WebhookDeliveries',
  examples: [[
    { id: 'att_1042', eventId: 'evt_0b7c4e9a2f3d4c1e8a6b5d7f9e0c1a2b', type: 'order.created', attempt: 2, kind: 'retry', at: '2026-11-21T12:00:06.000Z', outcome: 'succeeded', status: 200, durationMs: 85 },
    { id: 'att_1038', eventId: 'evt_0b7c4e9a2f3d4c1e8a6b5d7f9e0c1a2b', type: 'order.created', attempt: 1, kind: 'first', at: '2026-11-21T12:00:01.000Z', outcome: 'failed', status: 503, error: 'HTTP 503', durationMs: 40 }
  ]]
})

export const AttemptParams = Type.Object({
  webhookId: WebhookIdParams.properties.webhookId,
  attemptId: Type.String({
    pattern: '^att_[0-9]{1,15}$',
    description: 'The attempt\'s id, as the deliveries list gives it (`att_` and a number).',
    examples: ['att_1038']
  })
}, { additionalProperties: false })

const HeaderSchema = Type.Object({
  name: Type.String({ description: 'As sent or received (a received name in its own case, at most 256 characters).' }),
  value: Type.String({ description: 'As sent or received; a received value cut to 1,024 characters, control characters replaced by U+FFFD.' })
}, { title: 'WebhookHeader', additionalProperties: false })

const AttemptRequestSchema = Type.Object({
  url: Type.String({ description: 'The URL the attempt was POSTed to (the endpoint\'s at that time).' }),
  headers: Type.Array(HeaderSchema, {
    description: 'The headers sent, in order: `webhook-id`, `webhook-timestamp`, `webhook-signature` (one `v1,` signature per live secret; never the secret), `traceparent` when tracing is on, `content-type`, `content-length`, `user-agent`.'
  }),
  body: Type.String({ description: 'The exact body sent and signed: every attempt of a delivery sends the same bytes. Verify it with the `webhook-*` headers above and the endpoint\'s secret.' })
}, { title: 'WebhookAttemptRequest', additionalProperties: false })

const AttemptResponseSchema = Type.Object({
  status: Type.Integer({ description: 'The HTTP status the endpoint answered.' }),
  headers: Type.Array(HeaderSchema, { maxItems: 64, description: 'The answer\'s headers as received, in order: at most 64, each value cut to 1,024 characters.' }),
  body: Type.String({
    description: 'The first 4 KiB of the answer\'s body, as UTF-8 text (invalid bytes and NUL replaced by U+FFFD; at most 4,096 bytes of UTF-8). Untrusted text the endpoint chose: show it escaped, never as HTML.'
  }),
  truncated: Type.Boolean({ description: 'True when the body went on past what is kept, or was cut (the attempt\'s deadline, a reset) before its end.' })
}, { title: 'WebhookAttemptResponse', additionalProperties: false })

export const AttemptSchema = Type.Object({
  id: Type.String({ pattern: '^att_[0-9]+$', description: 'The attempt\'s id.' }),
  webhookId: Type.String({ description: 'The endpoint it was made for.' }),
  eventId: DeliverySchema.properties.eventId,
  type: DeliverySchema.properties.type,
  attempt: DeliverySchema.properties.attempt,
  kind: DeliverySchema.properties.kind,
  at: Type.String({ format: 'date-time', description: 'When the attempt started.' }),
  outcome: StringEnum(['succeeded', 'failed'] as const, { title: 'WebhookAttemptOutcome' }),
  status: DeliverySchema.properties.status,
  error: DeliverySchema.properties.error,
  durationMs: Type.Integer({ description: 'From the start of the attempt to its end (the answer read, the deadline, or the error).' }),
  request: Type.Union([AttemptRequestSchema, Type.Null()], {
    description: 'What was sent. Null when nothing was (the URL was refused before connecting), for attempts made before details were kept, and once `keptUntil` has passed.'
  }),
  response: Type.Union([AttemptResponseSchema, Type.Null()], {
    description: 'What the endpoint answered. Null when no answer came (a network error, the deadline before the status line), and when `request` is null for its age.'
  }),
  keptUntil: Type.String({
    format: 'date-time',
    description: `When \`request\` and \`response\` are removed (${ATTEMPT_DETAILS_KEPT_DAYS} days after the attempt); the attempt itself stays in the deliveries list until its event is pruned (EVENT_RETENTION_DAYS).`
  })
}, {
  title: 'WebhookAttempt',
  additionalProperties: false,
  examples: [{
    id: 'att_1038',
    webhookId: EXAMPLE_ID,
    eventId: 'evt_0b7c4e9a2f3d4c1e8a6b5d7f9e0c1a2b',
    type: 'order.created',
    attempt: 1,
    kind: 'first',
    at: '2026-11-21T12:00:01.000Z',
    outcome: 'failed',
    status: 503,
    error: 'HTTP 503',
    durationMs: 40,
    request: {
      url: EXAMPLE_URL,
      headers: [
        { name: 'webhook-id', value: 'evt_0b7c4e9a2f3d4c1e8a6b5d7f9e0c1a2b' },
        { name: 'webhook-timestamp', value: '1795262401' },
        { name: 'webhook-signature', value: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' },
        { name: 'content-type', value: 'application/json' },
        { name: 'content-length', value: '113' },
        { name: 'user-agent', value: 'Petstore-Webhooks/1.0' }
      ],
      body: '{"id":"evt_0b7c4e9a2f3d4c1e8a6b5d7f9e0c1a2b","type":"order.created","timestamp":"2026-11-21T12:00:00.000Z","data":{}}'
    },
    response: {
      status: 503,
      headers: [{ name: 'content-type', value: 'text/plain' }, { name: 'retry-after', value: '30' }],
      body: 'upstream unavailable',
      truncated: false
    },
    keptUntil: '2026-11-28T12:00:01.000Z'
  }]
})
export type Attempt = Static<typeof AttemptSchema>

const EventId = Type.String({ pattern: '^evt_[0-9a-f]{32}$' })
export const ReplaySchema = Type.Union([
  Type.Object({
    since: Type.String({ format: 'date-time', description: 'Events created at or after this instant.' }),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'Events created before this instant (default: now).' }))
  }, { additionalProperties: false }),
  Type.Object({
    eventIds: Type.Array(EventId, { minItems: 1, maxItems: 100, uniqueItems: true })
  }, { additionalProperties: false })
], { title: 'WebhookReplay', description: 'The events to deliver again: a time range, or a list of event ids. Only the endpoint\'s types that its owner may see are queued.', examples: [{ since: '2026-11-21T00:00:00.000Z' }] })
export type Replay = Static<typeof ReplaySchema>

export const QueuedSchema = Type.Object({
  queued: Type.Integer({ description: 'How many events were queued for delivery.' }),
  nextSince: Type.Optional(Type.String({
    format: 'date-time',
    description: 'Present when the selection held more than one request may queue (1,000 events, or what is left of the key holder\'s 10,000 an hour): the creation time of the first event left out; send `since` with it for the rest.'
  }))
}, { title: 'WebhookQueued', additionalProperties: false, examples: [{ queued: 3 }] })

export const RecoverSchema = Type.Object({
  since: Type.String({ format: 'date-time', description: 'Events created at or after this instant (until now).' })
}, {
  title: 'WebhookRecover',
  additionalProperties: false,
  description: 'The events to deliver again: those of the range whose delivery to the endpoint failed for good (its retries all failed) and that no delivery has brought since, nor waits to bring.',
  examples: [{ since: '2026-11-21T00:00:00.000Z' }]
})
export type Recover = Static<typeof RecoverSchema>

export const TestSchema = Type.Object({
  type: Type.Optional(Type.String({
    pattern: '^[a-z_]{1,40}\\.[a-z_]{1,40}$',
    description: 'The event type to send, with its documented example as `data` (GET /v1/event_types): one the endpoint\'s owner may receive. `webhook.test` when absent. A test never enters the feed as that type: the feed shows the `webhook.test` event whose id the delivery carries.'
  }))
}, { title: 'WebhookTest', additionalProperties: false, examples: [{ type: 'order.created' }] })
export type TestRequest = Static<typeof TestSchema>

export const TestQueuedSchema = Type.Object({
  eventId: Type.String({ description: 'The webhook.test event, delivered to this endpoint alone.' })
}, { title: 'WebhookTestQueued', additionalProperties: false, examples: [{ eventId: 'evt_5a1e0c9b7d3f4a2e8c6b1d0f9e7a3c5b' }] })
