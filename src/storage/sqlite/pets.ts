// PetStore on SQLite. Every method is one synchronous transaction (see database.ts).
import { categoryNotFound } from '../../errors.ts'
import { catalogEvent } from '../../events/events.store.ts'
import type { PetChanges, PetFilter, PetRecord, PetStore } from '../../pets/pets.store.ts'
import { currentRow, refuseIfOpenOrders } from '../checks.ts'
import { idempotentCreate } from '../idempotency.ts'
import type { Db } from './database.ts'
import { createPetSweep } from './orders.ts'
import type { Writer } from './writer.ts'
import type { SqliteEventLog } from './events.ts'
import type { PetCache } from './pet-cache.ts'
import type { SqliteIdempotency } from './idempotency.ts'
import { PET_COLUMNS, toPet, type PetRow } from '../rows.ts'

export function createSqlitePetStore (
  db: Db,
  writer: Writer,
  idempotency: SqliteIdempotency,
  cache: PetCache,
  events: SqliteEventLog
): PetStore {
  const byId = db.prepare(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`)
  const categoryExists = db.prepare('SELECT 1 FROM categories WHERE id = ?')
  const insert = db.prepare(`INSERT INTO pets (name, search_name, category_id, status, stock) VALUES (?, ?, ?, ?, 1) RETURNING ${PET_COLUMNS}`)
  const update = db.prepare(`UPDATE pets SET name = ?, search_name = ?, category_id = ?, status = ?, version = version + 1 WHERE id = ? RETURNING ${PET_COLUMNS}`)
  // Rule 8 counts live open orders only: a lapsed one is not open (rule 10), swept or not.
  const openOrders = db.prepare('SELECT 1 FROM orders WHERE pet_id = ? AND complete = 0 AND expires_at > ? LIMIT 1')
  const sweepPet = createPetSweep(db, cache, events)
  const remove = db.prepare('DELETE FROM pets WHERE id = ?')
  // One prepared statement per filter combination, made on first use (16 at most).
  const listStatements = new Map<string, ReturnType<Db['prepare']>>()

  function listStatement (filter: PetFilter) {
    const shape = `${filter.ids !== undefined ? 'i' : ''}${filter.status !== undefined ? 's' : ''}`
      + `${filter.categoryId !== undefined ? 'c' : ''}${filter.nameContains !== undefined ? 'n' : ''}`
    let statement = listStatements.get(shape)
    if (statement === undefined) {
      const where = ['id > :after']
      // The ids travel as one JSON array parameter, so one statement serves any number of them.
      if (filter.ids !== undefined) where.push('id IN (SELECT value FROM json_each(:ids))')
      if (filter.status !== undefined) where.push('status = :status')
      if (filter.categoryId !== undefined) where.push('category_id = :category')
      if (filter.nameContains !== undefined) where.push('instr(search_name, :name) > 0')
      // Only the ids: the rows come from the pet cache (pet-cache.ts), and a page of ids costs a
      // third of a page of rows to read (docs/performance.md).
      statement = db.prepare(`SELECT id FROM pets WHERE ${where.join(' AND ')} ORDER BY id LIMIT :limit`)
      statement.setReturnArrays(true)
      listStatements.set(shape, statement)
    }
    return statement
  }

  function requireCategory (categoryId: number): void {
    if (categoryExists.get(categoryId) === undefined) throw categoryNotFound(categoryId)
  }

  return {
    // Synchronous: GET /v1/pets answers in the request's own turn, as a read by id does.
    listPets (filter, page) {
      // Ids only (GET /pets?id=…): point reads through the cache, in id order, after the cursor.
      if (filter.ids !== undefined && filter.status === undefined
        && filter.categoryId === undefined && filter.nameContains === undefined) {
        const after = page.afterId ?? 0
        const pets: PetRecord[] = []
        for (const id of [...filter.ids].sort((a, b) => a - b)) {
          if (id <= after) continue
          const pet = cache.get(id)
          if (pet !== null) pets.push(pet)
          if (pets.length === page.limit) break
        }
        return pets
      }
      const params: Record<string, string | number> = { after: page.afterId ?? 0, limit: page.limit }
      if (filter.ids !== undefined) params.ids = JSON.stringify(filter.ids)
      if (filter.status !== undefined) params.status = filter.status
      if (filter.categoryId !== undefined) params.category = filter.categoryId
      if (filter.nameContains !== undefined) params.name = filter.nameContains
      const pets: PetRecord[] = []
      for (const [id] of listStatement(filter).all(params) as unknown as [number][]) {
        const pet = cache.get(id)
        if (pet !== null) pets.push(pet)
      }
      return pets
    },

    async getPet (id) {
      return cache.get(id)
    },

    getPetNow (id) {
      return cache.get(id)
    },

    async createPet (input, claim, now) {
      return await writer.run(() => idempotentCreate(claim, () => {
        requireCategory(input.categoryId)
        const pet = toPet(
          insert.get(input.name, input.name.toLowerCase(), input.categoryId, input.status) as unknown as PetRow
        )
        events.append([catalogEvent('pet.created', pet)], now)
        return pet
      }, idempotency))
    },

    async updatePet (id, changes: PetChanges, ifMatch, now) {
      return await writer.run(() => {
        const row = currentRow(byId.get(id) as PetRow | undefined, `pet ${id}`, ifMatch)
        const name = changes.name ?? row.name
        const categoryId = changes.categoryId ?? row.category_id
        if (categoryId !== row.category_id) requireCategory(categoryId)
        cache.forget(id)
        const pet = toPet(
          update.get(name, name.toLowerCase(), categoryId, changes.status ?? row.status, id) as unknown as PetRow
        )
        events.append([catalogEvent('pet.updated', pet)], now, toPet(row))
        return pet
      })
    },

    async deletePet (id, ifMatch, now) {
      await writer.run(() => {
        currentRow(byId.get(id) as PetRow | undefined, `pet ${id}`, ifMatch)
        refuseIfOpenOrders(id, openOrders.get(id, now) !== undefined)
        // The pet's lapsed orders end here as they would in any sweep (order.expired each, before
        // pet.deleted), not later against a missing pet. No cool-down: the pet cannot be ordered again.
        sweepPet(id, now, 0)
        cache.forget(id)
        remove.run(id)
        events.append([catalogEvent('pet.deleted', { id })], now)
      })
    }
  }
}
