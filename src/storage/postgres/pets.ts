// PetStore on PostgreSQL. Reads are single autocommit statements, no transaction; every change
// is one transaction that locks the pet row first (SELECT ... FOR UPDATE), so concurrent writers
// of a pet run one after the other, as on SQLite's single connection.
//
// Reads of one pet by id are coalesced: the ids asked in one turn of the event loop are read by
// one statement, `WHERE id = ANY($1)`, so 50 requests in flight cost one round trip, not 50
// (docs/performance.md, "PostgreSQL orders").
import { categoryNotFound } from '../../errors.ts'
import { catalogEvent } from '../../events/events.store.ts'
import type { PetFilter, PetRecord, PetStore } from '../../pets/pets.store.ts'
import { currentRow, refuseIfOpenOrders } from '../checks.ts'
import { idempotentCreate } from '../idempotency.ts'
import type { Db } from './database.ts'
import { onConstraint } from './errors.ts'
import { appendEvents } from './events.ts'
import type { PostgresIdempotency } from './idempotency.ts'
import { PET_COLUMNS, toPet, type PetRow } from '../rows.ts'

const PETS_BY_IDS = `SELECT ${PET_COLUMNS} FROM pets WHERE id = ANY ($1::bigint[])`

/** getPet, coalesced: the ids asked before the next setImmediate go in one statement. */
function coalescedGet (db: Db): (id: number) => Promise<PetRecord | null> {
  let asked: Map<number, Array<{ resolve (pet: PetRecord | null): void; reject (error: unknown): void }>> | null = null

  function read (): void {
    const batch = asked!
    asked = null
    db.statement<PetRow>('pets_by_ids', PETS_BY_IDS, [[...batch.keys()]]).then((rows) => {
      const found = new Map<number, PetRow>()
      for (const row of rows) found.set(row.id, row)
      for (const [id, waiters] of batch) {
        const row = found.get(id)
        // A record of its own for each caller, as an uncoalesced read would give.
        for (const w of waiters) w.resolve(row === undefined ? null : toPet(row))
      }
    }, (error: unknown) => {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(error)
    })
  }

  return (id) => new Promise((resolve, reject) => {
    if (asked === null) {
      asked = new Map()
      setImmediate(read)
    }
    const waiters = asked.get(id)
    if (waiters === undefined) asked.set(id, [{ resolve, reject }])
    else waiters.push({ resolve, reject })
  })
}

export function createPostgresPetStore (db: Db, idempotency: PostgresIdempotency): PetStore {
  const getPet = coalescedGet(db)
  return {
    async listPets (filter: PetFilter, page) {
      const params: unknown[] = [page.afterId ?? 0, page.limit]
      const where = ['id > $1']
      if (filter.status !== undefined) where.push(`status = $${params.push(filter.status)}`)
      if (filter.categoryId !== undefined) where.push(`category_id = $${params.push(filter.categoryId)}`)
      // search_name is lower-cased by the app (JavaScript's full Unicode mapping), as is the
      // needle, so the match does not depend on the database's collation or ctype.
      if (filter.nameContains !== undefined) where.push(`strpos(search_name, $${params.push(filter.nameContains)}) > 0`)
      if (filter.ids !== undefined) where.push(`id = ANY ($${params.push(filter.ids)}::bigint[])`)
      const rows = await db.query<PetRow>(`SELECT ${PET_COLUMNS} FROM pets WHERE ${where.join(' AND ')} ORDER BY id LIMIT $2`, params)
      return rows.map(toPet)
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
