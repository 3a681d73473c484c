// PetStore on PostgreSQL. Reads are single autocommit statements, no transaction; every change
// is one transaction that locks the pet row first (SELECT ... FOR UPDATE), so concurrent writers
// of a pet run one after the other, as on SQLite's single connection.
//
// Reads are coalesced: the reads asked in one turn of the event loop go by one statement, so 50
// requests in flight cost one round trip, not 50 (docs/performance.md, "PostgreSQL reads"). Pets
// by id (GET /pets/{petId}, and GET /pets?id= with no other filter) by one `WHERE id = ANY($1)`;
// pages by one statement per filter shape, each page a row of a jsonb array with its own
// `ORDER BY … LIMIT` scan, the same page asked twice read once.
import { categoryNotFound } from '../../errors.ts'
import { catalogEvent } from '../../events/events.store.ts'
import type { PetFilter, PetRecord, PetStore } from '../../pets/pets.store.ts'
import type { PageRequest } from '../../shared/store.ts'
import { currentRow, refuseIfOpenOrders } from '../checks.ts'
import { idempotentCreate } from '../idempotency.ts'
import type { Db } from './database.ts'
import { onConstraint } from './errors.ts'
import { appendEvents } from './events.ts'
import type { PostgresIdempotency } from './idempotency.ts'
import { PET_COLUMNS, toPet, type PetRow } from '../rows.ts'

const PETS_BY_IDS = `SELECT ${PET_COLUMNS} FROM pets WHERE id = ANY ($1::bigint[])`

interface Waiter<R> { resolve (value: R): void; reject (error: unknown): void }

/**
 * Coalesces the calls of one turn of the event loop: the keys asked before the next setImmediate
 * go to one `read`, each distinct key once, and every caller of a key gets `handOut` of its value
 * (undefined when `read` found none). A failed read fails every call it carried.
 */
function perTurn<K, V, R> (
  read: (keys: K[]) => Promise<Map<K, V>>,
  handOut: (value: V | undefined) => R
): (key: K) => Promise<R> {
  let asked: Map<K, Waiter<R>[]> | null = null

  function flush (): void {
    const batch = asked!
    asked = null
    read([...batch.keys()]).then((found) => {
      for (const [key, waiters] of batch) {
        const value = found.get(key)
        for (const w of waiters) w.resolve(handOut(value))
      }
    }, (error: unknown) => {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(error)
    })
  }

  return (key) => new Promise((resolve, reject) => {
    if (asked === null) {
      asked = new Map()
      setImmediate(flush)
    }
    const waiters = asked.get(key)
    if (waiters === undefined) asked.set(key, [{ resolve, reject }])
    else waiters.push({ resolve, reject })
  })
}

/** getPet, coalesced: one `WHERE id = ANY($1)` for the ids of a turn. */
function coalescedGet (db: Db): (id: number) => Promise<PetRecord | null> {
  return perTurn<number, PetRow, PetRecord | null>(
    async (ids) => {
      const found = new Map<number, PetRow>()
      for (const row of await db.statement<PetRow>('pets_by_ids', PETS_BY_IDS, [ids])) found.set(row.id, row)
      return found
    },
    // A record of its own for each caller, as an uncoalesced read would give.
    (row) => row === undefined ? null : toPet(row)
  )
}

/**
 * The statement that reads the pages of one filter shape: one row of $1 (a jsonb array) per page,
 * each joined to its own keyset scan. A prepared statement has one plan for every value, chosen
 * without the values, so each shape names the index that reads only the page's rows whatever
 * the values: ids go by the primary key (at most 100 lookups); else a category or a status by
 * its (column, id) index, through a row comparison that starts the scan at (value, cursor) and
 * an upper bound that ends it after the value. With `column = value` instead, the generic plan
 * walks the primary key and filters (measured: all 10,000 rows for a status no pet has).
 * The columns of $1 are named apart from the pets' columns. Exported for the test of its plans.
 */
