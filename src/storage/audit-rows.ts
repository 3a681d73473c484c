// The audit log's rows, alike on both engines (the schemas are column for column the same):
// the row to the entry, and the list's filter as SQL with the engine's placeholders.
import type { AuditEntry, AuditFilter } from '../audit/audit.store.ts'
import type { AuditActor } from '../shared/actor-context.ts'

export const AUDIT_COLUMNS = 'id, at, actor_type, actor_key_id, actor_role, actor_user, actor_via, action, target_type, target_id, request_id, address, changes, hash'

export interface AuditRow {
  id: number | string
  at: number | string
  actor_type: string
  actor_key_id: number | string | null
  actor_role: string | null
  actor_user: string | null
  /** 'portal' for a change made through the partner portal (absent from rows read before it existed). */
  actor_via?: string | null
  action: string
  target_type: string
  target_id: string
  request_id: string | null
  address: string | null
  changes: string
  hash: string
}

function actorOf (row: AuditRow): AuditActor {
  switch (row.actor_type) {
    case 'key': return {
      type: 'key', keyId: Number(row.actor_key_id), role: row.actor_role ?? '',
      ...(row.actor_via === 'portal' && { via: 'portal' as const })
    }
    case 'cli': return { type: 'cli', user: row.actor_user ?? '' }
    case 'address': return { type: 'address' }
    // Whatever else a row says is kept as it is, so that a changed row fails its hash.
    default: return { type: row.actor_type } as AuditActor
  }
}

export function toAuditEntry (row: AuditRow): AuditEntry {
  let changes: AuditEntry['changes']
  try {
    changes = JSON.parse(row.changes) as AuditEntry['changes']
  } catch {
    // A row changed by hand into text that is not JSON: kept as text, its hash then fails.
    changes = { unreadable: { after: row.changes } }
  }
  return {
    id: Number(row.id),
    at: Number(row.at),
    actor: actorOf(row),
    action: row.action,
    target: { type: row.target_type, id: row.target_id },
    requestId: row.request_id,
    address: row.address,
    changes,
    hash: row.hash
  }
}

/** The WHERE clause of a page: the filter's conditions and `id < beforeId`. */
export function auditFilterSql (
  filter: AuditFilter,
  beforeId: number | null,
  param: (value: string | number) => string
): string {
  const where: string[] = []
  if (beforeId !== null) where.push(`id < ${param(beforeId)}`)
  const { actor, action } = filter
  if (actor !== undefined) {
    if ('keyId' in actor) where.push(`actor_type = 'key' AND actor_key_id = ${param(actor.keyId)}`)
    else where.push(`actor_type = ${param(actor.type)}`)
  }
  if (action !== undefined) {
    if ('prefix' in action) where.push(`substr(action, 1, ${param(action.prefix.length)}) = ${param(action.prefix)}`)
    else where.push(`action = ${param(action.exact)}`)
  }
  if (filter.targetType !== undefined) where.push(`target_type = ${param(filter.targetType)}`)
  if (filter.targetId !== undefined) where.push(`target_id = ${param(filter.targetId)}`)
  if (filter.since !== undefined) where.push(`at >= ${param(filter.since)}`)
  if (filter.until !== undefined) where.push(`at < ${param(filter.until)}`)
  return where.length === 0 ? 'TRUE' : where.join(' AND ')
}
