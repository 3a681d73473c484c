// The partner portal's way in (docs/product.md, "Partner portal"), as Unkey's and Svix's portals
// do it: a one-time link, exchanged once for a server-side session held by an HttpOnly cookie. The
// key itself never reaches the browser: the session acts as the key through the public API's own
// rules (the guard reads the session's key record: access/portal-gate.ts).
//
// - A link is `<origin>/portal#link=<token>`: the token rides in the URL fragment, which browsers
//   never send, so it is in no access log, proxy log or Referer. Valid 15 minutes, usable once
//   (PortalStore.useLink marks it in one statement).
// - A session ends after an hour without a request, 24 hours after it began, at sign-out, and as
//   soon as its key is revoked or expires (a rotated key expires at the end of its grace period).
//   Its last use is written at most once a minute, so reading the portal is not a write per
//   request; the idle hour is counted from that write, so a session may end up to a minute early.
// - Only the SHA-256 of each token is stored. The CSRF token is derived from the session token
//   (a keyed hash of it), so it needs no storage and cannot be derived from what is stored.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { KeyRecord, KeyStore } from '../accounts/keys.store.ts'
import { isExpired } from '../accounts/keys.rules.ts'
import type { PortalGate } from '../access/portal-gate.ts'
import { AppError } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import type { PortalStore } from './portal.store.ts'

export const LINK_TTL_MS = 15 * 60_000
export const SESSION_IDLE_MS = 60 * 60_000
export const SESSION_MAX_MS = 24 * 60 * 60_000
/** A session's last use is written when older than this: one write a minute at most. */
export const TOUCH_EVERY_MS = 60_000
/** Used and expired links are kept this long after they expire, so a late click is told why. */
export const LINK_KEPT_MS = 24 * 60 * 60_000

/** 32 random bytes, base64url: 43 characters. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/

const newToken = (): string => randomBytes(32).toString('base64url')
const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex')
const csrfOf = (token: string): string =>
  createHash('sha256').update('petstore-portal-csrf\0').update(token).digest('base64url')

/** What the portal page shows of its session (never the key, never the session token). */
export interface PortalSessionView {
  keyId: number
  role: string
  name: string | null
  /** When the session ends at the latest: 24 hours after it began, or the key's expiry if sooner (ISO). */
  expiresAt: string
  csrfToken: string
}

export interface PortalLink { url: string; expiresAt: string }

export interface Portal {
  /** A one-time link to the portal for key `keyId`, at `origin` (`https://api.example`). Throws not_found. */
  makeLink (keyId: number, origin: string): Promise<PortalLink>
  /** Exchanges a link's token for a session: its token (the cookie) and its view. Throws portal_link_invalid. */
  exchange (linkToken: string): Promise<{ token: string; view: PortalSessionView }>
  /** The live session of `token`. Throws portal_session_ended. */
  session (token: string | null): Promise<PortalSessionView>
  /** Ends the session at once. Throws csrf_token_invalid (then nothing changed). */
  signOut (token: string | null, csrf: string | null): Promise<void>
  /** What the guard asks of a portal request (access/portal-gate.ts). */
  readonly gate: PortalGate
  /** Deletes ended sessions and old links, at most `max` rows; returns how many (jobs/portal-sessions-prune.ts). */
  prune (max: number): Promise<number>
}

const linkRefused = (message: string): AppError => new AppError('portal_link_invalid', message)
const sessionEnded = (message: string): AppError => new AppError('portal_session_ended', message)

/** Why a key is no longer served, in words; null while it is live. */
function keyEnded (key: KeyRecord | null, now: number): string | null {
  if (key === null) return 'its key no longer exists'
  if (key.revokedAt !== null) return `its key was revoked at ${new Date(key.revokedAt).toISOString()}`
  if (isExpired(key, now)) {
    return key.replacedBy !== null
      ? `its key was rotated and its grace period ended at ${new Date(key.expiresAt!).toISOString()}`
      : `its key expired at ${new Date(key.expiresAt!).toISOString()}`
  }
  return null
}

