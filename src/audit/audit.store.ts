// The audit log's port (docs/product.md, the audit log; issue 32): entries are appended by the
// engines themselves, in the transaction of the change they record (storage/*/audit.ts, called
// where the change's events are appended); this port only reads them. Nothing in the API changes
// or removes an entry.
import type { AuditActor } from '../shared/actor-context.ts'

/** What one field was before the change and is after it; `before` is absent when the store did not read it. */
export interface FieldChange { before?: unknown; after?: unknown }

/** An entry as stored and hashed (instants in epoch ms). */
export interface AuditEntry {
  /** The entry's place in the chain: 1, 2, 3 … with no gap. */
  id: number
  at: number
  actor: AuditActor
  /** `<target type>.<verb>`: key.revoke, pet.update … */
  action: string
  target: { type: string; id: string }
  requestId: string | null
  address: string | null
  changes: Record<string, FieldChange>
  /** SHA-256 (hex) of the previous entry's hash and this entry's canonical JSON (audit.rules.ts). */
  hash: string
}

/** The number of entries and the last one's hash ('' when empty). */
export interface AuditHead { count: number; hash: string }

export interface AuditFilter {
  /** A key id, or every entry of the command line or of the system. */
  actor?: { keyId: number } | { type: 'cli' | 'system' | 'address' }
  /** `key.` matches every key action; otherwise the exact action. */
  action?: { prefix: string } | { exact: string }
  targetType?: string
  targetId?: string
  /** epoch ms, inclusive */
  since?: number
  /** epoch ms, exclusive */
  until?: number
}

export interface AuditStore {
  /** Newest first: entries with an id below `beforeId` (all when null), at most `limit`. */
  listAudit (filter: AuditFilter, beforeId: number | null, limit: number): Promise<AuditEntry[]>
  auditHead (): Promise<AuditHead>
  /**
   * Every entry in id order, from one consistent snapshot with the head it returns; `visit`
   * returning false stops the walk. For `petstore audit verify`.
   */
  walkAudit (visit: (entry: AuditEntry) => boolean): Promise<AuditHead>
}
