// A bounded cache of pet rows in front of the SQLite connection (docs/performance.md): a read by
// id (GET /pets/{id}, GET /pets?id=) costs a Map lookup instead of a read transaction, whose WAL
// locking is most of a point read's cost. Beside it, each owner's open orders counted (rule 9's
// cap, OpenOrderCounts below), which the same check of other connections keeps true.
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
  /** The owners' open orders, counted (rule 9). */
  orders: OpenOrderCounts
  /** When each pet's earliest open order lapses, as far as known (rule 10's sweep of a pet). */
  holds: PetHolds
}

/**
 * Rule 10's sweep of a pet only when one of its open orders may have lapsed, known without a
 * query (issue 51 item 1): per pet, a time none of its open orders lapses before (a lower bound:
 * an order that closes never raises it). Unknown (never swept since the start, or another
 * connection committed): the sweep runs. Set only by a sweep that deleted nothing, from the
 * pet's earliest open order read in the same transaction, so a savepoint rolled back after it
 * (a refused order) undoes nothing it relied on; a write whose transaction is lost calls clear.
 */
export interface PetHolds {
  /** Whether the pet's sweep must run at `now`: an open order of it may have lapsed. */
  due (petId: number, now: number): boolean
  /** The pet's earliest open order lapses at `earliest` (Infinity: it has none). */
  known (petId: number, earliest: number): void
  /** An open order of the pet that lapses at `expiresAt` was inserted. */
  opened (petId: number, expiresAt: number): void
  forget (petId: number): void
  clear (): void
}

/**
 * Rule 9 without a query (issue 51 item 1): an owner's live open orders and its units of a pet,
 * from counts kept in memory, so an order refused at the cap costs no more than a placed one
 * (the query it replaces read every open order of the owner: 190 µs at 1,000).
 *
 * Per owner: its open orders (complete = 0, lapsed or not, as in the table), its units of each
 * pet in them, and a time no open order of it expires before (a lower bound: closing an order
 * never raises it). While that time is after `now`, every open order is live and the counts are
 * the answer; otherwise one grouped query over the owner's open orders loads them again, and
 * while one of them has lapsed unswept the exact query answers (until the sweep deletes it).
 * An owner is loaded on its first capped order, so a restart starts from the table.
 *
 * Kept true by every change of an order (placing, completing, cancelling, each sweep) inside its
 * transaction; a write whose transaction is then lost calls `forget`. Another connection's
 * commit (PRAGMA data_version, read once per group commit) empties them, as it empties the pet cache.
 */
export interface OpenOrderCounts {
  /** The owner's live open orders at `now` and its units of the pet in them. */
  held (owner: number, petId: number, now: number): { orders: number; units: number }
  /** An open order was inserted (inside its transaction). */
  opened (owner: number, petId: number, quantity: number, expiresAt: number): void
  /** An open order was completed or deleted (cancelled, swept). */
  closed (owner: number | null, petId: number, quantity: number): void
  /** Drops what is known of these owners (all when null): the next answer loads them again. */
  forget (owners: Iterable<number> | null): void
}

interface OwnerOrders {
  open: number
  units: Map<number, number>
  /** No open order of the owner lapses before this (epoch ms). */
  earliest: number
}

interface OwnerOrderRow { pet_id: number; n: number; units: number; earliest: number }

/** Owners counted at most (the oldest loaded go first). */
const MAX_OWNERS = 10_000

export const PET_CACHE_ENTRIES = 10_000
export const PET_CACHE_CHECK_MS = 100