export function petPagesSql (filter: PetFilter): string {
  const by = filter.ids !== undefined ? 'ids' : filter.categoryId !== undefined ? 'category' : filter.status !== undefined ? 'status' : 'id'
  const keyset = (column: string, value: string) => `(pets.${column}, pets.id) > (r.${value}, r.after_id) AND pets.${column} <= r.${value}`
  const columns = ['after_id bigint', 'page_limit int']
  const where = [by === 'category' ? keyset('category_id', 'want_category') : by === 'status' ? keyset('status', 'want_status') : 'pets.id > r.after_id']
  if (filter.ids !== undefined) { columns.push('want_ids bigint[]'); where.push('pets.id = ANY (r.want_ids)') }
  if (filter.categoryId !== undefined) { columns.push('want_category bigint'); if (by !== 'category') where.push('pets.category_id = r.want_category') }
  if (filter.status !== undefined) { columns.push('want_status text'); if (by !== 'status') where.push('pets.status = r.want_status') }
  // search_name is lower-cased by the app (JavaScript's full Unicode mapping), as is the
  // needle, so the match does not depend on the database's collation or ctype.
  if (filter.nameContains !== undefined) { columns.push('needle text'); where.push('strpos(pets.search_name, r.needle) > 0') }
  const order = by === 'category' ? 'pets.category_id, pets.id' : by === 'status' ? 'pets.status, pets.id' : 'pets.id'
  return `SELECT r.n, p.* FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (${columns.join(', ')})) WITH ORDINALITY AS r (${columns.map((c) => c.split(' ')[0]).join(', ')}, n)
    CROSS JOIN LATERAL (SELECT ${PET_COLUMNS} FROM pets WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT r.page_limit) p`
}

/** Which filters are given: the name of a page statement (16 at most). */
function shapeOf (filter: PetFilter): string {
  return `${filter.ids !== undefined ? 'i' : ''}${filter.status !== undefined ? 's' : ''}`
    + `${filter.categoryId !== undefined ? 'c' : ''}${filter.nameContains !== undefined ? 'n' : ''}`
}

/**
 * listPets' pages, coalesced: per filter shape, the pages of a turn go by one statement, and the
 * same page asked twice is read once. A page's records are frozen and shared by the callers of
 * that page (as SQLite's pet cache shares its records), each caller with an array of its own.
 */
function coalescedPages (db: Db): (filter: PetFilter, page: PageRequest) => Promise<PetRecord[]> {
  const shapes = new Map<string, (key: string) => Promise<PetRecord[]>>()

  function forShape (shape: string, filter: PetFilter) {
    const name = `pets_pages_${shape}`
    const sql = petPagesSql(filter)
    // The key is the page's element of the jsonb array, so the array is the keys joined.
    return perTurn<string, readonly PetRecord[], PetRecord[]>(async (keys) => {
      const pages: PetRecord[][] = keys.map(() => [])
      for (const row of await db.statement<PetRow & { n: number }>(name, sql, [`[${keys.join(',')}]`])) {
        pages[row.n - 1]!.push(Object.freeze(toPet(row)))
      }
      const found = new Map<string, readonly PetRecord[]>()
      // The rows of a page come in its scan's order, but SQL promises none without an outer
      // ORDER BY: sorted here, where a sorted array costs one pass, not by the server.
      for (let i = 0; i < keys.length; i++) found.set(keys[i]!, pages[i]!.sort((a, b) => a.id - b.id))
      return found
    }, (records) => records === undefined ? [] : [...records])
  }

  return (filter, page) => {
    const shape = shapeOf(filter)
    let read = shapes.get(shape)
    if (read === undefined) shapes.set(shape, read = forShape(shape, filter))
    // In a fixed order, so that the same page is the same key.
    const key = JSON.stringify({
      after_id: page.afterId ?? 0,
      page_limit: page.limit,
      ...(filter.ids !== undefined && { want_ids: filter.ids }),
      ...(filter.status !== undefined && { want_status: filter.status }),
      ...(filter.categoryId !== undefined && { want_category: filter.categoryId }),
      ...(filter.nameContains !== undefined && { needle: filter.nameContains })
    })
    return read(key)
  }
}

