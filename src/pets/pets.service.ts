// The pet rules. Status follows the stock rules (see orders); staff may also set it directly.
import { categoryNotFound, notFound } from '../errors.ts'
import type { IdempotencyClaim, IfMatch } from '../shared/store.ts'
import { isStorableId, pageRequest, toPage, type Page } from '../shared/pagination.ts'
import type { NewPet, PetListQuery, PetPatch } from './pets.schema.ts'
import type { PetRecord, PetStore } from './pets.store.ts'

export interface PetService {
  list (query: PetListQuery): Promise<Page<PetRecord>>
  get (id: number): Promise<PetRecord>
  /** get(), answered at once when the store can (getPetNow), else its promise; throws not_found. */
  read (id: number): PetRecord | Promise<PetRecord>
  create (input: NewPet, idempotency: IdempotencyClaim | null): Promise<{ record: PetRecord; replayed: boolean }>
  replace (id: number, input: NewPet, ifMatch: IfMatch): Promise<PetRecord>
  patch (id: number, patch: PetPatch, ifMatch: IfMatch): Promise<PetRecord>
  remove (id: number, ifMatch: IfMatch): Promise<void>
}

export function createPetService (pets: PetStore): PetService {
  function requireCategoryId (categoryId: number | undefined): void {
    if (categoryId !== undefined && !isStorableId(categoryId)) {
      throw categoryNotFound(categoryId)
    }
  }

  const service: PetService = {
    async list (query) {
      const page = pageRequest(query)
      if (query.categoryId !== undefined && !isStorableId(query.categoryId)) return { items: [], nextCursor: null }
      // Ids we never assigned (past 2^53, or not positive) name no pet: they just match nothing.
      const ids = query.id === undefined ? undefined : [...new Set(query.id.filter(isStorableId))]
      if (ids !== undefined && ids.length === 0) return { items: [], nextCursor: null }
      const filter = {
        ...(ids !== undefined && { ids }),
        ...(query.status !== undefined && { status: query.status }),
        ...(query.categoryId !== undefined && { categoryId: query.categoryId }),
        ...(query.name !== undefined && { nameContains: query.name.toLowerCase() })
      }
      return toPage(await pets.listPets(filter, page), page)
    },

    async get (id) {
      const pet = isStorableId(id) ? await pets.getPet(id) : null
      if (pet === null) throw notFound(`pet ${id}`)
      return pet
    },

    read (id) {
      if (pets.getPetNow === undefined) return service.get(id)
      const pet = isStorableId(id) ? pets.getPetNow(id) : null
      if (pet === null) throw notFound(`pet ${id}`)
      return pet
    },

    async create (input, idempotency) {
      requireCategoryId(input.categoryId)
      return await pets.createPet({ name: input.name, categoryId: input.categoryId, status: input.status ?? 'available' }, idempotency)
    },

    async replace (id, input, ifMatch) {
      if (!isStorableId(id)) throw notFound(`pet ${id}`)
      requireCategoryId(input.categoryId)
      // PUT replaces name and category; a missing status keeps the current one, because status
      // is driven by stock and orders and silently resetting it would break those rules.
      return await pets.updatePet(id, { name: input.name, categoryId: input.categoryId, ...(input.status !== undefined && { status: input.status }) }, ifMatch)
    },

    async patch (id, patch, ifMatch) {
      if (!isStorableId(id)) throw notFound(`pet ${id}`)
      requireCategoryId(patch.categoryId)
      return await pets.updatePet(id, patch, ifMatch)
    },

    async remove (id, ifMatch) {
      if (!isStorableId(id)) throw notFound(`pet ${id}`)
      await pets.deletePet(id, ifMatch)
    }
  }
  return service
}
