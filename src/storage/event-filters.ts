// Who may read which events, and the type filter, as one SQL condition both engines run (as
// key-filters.ts does for keys): the catalogue's rule of audiences (events/catalogue.ts, maySee),
// in SQL. `param` adds a value and returns its placeholder.
import { CUSTOMER_AUDIENCES, STAFF_AUDIENCES } from '../events/catalogue.ts'
import type { TypeFilter, Visibility } from '../events/events.store.ts'

/**
 * The condition on `e` (events) for a reader and a type filter, for both engines; `param` adds a
 * value and returns its placeholder.
 */
export function eventFilterSql (
  visibility: Visibility,
  types: TypeFilter | undefined,
  param: (value: unknown) => string
): string {
  const parts: string[] = []
  if (visibility.role === 'staff') {
    parts.push(`(e.audience IN (${STAFF_AUDIENCES.map((a) => param(a)).join(', ')}) OR e.subject_key_id = ${param(visibility.keyId)})`)
  } else if (visibility.role === 'customer') {
    parts.push(`e.subject_key_id = ${param(visibility.keyId)} AND e.audience IN (${CUSTOMER_AUDIENCES.map((a) => param(a)).join(', ')})`)
  }
  if (types !== undefined && (types.exact.length > 0 || types.prefixes.length > 0)) {
    const any = [
      ...types.exact.map((type) => `e.type = ${param(type)}`),
      // Prefixes are type names with `*` cut off: letters, dots and underscores only (the route's
      // schema), so no LIKE wildcard can reach here; substr keeps it exact anyway.
      ...types.prefixes.map((prefix) => `substr(e.type, 1, ${param(prefix.length)}) = ${param(prefix)}`)
    ]
    parts.push(`(${any.join(' OR ')})`)
  }
  return parts.length === 0 ? '1 = 1' : parts.join(' AND ')
}
