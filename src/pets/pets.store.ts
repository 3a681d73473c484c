// The pets port. Stock lives on the pet's row (one row, one lock): see orders for the rules.
import type { IdempotencyClaim, Created, IfMatch, PageRequest, Versioned } from '../shared/store.ts'
import type { Pet, PetStatus } from './pets.schema.ts'

export type PetRecord = Versioned<Pet>

export interface PetFilter {
  status?: PetStatus
  categoryId?: number
  /** lower-cased needle */
  nameContains?: string
  /** Only these ids (1 to 100 of them, each a storable id, no duplicates): GET /pets?id=1&id=2. */
  ids?: number[]
}

export interface PetChanges { name?: string; categoryId?: number; status?: PetStatus }

export interface PetStore {
  /** A page of pets; a store that reads at once (SQLite) answers without a promise. */
  listPets (filter: PetFilter, page: PageRequest): PetRecord[] | Promise<PetRecord[]>
  getPet (id: number): Promise<PetRecord | null>
  /**
   * The same read without a promise, offered by a store whose point read never waits (SQLite and
   * its pet cache): the read path then answers in the same turn (docs/performance.md).
   */
  getPetNow?: (id: number) => PetRecord | null
  /**
   * Creates the pet and its inventory entry (stock 1), and writes pet.created (at `now`) in the same
   * transaction; a replay writes nothing. Throws category_not_found, idempotency_key_reused.
   */
  createPet (
    input: { name: string; categoryId: number; status: PetStatus },
    idempotency: IdempotencyClaim | null,
    now: number
  ): Promise<Created<PetRecord>>
  /** With pet.updated. Throws not_found, precondition_failed (If-Match given and not matching), category_not_found. */
  updatePet (id: number, changes: PetChanges, ifMatch: IfMatch, now: number): Promise<PetRecord>
  /** With pet.deleted. Throws not_found, precondition_failed, pet_has_open_orders. Deletes its inventory entry too. */
  deletePet (id: number, ifMatch: IfMatch, now: number): Promise<void>
}
