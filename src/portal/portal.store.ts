// The partner portal's port (docs/product.md, "Partner portal"): one-time links and the sessions
// they are exchanged for, stored by the hash of their token only (portal.service.ts makes the
// tokens; neither the token nor the key is ever stored). Server-side, so a session survives a
// restart and any instance on the same database serves it.

/** A one-time link as stored: the key it opens, until when, and when it was used (null: never). */
export interface PortalLinkRecord {
  keyId: number
  createdAt: number
  expiresAt: number
  usedAt: number | null
}

/** A portal session as stored: the key it acts as, when it began, was last seen and ends at the latest. */
export interface PortalSessionRecord {
  keyId: number
  createdAt: number
  /** Moved forward at most once a minute (touchSession), so a session's reads are not a write each. */
  lastSeenAt: number
  /** The absolute end (24 hours after it began). */
  expiresAt: number
}

export interface PortalStore {
  createLink (input: { hash: string; keyId: number; now: number; expiresAt: number }): Promise<void>
  /**
   * Marks the link used at `now` if it was never used, in one statement (so two exchanges of one
   * link cannot both succeed), and answers the link as it was before: `usedAt` null means this
   * call used it. Null when no link has this hash.
   */
  useLink (hash: string, now: number): Promise<PortalLinkRecord | null>
  createSession (input: { hash: string; keyId: number; now: number; expiresAt: number }): Promise<void>
  findSession (hash: string): Promise<PortalSessionRecord | null>
  /** Sets lastSeenAt to `now` when it is older than `before` (one write a minute at most per session). */
  touchSession (hash: string, now: number, before: number): Promise<void>
  /** Ends one session at once (sign out); nothing when it is gone already. */
  endSession (hash: string): Promise<void>
  /**
   * Deletes at most `max` sessions that ended by time (last seen before `idleBefore`, or past
   * their end at `now`) and links that expired before `linksBefore`; returns how many rows.
   */
  prune (input: { now: number; idleBefore: number; linksBefore: number; max: number }): Promise<number>
}
