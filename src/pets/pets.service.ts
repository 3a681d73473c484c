// The pet rules. Status follows the stock rules (see orders); staff may also set it directly.
import { notFound } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import type { IdempotencyClaim, IfMatch } from '../shared/store.ts'
import { pageRequest, toPage, type Page } from '../shared/pagination.ts'
import type { NewPet, PetListQuery, PetPatch } from './pets.schema.ts'
import type { PetRecord, PetStore } from './pets.store.ts'

export interface PetService {
  /** A page, answered at once when the store answers at once, else its promise. */
  list (query: PetListQuery): Page<PetRecord> | Promise<Page<PetRecord>>
  get (id: number): Promise<PetRecord>
  /** get(), answered at once when the store can (getPetNow), else its promise; throws not_found. */
  read (id: number): PetRecord | Promise<PetRecord>
  create (input: NewPet, idempotency: IdempotencyClaim | null): Promise<{ record: PetRecord; replayed: boolean }>
  replace (id: number, input: NewPet, ifMatch: IfMatch): Promise<PetRecord>
  patch (id: number, patch: PetPatch, ifMatch: IfMatch): Promise<PetRecord>
  remove (id: number, ifMatch: IfMatch): Promise<void>
}

export function createPetService (pets: PetStore, clock: Clock): PetService {
  const service: PetService = {
    list (query) {
      const page = pageRequest(query)
      // One id (the successor of GET /pets/{petId}) needs no deduplication.
      const ids = query.id === undefined ? undefined : query.id.length === 1 ? query.id : [...new Set(query.id)]
      const filter = {
        ...(ids !== undefined && { ids }),
        ...(query.status !== undefined && { status: query.status }),
        ...(query.categoryId !== undefined && { categoryId: query.categoryId }),
        ...(query.name !== undefined && { nameContains: query.name.toLowerCase() })
      }
      const rows = pets.listPets(filter, page)
      return rows instanceof Promise ? rows.then((r) => toPage(r, page)) : toPage(rows, page)
    },

    async get (id) {
      const pet = await pets.getPet(id)
      if (pet === null) throw notFound(`pet ${id}`)
      return pet
    },

    read (id) {
      if (pets.getPetNow === undefined) return service.get(id)
      const pet = pets.getPetNow(id)
      if (pet === null) throw notFound(`pet ${id}`)
      return pet
    },

    async create (input, idempotency) {
      return await pets.createPet(
        { name: input.name, categoryId: input.categoryId, status: input.status ?? 'available' },
        idempotency,
        clock.now()
      )
    },

    async replace (id, input, ifMatch) {
      // PUT replaces name and category; a missing status keeps the current one, because status
      // is driven by stock and orders and silently resetting it would break those rules.
      return await pets.updatePet(
        id,
        { name: input.name, categoryId: input.categoryId, ...(input.status !== undefined && { status: input.status }) },
        ifMatch,
        clock.now()
      )
    },

    async patch (id, patch, ifMatch) {
      return await pets.updatePet(id, patch, ifMatch, clock.now())
    },

    async remove (id, ifMatch) {
      await pets.deletePet(id, ifMatch, clock.now())
    }
  }
  return service
}