export function createPortal (store: PortalStore, keys: KeyStore, clock: Clock): Portal {
  const viewOf = (key: KeyRecord, token: string, sessionEnd: number): PortalSessionView => ({
    keyId: key.id,
    role: key.role,
    name: key.name,
    expiresAt: new Date(Math.min(sessionEnd, key.expiresAt ?? Infinity)).toISOString(),
    csrfToken: csrfOf(token)
  })

  /** The live session of a token and its key, or why there is none. */
  /**
   * The live session `token` names with its key, or why there is none (`ended`); when the session
   * is live by time but its key was revoked or expired since, `key` is that key's record (the
   * access service logs the refusal in its request log), else null.
   */
  async function live (
    token: string | null,
    now: number
  ): Promise<{ key: KeyRecord; end: number; ended?: undefined } | { ended: string; key: KeyRecord | null }> {
    const gone = (ended: string, key: KeyRecord | null = null): { ended: string; key: KeyRecord | null } =>
      ({ ended, key })
    if (token === null || !TOKEN.test(token)) return gone('no portal session: open a new link')
    const hash = hashOf(token)
    const found = await store.findSession(hash)
    if (found === null) return gone('no portal session (signed out, or never opened): open a new link')
    if (now >= found.expiresAt) return gone('the portal session ended: it lasts 24 hours at most; open a new link')
    if (now - found.lastSeenAt >= SESSION_IDLE_MS) return gone('the portal session ended after an hour without use; open a new link')
    const key = await keys.getKey(found.keyId)
    const ended = keyEnded(key, now)
    if (ended !== null) return gone(`the portal session ended: ${ended}`, key)
    if (now - found.lastSeenAt >= TOUCH_EVERY_MS) await store.touchSession(hash, now, now - TOUCH_EVERY_MS)
    return { key: key!, end: found.expiresAt }
  }

  const gate: PortalGate = {
    async sessionKey (token, now) {
      // A key revoked or expired since is handed over all the same: the access service refuses it
      // (portal_session_ended) and logs the refusal in that key's request log.
      return (await live(token, now)).key
    },
    csrfMatches (token, csrf) {
      if (csrf === null) return false
      const expected = Buffer.from(csrfOf(token))
      const given = Buffer.from(csrf)
      return given.length === expected.length && timingSafeEqual(given, expected)
    }
  }

  return {
    gate,
    async makeLink (keyId, origin) {
      const now = clock.now()
      const key = await keys.getKey(keyId)
      if (key === null) throw new AppError('not_found', `key ${keyId} not found`)
      const token = newToken()
      const expiresAt = now + LINK_TTL_MS
      await store.createLink({ hash: hashOf(token), keyId, now, expiresAt })
      return { url: `${origin}/portal#link=${token}`, expiresAt: new Date(expiresAt).toISOString() }
    },
    async exchange (linkToken) {
      const now = clock.now()
      if (!TOKEN.test(linkToken)) throw linkRefused('this is not a portal link: ask for a new one')
      const link = await store.useLink(hashOf(linkToken), now)
      if (link === null) throw linkRefused('this portal link is not known: ask for a new one')
      if (link.usedAt !== null) {
        throw linkRefused(`this portal link was already used, at ${new Date(link.usedAt).toISOString()}: a link opens the portal once; ask for a new one`)
      }
      if (now >= link.expiresAt) {
        throw linkRefused(`this portal link expired at ${new Date(link.expiresAt).toISOString()}: a link is valid for 15 minutes; ask for a new one`)
      }
      const key = await keys.getKey(link.keyId)
      const ended = keyEnded(key, now)
      if (ended !== null) throw linkRefused(`this portal link can no longer be used: ${ended}`)
      const token = newToken()
      const expiresAt = now + SESSION_MAX_MS
      await store.createSession({ hash: hashOf(token), keyId: link.keyId, now, expiresAt })
      return { token, view: viewOf(key!, token, expiresAt) }
    },
    async session (token) {
      const found = await live(token, clock.now())
      if (found.ended !== undefined) throw sessionEnded(found.ended)
      return viewOf(found.key, token!, found.end)
    },
    async signOut (token, csrf) {
      if (token === null || !TOKEN.test(token)) return
      if (!gate.csrfMatches(token, csrf)) throw new AppError('csrf_token_invalid', 'signing out needs the session\'s X-CSRF-Token header')
      await store.endSession(hashOf(token))
    },
    async prune (max) {
      const now = clock.now()
      return await store.prune({ now, idleBefore: now - SESSION_IDLE_MS, linksBefore: now - LINK_KEPT_MS, max })
    }
  }
}
