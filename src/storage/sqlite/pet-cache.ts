// A bounded cache of pet rows in front of the SQLite connection (docs/performance.md): a read by
// id (GET /pets/{id}, GET /pets?id=) costs a Map lookup instead of a read transaction, whose WAL
// locking is most of a point read's cost.
//
// Exact for this process: every write of a pet row here (pets, inventory, orders) drops the
// row's entry inside its transaction. Another process writing the same file (a second server,
// a tool) is noticed through PRAGMA data_version, which changes when another connection commits:
// it is read at most every `checkEveryMs`, and a change empties the cache. So a write made
// elsewhere is seen within checkEveryMs (100 ms by default).
import type { PetRecord } from '../../pets/pets.store.ts'
import { PET_COLUMNS, toPet, type PetRow } from '../rows.ts'
import type { Db } from './database.ts'

export interface PetCacheOptions {
  /** Entries kept at most (the oldest go first). */
  maxEntries?: number
  /** How often another connection's commits are looked for; 0: before every read. */
  checkEveryMs?: number
}

export interface PetCache {
  /** The pet, from the cache or the database; null when it does not exist (not cached). */
  get (id: number): PetRecord | null
  /** Call inside any transaction that changes or deletes the pet's row. */
  forget (id: number): void
}

export const PET_CACHE_ENTRIES = 10_000
export const PET_CACHE_CHECK_MS = 100

export function createPetCache (db: Db, options: PetCacheOptions = {}): PetCache {
  const maxEntries = options.maxEntries ?? PET_CACHE_ENTRIES
  const checkEveryMs = options.checkEveryMs ?? PET_CACHE_CHECK_MS
  const byId = db.prepare(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`)
  const dataVersion = db.prepare('PRAGMA data_version')
  const entries = new Map<number, PetRecord>()
  let version: unknown = dataVersion.get()?.data_version
  // Whether checkEveryMs has passed since the last look: set by a one-shot timer (which keeps no
  // process alive) armed at each look, so a read reads no clock.
  let due = false
  const becomeDue = (): void => { due = true }
  if (checkEveryMs > 0) setTimeout(becomeDue, checkEveryMs).unref()

  function checkOthers (): void {
    if (checkEveryMs > 0) {
      if (!due) return
      due = false
      setTimeout(becomeDue, checkEveryMs).unref()
    }
    const current = dataVersion.get()?.data_version
    if (current !== version) {
      version = current
      entries.clear()
    }
  }

  return {
    get (id) {
      checkOthers()
      const hit = entries.get(id)
      if (hit !== undefined) return hit
      // Outside a transaction only: inside one, the row may be this transaction's uncommitted change.
      const row = byId.get(id) as PetRow | undefined
      if (row === undefined) return null
      const pet = Object.freeze(toPet(row))
      if (db.isTransaction) return pet
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!)
      entries.set(id, pet)
      return pet
    },
    forget (id) {
      entries.delete(id)
    }
  }
}
