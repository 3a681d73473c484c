// The audit log's reads (docs/product.md, the audit log): the list's filters and cursor, the
// head, and the verification of the chain. Appends are the engines' (audit.rules.ts, called where
// each change's events are written); nothing here changes an entry.
import { AppError } from '../errors.ts'
import { decodeCursor, encodeCursor, DEFAULT_PAGE_SIZE } from '../shared/pagination.ts'
import { createChainCheck, type AuditFault } from './audit.rules.ts'
import type { AuditListQuery } from './audit.schema.ts'
import type { AuditEntry, AuditFilter, AuditHead, AuditStore } from './audit.store.ts'

export interface AuditPage { items: AuditEntry[]; nextCursor: string | null }

export interface AuditVerification { head: AuditHead; checked: number; fault: AuditFault | null }

export interface AuditService {
  list (query: AuditListQuery): Promise<AuditPage>
  head (): Promise<AuditHead>
  /** Walks the whole chain; `known` is a head kept elsewhere earlier, which must still be in the log. */
  verify (known?: AuditHead): Promise<AuditVerification>
}

function instant (text: string | undefined, name: string): number | undefined {
  if (text === undefined) return undefined
  const at = Date.parse(text)
  if (Number.isNaN(at)) throw new AppError('validation_failed', `${name} is not a date-time`, { details: [{ path: name, message: 'is not an RFC 3339 date-time' }] })
  return at
}

/** The query as the store's filter: `actor` a key id, `cli`, `system` or `address`; `action` exact or `family.*`. */
export function auditFilterOf (query: AuditListQuery): AuditFilter {
  const since = instant(query.since, 'since')
  const until = instant(query.until, 'until')
  const actor = query.actor
  return {
    ...(actor !== undefined && { actor: /^[0-9]+$/.test(actor) ? { keyId: Number(actor) } : { type: actor as 'cli' | 'system' | 'address' } }),
    ...(query.action !== undefined && {
      action: query.action.endsWith('.*') ? { prefix: query.action.slice(0, -1) } : { exact: query.action }
    }),
    ...(query.targetType !== undefined && { targetType: query.targetType }),
    ...(query.targetId !== undefined && { targetId: query.targetId }),
    ...(since !== undefined && { since }),
    ...(until !== undefined && { until })
  }
}

export function createAuditService (store: AuditStore): AuditService {
  return {
    async list (query) {
      const size = query.limit ?? DEFAULT_PAGE_SIZE
      // Newest first: the cursor is the id of the last (oldest) entry of the page, and the next
      // page is the entries below it.
      const rows = await store.listAudit(auditFilterOf(query), decodeCursor(query.cursor), size + 1)
      if (rows.length <= size) return { items: rows, nextCursor: null }
      const items = rows.slice(0, size)
      return { items, nextCursor: encodeCursor(items.at(-1)!.id) }
    },
    head () {
      return store.auditHead()
    },
    async verify (known) {
      const check = createChainCheck()
      let knownFault: AuditFault | null = null
      const head = await store.walkAudit((entry) => {
        const going = check.visit(entry)
        if (going && known !== undefined && entry.id === known.count && entry.hash !== known.hash) {
          knownFault = { entry: entry.id, problem: 'changed', message: `entry ${entry.id} is not the one recorded: its hash differs from the head kept` }
          return false
        }
        return going
      })
      let fault = knownFault ?? check.finish(head)
      if (fault === null && known !== undefined && known.count > head.count) {
        fault = { entry: head.count + 1, problem: 'removed', message: `entry ${head.count + 1} was removed: the head kept counts ${known.count}, the log ${head.count}` }
      }
      return { head, checked: check.checked, fault }
    }
  }
}
