// Webhook endpoints over HTTP (docs/product.md, webhooks): schema, one service call, status code.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { WEBHOOK_SCOPES } from '../accounts/scopes.ts'
import { requireCaller } from '../access/principal.ts'
import { setNextLink } from '../routing/conditional.ts'
import { LinkHeader, LocationHeader, NoContent, NoQuery, Reply } from '../shared/schemas.ts'
import {
  DeleteWebhookIdParams,
  DeliveriesQuery,
  DeliveriesSchema,
  NewWebhookSchema,
  QueuedSchema,
  ReplaySchema,
  TestQueuedSchema,
  WebhookIdParams,
  WebhookListQuery,
  WebhookPatchSchema,
  WebhookSchema,
  WebhooksSchema,
  WebhookWithSecretSchema,
  type WebhookWithSecret
} from './webhooks.schema.ts'
import type { WebhookService } from './webhooks.service.ts'
import type { DeliveryEntry, WebhookRecord } from './webhooks.store.ts'
import { webhookView } from './webhooks.view.ts'

export interface WebhookRoutesOptions { webhooks: WebhookService }

const withSecret = (record: WebhookRecord): WebhookWithSecret => ({ ...webhookView(record), secret: record.secret })

const deliveryView = (entry: DeliveryEntry) => ({
  eventId: entry.eventId,
  type: entry.type,
  attempt: entry.attempt,
  at: new Date(entry.at).toISOString(),
  outcome: entry.outcome,
  ...(entry.status !== null && { status: entry.status }),
  ...(entry.error !== null && { error: entry.error }),
  ...(entry.durationMs !== null && { durationMs: entry.durationMs })
})

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
      params: DeleteWebhookIdParams, querystring: NoQuery,
      response: { 204: NoContent('The endpoint is deleted.') }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request, reply) => {
    await webhooks.remove(requireCaller(request.principal), request.params.webhookId)
    return reply.code(204).send(null)
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
      description: 'Queues a `webhook.test` event for this endpoint alone; its first attempt starts within a second.',
      params: WebhookIdParams, querystring: NoQuery,
      response: { 202: Reply('The test event is queued.', TestQueuedSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request, reply) => {
    const eventId = await webhooks.test(requireCaller(request.principal), request.params.webhookId)
    reply.code(202)
    return { eventId }
  })

  app.get('/webhooks/:webhookId/deliveries', {
    schema: {
      operationId: 'listWebhookDeliveries', tags, summary: 'List an endpoint\'s delivery attempts',
      description: 'The attempts, newest first, and the deliveries waiting for their next attempt (`pending`, at the time it is due).',
      params: WebhookIdParams, querystring: DeliveriesQuery,
      response: { 200: Reply('The latest attempts.', DeliveriesSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request) => (await webhooks.deliveries(
    requireCaller(request.principal),
    request.params.webhookId,
    request.query.limit ?? 20
  )).map(deliveryView))

  app.post('/webhooks/:webhookId/replay', {
    schema: {
      operationId: 'replayWebhook', tags, summary: 'Deliver events again',
      description: 'Queues again the events of a time range (`since`, `until`) or of a list of ids, among those the endpoint subscribes to and its owner may see, still kept (EVENT_RETENTION_DAYS).',
      params: WebhookIdParams, querystring: NoQuery, body: ReplaySchema,
      response: { 202: Reply('The events are queued.', QueuedSchema) }
    },
    config: { role, scope: WEBHOOK_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request, reply) => {
    const queued = await webhooks.replay(requireCaller(request.principal), request.params.webhookId, request.body)
    reply.code(202)
    return { queued }
  })
}
