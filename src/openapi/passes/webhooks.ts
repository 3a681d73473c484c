// Pass: the deliveries a webhook endpoint receives, one per type of the event catalogue
// (events/catalogue.ts), as `x-webhooks` (OpenAPI 3.0 has no `webhooks`; Redoc reads the
// extension, and Scalar's upgrade to 3.1 renames it to `webhooks`). Each is the POST the
// dispatcher sends (webhooks/dispatcher.ts): the Standard Webhooks headers and
// `{ id, type, timestamp, data }`, data being the same schema as the Event's of that type.
// After hoistComponents: each Event branch is a named component (events.schema.ts, eventTitleOf)
// whose `data` is already a $ref to the resource's component, or the type's own small object.
import { eventTypeRow, eventTypes, familyOf } from '../../events/catalogue.ts'
import { EVENT_ID_PATTERN, eventTitleOf } from '../../events/events.schema.ts'
import type { JsonObject, OpenApiDocument } from '../types.ts'

const object = (properties: Record<string, JsonObject>): JsonObject => ({
  type: 'object',
  required: Object.keys(properties),
  properties
})
const text: JsonObject = { type: 'string' }
const instant: JsonObject = { type: 'string', format: 'date-time' }

const HEADERS = [
  { name: 'webhook-id', description: 'The event id: the same on every attempt and replay of this event. Deduplicate on it (delivery is at least once).' },
  { name: 'webhook-timestamp', description: 'Unix seconds of this attempt. Refuse a delivery more than 5 minutes off your clock.' },
  { name: 'webhook-signature', description: '`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint\'s secret, one per live secret (two for 24 hours after a rotation), space-separated.' }
]

/**
 * The `data` schema of a type: its Event branch's, as hoisting left it; the catalogue's own, inline,
 * in a document without the event routes (an app built with only some of its features).
 */
function dataOf (doc: OpenApiDocument, type: string): JsonObject {
  const branch = doc.components.schemas?.[eventTitleOf(type)] as { properties?: { data?: JsonObject } } | undefined
  return branch?.properties?.data ?? JSON.parse(JSON.stringify(eventTypeRow(type)!.data)) as JsonObject
}

export function addWebhooks (doc: OpenApiDocument): void {
  const webhooks: Record<string, JsonObject> = {}
  for (const type of eventTypes()) {
    webhooks[type] = {
      post: {
        operationId: `event_${type.replace('.', '_')}`,
        summary: type,
        tags: ['Webhooks'],
        description: `${eventTypeRow(type)!.description}\n\nSent to every enabled endpoint subscribed to \`${type}\` (or \`${familyOf(type)}.*\`) whose owner may see the event.`,
        parameters: HEADERS.map(({ name, description }) => ({ name, in: 'header', required: true, description, schema: text })),
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: object({
                id: { type: 'string', pattern: EVENT_ID_PATTERN, description: 'The event id: the `webhook-id` header, and the event\'s id in the feed (`GET /v1/events/{eventId}`).' },
                type: { type: 'string', enum: [type] },
                timestamp: { ...instant, description: 'When the change happened (the event\'s createdAt).' },
                data: dataOf(doc, type)
              })
            }
          }
        },
        responses: {
          200: { description: 'Any 2xx within WEBHOOK_TIMEOUT_MS (10 s) acknowledges the delivery. Anything else, a redirect included (never followed), is retried on WEBHOOK_RETRY_SCHEDULE.' }
        }
      }
    }
  }
  doc['x-webhooks'] = webhooks
}
