// Events over HTTP: the feed (GET /events), one event (GET /events/{eventId}) and the types a
// caller may receive (GET /event_types).
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { FEED_SCOPES } from '../accounts/scopes.ts'
import { requireCaller } from '../access/principal.ts'
import { setNextLink } from '../routing/conditional.ts'
import { NoQuery, Reply } from '../shared/schemas.ts'
import { EventIdParams, EventListQuery, EventSchema, EventsSchema, EventTypesSchema, FeedLinkHeader } from './events.schema.ts'
import type { EventService } from './events.service.ts'
import { renderEvent } from './render.ts'

export interface EventRoutesOptions { events: EventService }

export async function eventRoutes (fastify: FastifyInstance, { events }: EventRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Events']

  app.get('/events', {
    schema: {
      operationId: 'listEvents', tags, summary: 'List events',
      querystring: EventListQuery,
      response: { 200: Reply('A page of events, oldest first; empty when nothing new has committed.', EventsSchema, FeedLinkHeader) }
    },
    config: { role: 'customer', scope: FEED_SCOPES, errors: ['validation_failed'] }
  }, async (request, reply) => {
    const page = await events.list(request.query, requireCaller(request.principal))
    setNextLink(request, reply, page.nextCursor)
    return page.items.map(renderEvent)
  })

  app.get('/events/:eventId', {
    schema: {
      operationId: 'getEvent', tags, summary: 'Get an event',
      description: 'One event the caller may see (the same rule as the feed); another caller\'s event, or one pruned after `EVENT_RETENTION_DAYS`, is `404 not_found`.',
      params: EventIdParams, querystring: NoQuery,
      response: { 200: Reply('The event.', EventSchema) }
    },
    config: { role: 'customer', scope: FEED_SCOPES, errors: ['validation_failed', 'not_found'] }
  }, async (request) => {
    return renderEvent(await events.get(request.params.eventId, requireCaller(request.principal)))
  })

  app.get('/event_types', {
    schema: {
      operationId: 'listEventTypes', tags, summary: 'List event types',
      description: 'The event types the caller may receive, in the feed and at its webhook endpoints (the rule of the feed: a customer its own orders\', key\'s and webhooks\' types), each with what it reports, the JSON Schema of its `data` and an example. The feed\'s `type` filter and a webhook\'s `types` take these names, and `family.*`.',
      querystring: NoQuery,
      response: { 200: Reply('The types, in the catalogue\'s order.', EventTypesSchema) }
    },
    config: { role: 'customer', scope: FEED_SCOPES, errors: ['validation_failed'] }
  }, async (request) => {
    return events.types(requireCaller(request.principal))
  })
}
