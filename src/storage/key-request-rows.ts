// The request log's rows (key-requests/key-requests.store.ts), shared by both engines: the columns
// read, a row as the port returns it, and the list's WHERE clause with each engine's placeholders.
import type { Refusal } from '../key-requests/key-requests.schema.ts'
import type { KeyRequestFilter, KeyRequestRecord, StoredKeyRequest } from '../key-requests/key-requests.store.ts'

export const KEY_REQUEST_COLUMNS =
  'id, key_id, at, method, route, operation_id, query, status, code, request_id, latency_ms, via, refusal'

export interface KeyRequestRow {
  id: number | string
  key_id: number | string
  at: number | string
  method: string
  route: string
  operation_id: string | null
  query: string | null
  status: number
  code: string | null
  request_id: string
  latency_ms: number
  via: string | null
  refusal: string | null
}

export function toKeyRequest (row: KeyRequestRow): StoredKeyRequest {
  return {
    id: Number(row.id),
    keyId: Number(row.key_id),
    at: Number(row.at),
    method: row.method,
    route: row.route,
    operationId: row.operation_id,
    query: row.query,
    status: Number(row.status),
    code: row.code,
    requestId: row.request_id,
    latencyMs: Number(row.latency_ms),
    via: row.via === 'mcp' || row.via === 'portal' ? row.via : null,
    refusal: row.refusal === null ? null : JSON.parse(row.refusal) as Refusal
  }
}

/** A batch as one JSON array of rows (the columns of KEY_REQUEST_COLUMNS but id), for one INSERT. */
export function keyRequestValues (records: readonly KeyRequestRecord[]): unknown[][] {
  return records.map((r) => [
    r.keyId, r.at, r.method, r.route, r.operationId, r.query, r.status, r.code, r.requestId, r.latencyMs, r.via,
    r.refusal === null ? null : JSON.stringify(r.refusal)
  ])
}

/** The WHERE clause of a key's page: `param` adds a value and returns its placeholder. */
export function keyRequestFilterSql (
  keyId: number,
  filter: KeyRequestFilter,
  beforeId: number | null,
  param: (value: string | number) => string
): string {
  const where = [`key_id = ${param(keyId)}`]
  if (beforeId !== null) where.push(`id < ${param(beforeId)}`)
  if (filter.status !== undefined) {
    where.push(filter.status.from === filter.status.to
      ? `status = ${param(filter.status.from)}`
      : `status BETWEEN ${param(filter.status.from)} AND ${param(filter.status.to)}`)
  }
  if (filter.code !== undefined) where.push(`code = ${param(filter.code)}`)
  if (filter.operationId !== undefined) where.push(`operation_id = ${param(filter.operationId)}`)
  if (filter.requestId !== undefined) where.push(`request_id = ${param(filter.requestId)}`)
  return where.join(' AND ')
}
