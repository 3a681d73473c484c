// Pass: a route with `config.optionalBody` takes a body but does not need one. The route
// schema cannot say so (@fastify/swagger marks every body schema required), so the onRoute hook
// (error-responses.ts) leaves the mark `x-optional-body` on the operation and this pass turns it
// into `requestBody.required: false`, removing the mark.
import type { OpenApiDocument } from '../types.ts'

export function markOptionalBodies (doc: OpenApiDocument): void {
  for (const operations of Object.values(doc.paths)) {
    for (const operation of Object.values(operations)) {
      if (operation['x-optional-body'] !== true) continue
      delete operation['x-optional-body']
      const body = operation.requestBody as { required?: boolean } | undefined
      if (body !== undefined) body.required = false
    }
  }
}
