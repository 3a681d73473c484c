// A key store's reads by hash, counted and made to fail on demand: the access tests check that a
// key is read only when it must be, and what a failed read does. Wraps the real store in place.
import { randomBytes } from 'node:crypto'
import { keyChecksum } from '../../src/accounts/keys.rules.ts'
import type { KeyStore } from '../../src/accounts/keys.store.ts'

export function countKeyReads (keys: KeyStore): { reads: () => number; failWith: (error: Error | null) => void } {
  let reads = 0
  let failure: Error | null = null
  const find = keys.findKeyByHash.bind(keys)
  keys.findKeyByHash = async (hash) => {
    reads++
    if (failure !== null) throw failure
    return await find(hash)
  }
  return { reads: () => reads, failWith: (error) => { failure = error } }
}

/**
 * A well-formed key that is no key of ours: `psk_`, `c` repeated to 43 characters and their
 * right checksum, so the access check must read it to refuse it (a legacy-form key is refused by its
 * prefix without a read, access/key-cache.ts).
 */
export function unknownKey (c: string, times = 43): string {
  const random = c.repeat(times)
  return `psk_${random}${keyChecksum(random)}`
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** A random well-formed key with its right checksum that no one was ever given: it must be read. */
export function randomUnknownKey (): string {
  return unknownKey([...randomBytes(43)].map((b) => BASE62[b % 62]).join(''), 1)
}
