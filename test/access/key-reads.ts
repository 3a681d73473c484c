// A key store's reads by hash, counted and made to fail on demand: the access tests check that a
// key is read only when it must be, and what a failed read does. Wraps the real store in place.
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