export function createPetCache (db: Db, options: PetCacheOptions = {}): PetCache {
  const maxEntries = options.maxEntries ?? PET_CACHE_ENTRIES
  const checkEveryMs = options.checkEveryMs ?? PET_CACHE_CHECK_MS
  const byId = db.prepare(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`)
  const dataVersion = db.prepare('PRAGMA data_version')
  const entries = new Map<number, PetRecord>()
  const owners = new Map<number, OwnerOrders>()
  const earliestHold = new Map<number, number>()
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
    othersCommitted()
  }

  // The writer's checks: once per synchronous run (a group commit's batch), since no other
  // connection can commit while this one holds the write transaction; reset by a microtask,
  // which runs only once the batch has returned.
  let checkedInRun = false
  const endRun = (): void => { checkedInRun = false }
  function othersCommittedInRun (): void {
    if (checkedInRun) return
    checkedInRun = true
    queueMicrotask(endRun)
    othersCommitted()
  }

  /** Empties what this process knows of the database when another connection has committed. */
  function othersCommitted (): void {
    const current = dataVersion.get()?.data_version
    if (current !== version) {
      version = current
      entries.clear()
      owners.clear()
      earliestHold.clear()
    }
  }

  const ownerOrders = db.prepare(`SELECT pet_id, count(*) AS n, sum(quantity) AS units, min(expires_at) AS earliest
    FROM orders WHERE owner_key_id = ? AND complete = 0 GROUP BY pet_id`)
  // Rule 9 to the letter, for an owner with an open order lapsed and not yet swept.
  const liveHeld = db.prepare(`SELECT count(*) AS orders, coalesce(sum(CASE WHEN pet_id = :pet THEN quantity END), 0) AS units
    FROM orders WHERE owner_key_id = :owner AND complete = 0 AND expires_at > :now`)

  function load (owner: number): OwnerOrders {
    const entry: OwnerOrders = { open: 0, units: new Map(), earliest: Infinity }
    for (const row of ownerOrders.all(owner) as unknown as OwnerOrderRow[]) {
      entry.open += row.n
      entry.units.set(row.pet_id, row.units)
      entry.earliest = Math.min(entry.earliest, row.earliest)
    }
    owners.delete(owner)
    if (owners.size >= MAX_OWNERS) owners.delete(owners.keys().next().value!)
    owners.set(owner, entry)
    return entry
  }

  const orders: OpenOrderCounts = {
    held (owner, petId, now) {
      // In each group commit, not every checkEveryMs: a cap must hold across processes too.
      othersCommittedInRun()
      let entry = owners.get(owner)
      if (entry === undefined || entry.earliest <= now) entry = load(owner)
      if (entry.earliest > now) return { orders: entry.open, units: entry.units.get(petId) ?? 0 }
      return liveHeld.get({ owner, pet: petId, now }) as { orders: number; units: number }
    },
    opened (owner, petId, quantity, expiresAt) {
      const entry = owners.get(owner)
      if (entry === undefined) return
      entry.open++
      entry.units.set(petId, (entry.units.get(petId) ?? 0) + quantity)
      if (expiresAt < entry.earliest) entry.earliest = expiresAt
    },
    closed (owner, petId, quantity) {
      const entry = owner === null ? undefined : owners.get(owner)
      if (entry === undefined) return
      entry.open--
      const left = (entry.units.get(petId) ?? 0) - quantity
      if (left > 0) entry.units.set(petId, left)
      else entry.units.delete(petId)
    },
    forget (which) {
      if (which === null) owners.clear()
      else for (const owner of which) owners.delete(owner)
    }
  }

  const holds: PetHolds = {
    due (petId, now) {
      // In each group commit too: another process's order may lapse before those known here.
      othersCommittedInRun()
      return !((earliestHold.get(petId) ?? -Infinity) > now)
    },
    known (petId, earliest) {
      if (!earliestHold.has(petId) && earliestHold.size >= maxEntries) {
        earliestHold.delete(earliestHold.keys().next().value!)
      }
      earliestHold.set(petId, earliest)
    },
    opened (petId, expiresAt) {
      const known = earliestHold.get(petId)
      if (known !== undefined && expiresAt < known) earliestHold.set(petId, expiresAt)
    },
    forget (petId) { earliestHold.delete(petId) },
    clear () { earliestHold.clear() }
  }

  return {
    orders,
    holds,
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
