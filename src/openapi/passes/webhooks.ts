// Pass: the deliveries a webhook endpoint receives, one per event type, as `x-webhooks` (OpenAPI
// 3.0 has no `webhooks`; Redoc reads the extension, and Scalar's upgrade to 3.1 renames it to
// `webhooks`). Each is the POST the dispatcher sends (webhooks/dispatcher.ts): the Standard
// Webhooks headers and `{ type, timestamp, data }`, data being what a GET of the resource answers.
// After hoistComponents: the data of resource events are $refs to the named components.
import { EVENT_TYPES } from '../../webhooks/event-types.ts'
import type { JsonObject, OpenApiDocument } from '../types.ts'

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` })
const object = (properties: Record<string, JsonObject>): JsonObject => ({
  type: 'object',
  required: Object.keys(properties),
  properties
})
const text: JsonObject = { type: 'string' }
const integer: JsonObject = { type: 'integer' }
const instant: JsonObject = { type: 'string', format: 'date-time' }
const deleted = object({ id: { type: 'integer', format: 'int64' } })

/** The `data` of each type (docs/product.md, events). */
function dataOf (type: string): JsonObject {
  const [family, name] = type.split('.') as [string, string]
  if (family === 'order') return ref('Order')
  if (family === 'pet') return name === 'deleted' ? deleted : ref('Pet')
  if (family === 'category') return name === 'deleted' ? deleted : ref('Category')
  if (family === 'inventory') return ref('InventoryItem')
  if (type === 'key.banned' || type === 'key.unbanned') return object({ keyId: integer, until: instant, strike: integer })
  if (type === 'key.revoked') return ref('RevokedApiKey')
  if (family === 'key') return ref('ApiKey')
  if (family === 'quota') {
    return object({ keyId: integer, window: { type: 'string', enum: ['day'] }, limit: integer, used: integer, percent: integer })
  }
  if (family === 'deprecation') {
    return object({ keyId: integer, operationId: text, sunset: instant, successor: text, calls: integer, day: text })
  }
  if (type === 'webhook.test') return object({ webhookId: text, url: text, sentAt: instant })
  return { allOf: [ref('Webhook'), object({ reason: { type: 'string', enum: ['failing', 'manual'], description: 'failing: every attempt failed for 5 days; manual: its owner or an admin disabled it.' } })] }
}

const HEADERS = [
  { name: 'webhook-id', description: 'The event id: the same on every attempt and replay of this event. Deduplicate on it (delivery is at least once).' },
  { name: 'webhook-timestamp', description: 'Unix seconds of this attempt. Refuse a delivery more than 5 minutes off your clock.' },
  { name: 'webhook-signature', description: '`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint\'s secret, one per live secret (two for 24 hours after a rotation), space-separated.' }
]

export function addWebhooks (doc: OpenApiDocument): void {
  const webhooks: Record<string, JsonObject> = {}
  for (const type of EVENT_TYPES) {
    webhooks[type] = {
      post: {
        operationId: `event_${type.replace('.', '_')}`,
        summary: type,
        tags: ['Webhooks'],
        description: `Sent to every enabled endpoint subscribed to \`${type}\` (or \`${type.split('.')[0]}.*\`) whose owner may see the event.`,
        parameters: HEADERS.map(({ name, description }) => ({ name, in: 'header', required: true, description, schema: text })),
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: object({
                type: { type: 'string', enum: [type] },
                timestamp: { ...instant, description: 'When the change happened (the event\'s createdAt).' },
                data: dataOf(type)
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
