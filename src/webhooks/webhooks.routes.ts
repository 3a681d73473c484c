// Webhook endpoints over HTTP (docs/product.md, webhooks): schema, one service call, status code.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { WEBHOOK_SCOPES } from '../accounts/scopes.ts'
import { requireCaller } from '../access/principal.ts'
import { setNextLink } from '../routing/conditional.ts'
import { LinkHeader, LocationHeader, NoContent, NoQuery, Reply } from '../shared/schemas.ts'
import {
  AttemptParams,
  AttemptSchema,
  DeliveriesQuery,
  DeliveriesSchema,
  NewWebhookSchema,
  QueuedSchema,
  RecoverSchema,
  ReplaySchema,
  TestQueuedSchema,
  TestSchema,
  WebhookIdParams,
  WebhookListQuery,
  WebhookPatchSchema,
  WebhookSchema,
  WebhooksSchema,
  WebhookWithSecretSchema,
  type WebhookWithSecret
} from './webhooks.schema.ts'
import type { Queued, WebhookService } from './webhooks.service.ts'
import type { DeliveryEntry, WebhookRecord } from './webhooks.store.ts'
import { attemptView, webhookView } from './webhooks.view.ts'

export interface WebhookRoutesOptions { webhooks: WebhookService }

const withSecret = (record: WebhookRecord): WebhookWithSecret => ({ ...webhookView(record), secret: record.secret })

const deliveryView = (entry: DeliveryEntry) => ({
  ...(entry.id !== null && { id: `att_${entry.id}` }),
  eventId: entry.eventId,
  type: entry.type,
  attempt: entry.attempt,
  kind: entry.kind,
  at: new Date(entry.at).toISOString(),
  outcome: entry.outcome,
  ...(entry.status !== null && { status: entry.status }),
  ...(entry.error !== null && { error: entry.error }),
  ...(entry.durationMs !== null && { durationMs: entry.durationMs })
})

const queuedView = (queued: Queued) => ({
  queued: queued.queued,
  ...(queued.nextSince !== null && { nextSince: new Date(queued.nextSince).toISOString() })
})

// A replay or recovery past the key holder's hour (webhooks.service.ts, REPLAY_PER_HOUR).
const replayRefusal = {
  code: 'rate_limited' as const,
  message: 'this key holder\'s replays and recoveries queued 10000 deliveries this hour; retry after Retry-After seconds'
}

