// Telling every instance that a key changed (revoked, role or plan changed, rotated), so that it
// forgets what it cached about the key at once instead of within the key cache's 2 s. With Redis
// the message goes through pub/sub (infra.ts); without it there is no other instance to tell,
// or the 2 s bound of the key cache is the documented delay (docs/architecture.md).

export interface KeyEvents {
  /** Reports that the key changed. Never throws: a lost message leaves the 2 s cache bound. */
  publish (keyId: number): void
  /** Calls `listener` with the id of every key reported changed, by any instance. */
  subscribe (listener: (keyId: number) => void): void
  /** Settles once listening has started (or failed: then only the 2 s cache bound holds). */
  readonly ready: Promise<void>
  close (): Promise<void>
}

/** One process only: what it publishes reaches its own listeners. */
export function localKeyEvents (): KeyEvents {
  const listeners: Array<(keyId: number) => void> = []
  return {
    publish (keyId) { for (const listener of listeners) listener(keyId) },
    subscribe (listener) { listeners.push(listener) },
    ready: Promise.resolve(),
    async close () { listeners.length = 0 }
  }
}

/** A message body is a key id; anything else is ignored. */
export function parseKeyEvent (message: string): number | null {
  if (!/^\d{1,16}$/.test(message)) return null
  const id = Number(message)
  return Number.isSafeInteger(id) ? id : null
}
