// The partner portal's door as the guard sees it (docs/product.md, "Partner portal"): a request to
// /portal/api/v1/* is a /v1 request made with the portal session's cookie instead of a key
// (http/instance.ts rewrites its URL and marks it). The portal feature (portal/portal.service.ts)
// implements this and hands it to the access service (AccessService.usePortal), so the pipeline
// imports no feature; the access service then decides the request as it decides a key's, with the
// session's key record as the key read.
import type { KeyRecord } from '../accounts/keys.store.ts'

/** What a portal request presents in place of a key. */
export interface PortalCredentials {
  /** The session token of the `petstore_portal` cookie; null when the request has none. */
  session: string | null
  /** The X-CSRF-Token header; null when absent. */
  csrf: string | null
  /** GET or HEAD: needs no CSRF token (nothing changes). */
  safe: boolean
}

export interface PortalGate {
  /**
   * The key record of the live session `token` names, or null: no such session, or it ended by
   * time (idle an hour, 24 hours old) or by sign-out. The key's own state (revoked, expired) is the
   * caller's to judge, as for a presented key. Keeps the session alive (its last use).
   */
  sessionKey (token: string, now: number): Promise<KeyRecord | null>
  /** Whether `csrf` is the CSRF token of session `token` (constant time). */
  csrfMatches (token: string, csrf: string | null): boolean
}

/**
 * The reads the portal's pages make often, free through the portal as GET /rate_limit is for
 * everyone (docs/product.md, "Partner portal"): a partner watching its own quota never spends it.
 * By route (method and path template, as the router matched it); every other operation is charged
 * through the portal exactly as with the key.
 */
const PORTAL_FREE_READS: ReadonlySet<string> = new Set([
  '/v1/keys/me', '/v1/keys/me/usage', '/v1/keys/me/bans', '/v1/keys/me/requests', '/v1/rate_limit'
])

/** Whether a route is one of the portal's free reads. */
export const isPortalFreeRead = (method: string | readonly string[] | undefined, url: string | undefined): boolean =>
  url !== undefined && PORTAL_FREE_READS.has(url) && (method === 'GET' || method === 'HEAD')

/** The portal session's cookie (portal/portal.routes.ts sets it: HttpOnly, SameSite=Strict, Path=/portal). */
export const PORTAL_COOKIE = 'petstore_portal'

/** The value of cookie `name` in a Cookie header (RFC 6265 5.4), or null. */
export function cookieValue (header: string | undefined, name: string): string | null {
  if (header === undefined) return null
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=')
    if (at !== -1 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim()
  }
  return null
}