export async function webhookRoutes (fastify: FastifyInstance, { webhooks }: WebhookRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Webhooks']
  const role = 'customer' as const

  app.post('/webhooks', {
    schema: {
      operationId: 'createWebhook', tags, summary: 'Subscribe an endpoint to events',
      description: 'Creates an endpoint that receives the events of `types` its owner may see, signed as Standard Webhooks says. The signing `secret` is in this answer only. At most 10 endpoints per key holder.',
      querystring: NoQuery, body: NewWebhookSchema,
      response: { 201: Reply('The endpoint, with its signing secret.', WebhookWithSecretSchema, LocationHeader) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'forbidden', 'webhook_url_forbidden', 'webhook_limit_reached'] }
  }, async (request, reply) => {
    const webhook = await webhooks.create(requireCaller(request.principal), request.body)
    reply.code(201).header('location', `/v1/webhooks/${webhook.id}`)
    return withSecret(webhook)
  })

  app.get('/webhooks', {
    schema: {
      operationId: 'listWebhooks', tags, summary: 'List webhook endpoints',
      description: 'The caller\'s endpoints (an admin\'s: every endpoint), oldest first. The next page, if any, is in the `Link: <…>; rel="next"` header.',
      querystring: WebhookListQuery,
      response: { 200: Reply('A page of endpoints.', WebhooksSchema, LinkHeader) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed'] }
  }, async (request, reply) => {
    const page = await webhooks.list(requireCaller(request.principal), request.query)
    setNextLink(request, reply, page.nextCursor)
    return page.items.map(webhookView)
  })

  app.post('/webhooks/:webhookId/rotate_secret', {
    schema: {
      operationId: 'rotateWebhookSecret', tags, summary: 'Rotate an endpoint\'s signing secret',
      description: 'A new secret, in this answer only. For 24 hours every delivery carries two signatures, one per secret, so a receiver can switch at its own pace.',
      params: WebhookIdParams, querystring: NoQuery,
      response: { 200: Reply('The endpoint, with its new secret.', WebhookWithSecretSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request) => withSecret(await webhooks.rotateSecret(
    requireCaller(request.principal),
    request.params.webhookId
  )))

  app.post('/webhooks/:webhookId/test', {
    schema: {
      operationId: 'testWebhook', tags, summary: 'Send a test event',
      description: 'Queues a test delivery for this endpoint alone: a `webhook.test` event, or with `type` that type\'s documented example (any type the endpoint\'s owner may receive; GET /v1/event_types lists them), signed and sent as a real delivery. Its first attempt starts within a second. The feed shows one `webhook.test` event, never a fake event of the type sent.',
      params: WebhookIdParams, querystring: NoQuery, body: TestSchema,
      response: { 202: Reply('The test event is queued.', TestQueuedSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, optionalBody: true, errors: ['validation_failed', 'forbidden', 'not_found'] },
    // A test of webhook.test needs no body at all; a JSON null is a body, and refused.
    preValidation: async (request) => { if (request.body === undefined) request.body = {} }
  }, async (request, reply) => {
    const eventId = await webhooks.test(requireCaller(request.principal), request.params.webhookId, request.body.type)
    reply.code(202)
    return { eventId }
  })

  app.get('/webhooks/:webhookId/deliveries', {
    schema: {
      operationId: 'listWebhookDeliveries', tags, summary: 'List an endpoint\'s delivery attempts',
      description: 'The attempts, newest first, and the deliveries waiting for their next attempt (`pending`, at the time it is due). What an attempt sent and what the endpoint answered: GET /v1/webhooks/{webhookId}/attempts/{attemptId}.',
      params: WebhookIdParams, querystring: DeliveriesQuery,
      response: { 200: Reply('The latest attempts.', DeliveriesSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request) => (await webhooks.deliveries(
    requireCaller(request.principal),
    request.params.webhookId,
    request.query.limit ?? 20
  )).map(deliveryView))

  app.get('/webhooks/:webhookId/attempts/:attemptId', {
    schema: {
      operationId: 'getWebhookAttempt', tags, summary: 'Get a delivery attempt with what was sent and answered',
      description: 'One attempt of the deliveries list (its `id`) with what was sent (`request`: the URL, the headers, the signed body; never the secret) and what the endpoint answered (`response`: the status, the headers, the first 4 KiB of the body as text, and whether it was cut). The answer is the endpoint\'s own text, untrusted: show it escaped. Both are kept 7 days (`keptUntil`), then `null`.',
      params: AttemptParams, querystring: NoQuery,
      response: { 200: Reply('The attempt.', AttemptSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request) => attemptView(await webhooks.attempt(
    requireCaller(request.principal),
    request.params.webhookId,
    Number(request.params.attemptId.slice('att_'.length))
  )))

  app.post('/webhooks/:webhookId/replay', {
    schema: {
      operationId: 'replayWebhook', tags, summary: 'Deliver events again',
      description: 'Queues again, oldest first, the events of a time range (`since`, `until`) or of a list of ids, among those the endpoint subscribes to and its owner may see, still kept (EVENT_RETENTION_DAYS), but none that already waits for a delivery to this endpoint. At most 1,000 events a request, and 10,000 an hour per key holder (replays and recoveries of its endpoints together; past it `429 rate_limited`, with Retry-After): `nextSince` says where the rest begins.',
      params: WebhookIdParams, querystring: NoQuery, body: ReplaySchema,
      response: { 202: Reply('The events are queued.', QueuedSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found', 'rate_limited'], errorExamples: [replayRefusal] }
  }, async (request, reply) => {
    const queued = await webhooks.replay(requireCaller(request.principal), request.params.webhookId, request.body)
    reply.code(202)
    return queuedView(queued)
  })

  app.post('/webhooks/:webhookId/recover', {
    schema: {
      operationId: 'recoverWebhook', tags, summary: 'Deliver again what failed',
      description: 'Queues again, oldest first, the events since `since` whose delivery to this endpoint failed for good (every retry failed) and that no later delivery has brought nor waits to bring: after an outage, what the receiver missed and nothing it has. Bounded as a replay: 1,000 events a request, 10,000 an hour per key holder (`nextSince` says where the rest begins).',
      params: WebhookIdParams, querystring: NoQuery, body: RecoverSchema,
      response: { 202: Reply('The events are queued.', QueuedSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found', 'rate_limited'], errorExamples: [replayRefusal] }
  }, async (request, reply) => {
    const queued = await webhooks.recover(requireCaller(request.principal), request.params.webhookId, request.body)
    reply.code(202)
    return queuedView(queued)
  })

  // The endpoint's own operations come last: the document lists operations in the order they are
  // registered, and the walk of its examples over the sample data (test/openapi/examples.test.ts)
  // deletes the one sample endpoint (src/sample-data.ts) with deleteWebhook's, after every other
  // operation used it.
  app.get('/webhooks/:webhookId', {
    schema: {
      operationId: 'getWebhook', tags, summary: 'Get a webhook endpoint',
      description: 'The endpoint, without its secret. Another key holder\'s endpoint is 404 (to an admin, every endpoint exists).',
      params: WebhookIdParams, querystring: NoQuery,
      response: { 200: Reply('The endpoint.', WebhookSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request) => webhookView(await webhooks.get(requireCaller(request.principal), request.params.webhookId)))

  app.patch('/webhooks/:webhookId', {
    schema: {
      operationId: 'updateWebhook', tags, summary: 'Change a webhook endpoint',
      description: 'Changes the URL (checked again), the types, the description or the status. Disabling writes a `webhook.disabled` event; enabling again resumes the pending deliveries.',
      params: WebhookIdParams, querystring: NoQuery, body: WebhookPatchSchema,
      response: { 200: Reply('The endpoint, as changed.', WebhookSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'forbidden', 'not_found', 'webhook_url_forbidden'] }
  }, async (request) => webhookView(await webhooks.update(
    requireCaller(request.principal),
    request.params.webhookId,
    request.body
  )))

  app.delete('/webhooks/:webhookId', {
    schema: {
      operationId: 'deleteWebhook', tags, summary: 'Delete a webhook endpoint',
      description: 'Deletes the endpoint with its deliveries; nothing more is sent to it.',
      params: WebhookIdParams, querystring: NoQuery,
      response: { 204: NoContent('The endpoint is deleted.') }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request, reply) => {
    await webhooks.remove(requireCaller(request.principal), request.params.webhookId)
    return reply.code(204).send(null)
  })
}