export function createPostgresPetStore (db: Db, idempotency: PostgresIdempotency): PetStore {
  const getPet = coalescedGet(db)
  const listPage = coalescedPages(db)
  return {
    listPets (filter, page) {
      // Ids only (GET /pets?id=…, the successor of GET /pets/{petId}): the reads by id, coalesced
      // with those of GET /pets/{petId}, in id order, after the cursor. One id, the successor's
      // common case, takes no more promises than GET /pets/{petId} (issue 34: never slower).
      if (filter.ids !== undefined && filter.status === undefined
        && filter.categoryId === undefined && filter.nameContains === undefined) {
        const after = page.afterId ?? 0
        const ids = filter.ids.filter((id) => id > after).sort((a, b) => a - b)
        if (ids.length === 1 && page.limit >= 1) return getPet(ids[0]!).then((pet) => pet === null ? [] : [pet])
        return Promise.all(ids.map(getPet)).then((found) => {
          const pets: PetRecord[] = []
          for (const pet of found) if (pet !== null && pets.length < page.limit) pets.push(pet)
          return pets
        })
      }
      return listPage(filter, page)
    },

    getPet,

    async createPet (input, claim, now) {
      const result = await db.transaction((tx) => idempotentCreate(claim, async (): Promise<PetRecord> => {
        // The foreign key checks the category (and locks it against a concurrent delete).
        const row = await tx.first<PetRow>(
          `INSERT INTO pets (name, search_name, category_id, status, stock) VALUES ($1, $2, $3, $4, 1) RETURNING ${PET_COLUMNS}`,
          [input.name, input.name.toLowerCase(), input.categoryId, input.status]
        ).catch(onConstraint({ pets_category_id_fkey: () => categoryNotFound(input.categoryId) }))
        const pet = toPet(row!)
        await appendEvents(tx, [catalogEvent('pet.created', pet)], now)
        return pet
      }, idempotency.within(tx)))
      if (claim !== null && !result.replayed) await idempotency.purge(claim.now)
      return result
    },

    async updatePet (id, changes, ifMatch, now) {
      return db.transaction(async (tx) => {
        const row = currentRow(await tx.first<PetRow>(`SELECT ${PET_COLUMNS} FROM pets WHERE id = $1 FOR UPDATE`, [id]), `pet ${id}`, ifMatch)
        const name = changes.name ?? row.name
        const categoryId = changes.categoryId ?? row.category_id
        const updated = await tx.first<PetRow>(
          `UPDATE pets SET name = $1, search_name = $2, category_id = $3, status = $4, version = version + 1 WHERE id = $5 RETURNING ${PET_COLUMNS}`,
          [name, name.toLowerCase(), categoryId, changes.status ?? row.status, id]
        ).catch(onConstraint({ pets_category_id_fkey: () => categoryNotFound(categoryId) }))
        const pet = toPet(updated!)
        await appendEvents(tx, [catalogEvent('pet.updated', pet)], now, toPet(row))
        return pet
      })
    },

    async deletePet (id, ifMatch, now) {
      await db.transaction(async (tx) => {
        // The row lock also orders this delete against orders being placed for the pet, which
        // lock the same row before they insert.
        currentRow(await tx.first<PetRow>(`SELECT ${PET_COLUMNS} FROM pets WHERE id = $1 FOR UPDATE`, [id]), `pet ${id}`, ifMatch)
        // Rule 8 counts live open orders only: a lapsed one is not open (rule 10), swept or not.
        refuseIfOpenOrders(id, await tx.first('SELECT 1 FROM orders WHERE pet_id = $1 AND NOT complete AND expires_at > $2 LIMIT 1', [id, now]) !== undefined)
        // The pet's lapsed orders end here as they would in any sweep (order.expired each, before
        // pet.deleted), not later against a missing pet. No cool-down: the pet cannot be ordered
        // again. One a cancel holds is skipped, and that cancel's own sweep ends it.
        await tx.query('SELECT sweep_expired_orders($1, $2, 0)', [id, now])
        await tx.query('DELETE FROM pets WHERE id = $1', [id])
        await appendEvents(tx, [catalogEvent('pet.deleted', { id })], now)
      })
    }
  }
}
