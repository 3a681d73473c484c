// The port of the request log (key-requests.recorder.ts writes it in batches, the service reads
// it, the prune job bounds it). Each engine implements it in storage/<engine>/key-requests.ts.
import type { Refusal } from './key-requests.schema.ts'

/** One request made with a key, as recorded. `at` is epoch ms. */
export interface KeyRequestRecord {
  keyId: number
  at: number
  method: string
  route: string
  operationId: string | null
  query: string | null
  status: number
  code: string | null
  requestId: string
  latencyMs: number
  /** How the request came: an agent's MCP tool call, the partner portal's door, or null for any other. */
  via: 'mcp' | 'portal' | null
  refusal: Refusal | null
}

export interface StoredKeyRequest extends KeyRequestRecord { id: number }

/** The list's filters; each absent one matches everything. `status`: an exact status, or a range (`4xx`). */
export interface KeyRequestFilter {
  status?: { from: number; to: number }
  code?: string
  operationId?: string
  requestId?: string
}

/**
 * What the prune keeps of a key: its newest `last`, and besides them its refusals at or after
 * `refusalsSince`, at most `refusalsMax` (the newest).
 */
export interface KeyRequestBound {
  last: number
  refusalsSince: number
  refusalsMax: number
}

export interface KeyRequestStore {
  /**
   * Writes a batch (at most the recorder's APPEND_ROWS) in one transaction, never a statement per
   * request, oldest first: ids grow with `at`.
   */
  append (records: readonly KeyRequestRecord[]): Promise<void>
  /** The key's requests matching `filter`, newest first, with ids below `beforeId` (null: from the newest). */
  list (keyId: number, filter: KeyRequestFilter, beforeId: number | null, limit: number): Promise<StoredKeyRequest[]>
  /**
   * Deletes what the bound does not keep of one key (SQLite: in parts, so that no part holds the
   * event loop long); returns how many rows.
   */
  prune (keyId: number, bound: KeyRequestBound): Promise<number>
  /**
   * Keys holding a refusal older than `before`: they may hold more than the bound keeps though no
   * request of theirs was written lately (at most `max` keys).
   */
  keysWithRefusalsBefore (before: number, max: number): Promise<number[]>
}
