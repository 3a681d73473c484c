// A logged request as the API shows it: `at` in ISO 8601.
import type { ApiKeyRequest } from './key-requests.schema.ts'
import type { StoredKeyRequest } from './key-requests.store.ts'

export function toApiKeyRequest (row: StoredKeyRequest): ApiKeyRequest {
  return {
    id: row.id,
    at: new Date(row.at).toISOString(),
    method: row.method,
    route: row.route,
    operationId: row.operationId,
    query: row.query,
    status: row.status,
    code: row.code,
    requestId: row.requestId,
    latencyMs: row.latencyMs,
    via: row.via ?? 'http',
    refusal: row.refusal
  }
}
