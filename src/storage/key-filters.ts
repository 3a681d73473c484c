// The key list's filters (KeyFilter) as one SQL condition both engines run: the status order of
// accounts/keys.status.ts written in SQL, the role and plan, and the search. `param` adds a value and
// returns its placeholder (`?` for SQLite, `$n` for PostgreSQL), so the text and the values stay
// in step. "banned" is an EXISTS over the bans in force of any key sharing the row's quota
// identity, as activeBan reads them, so the filter and each key's `ban` agree.
import type { KeyFilter } from '../accounts/keys.store.ts'
import { EXPIRING_WITHIN_MS } from '../accounts/keys.status.ts'

const BANNED = (now: string): string =>
  `EXISTS (SELECT 1 FROM bans b JOIN api_keys o ON o.id = b.key_id WHERE coalesce(o.quota_key_id, o.id) = coalesce(k.quota_key_id, k.id) AND b.lifted_at IS NULL AND b.ends_at > ${now})`

/**
 * The case fold of the key search, computed by the app on both sides: on the name when a key is
 * written (the `search_name` column, both engines) and on the query here, so the match depends on
 * neither engine's lower() (SQLite's folds ASCII only, PostgreSQL's follows the database's
 * LC_CTYPE). JavaScript's toLowerCase (full Unicode, locale-independent: `É` is `é`), then `İ`'s
 * `i` and combining dot as a plain `i`, and the final sigma `ς` as `σ`: toLowerCase picks `ς` at
 * the end of a word, so `ΚΟΣ` would give `κος` and miss `κοσμος`. `ß` stays `ß` (not `ss`).
 * The migration that added the column filled it for the keys already there (SQLite: this very
 * function, registered on the connection as lower(); PostgreSQL: ICU's root-locale lower() and
 * the same two replacements).
 */
export const searchFold = (text: string): string => text.toLowerCase().replace(/i\u0307/g, 'i').replace(/ς/g, 'σ')

/** The `search_name` of a key named `name` (an unnamed key matches no text). */
export const keySearchName = (name: string | null): string => searchFold(name ?? '')

/** `%`, `_` and the escape itself are literal in a search. */
export const likeEscape = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The condition on `k` (api_keys) for the filter; 'TRUE' style '1 = 1' without one. */
export function keyFilterSql (filter: KeyFilter | undefined, param: (value: unknown) => string): string {
  if (filter === undefined) return '1 = 1'
  const parts: string[] = []
  if (filter.role !== undefined) parts.push(`k.role = ${param(filter.role)}`)
  if (filter.plan !== undefined) parts.push(`k.plan = ${param(filter.plan)}`)
  if (filter.q !== undefined && filter.q !== '') {
    // Each placeholder takes its own value (SQLite's `?` are positional).
    const like = param(`%${likeEscape(searchFold(filter.q))}%`)
    const length = param(filter.q.length)
    const q = param(filter.q)
    parts.push(`(k.search_name LIKE ${like} ESCAPE '\\' OR substr(k.key_prefix, 1, ${length}) = ${q})`)
  }
  if (filter.status !== undefined) {
    const now = (): string => param(filter.now)
    const live = `k.revoked_at IS NULL AND k.replaced_by IS NULL`
    const notExpired = (): string => `(k.expires_at IS NULL OR k.expires_at > ${now()})`
    switch (filter.status) {
      case 'revoked': parts.push('k.revoked_at IS NOT NULL'); break
      case 'rotated': parts.push('k.revoked_at IS NULL AND k.replaced_by IS NOT NULL'); break
      case 'expired': parts.push(`${live} AND k.expires_at IS NOT NULL AND k.expires_at <= ${now()}`); break
      case 'banned': parts.push(`${live} AND ${notExpired()} AND ${BANNED(now())}`); break
      case 'expiring': parts.push(`${live} AND k.expires_at > ${now()} AND k.expires_at <= ${param(filter.now + EXPIRING_WITHIN_MS)} AND NOT ${BANNED(now())}`); break
      case 'active': parts.push(`${live} AND (k.expires_at IS NULL OR k.expires_at > ${param(filter.now + EXPIRING_WITHIN_MS)}) AND NOT ${BANNED(now())}`); break
    }
  }
  return parts.length === 0 ? '1 = 1' : parts.join(' AND ')
}
