// The inventory port. An inventory entry is a view of the pet's row (`stock` and `status`), so
// its version is the pet's version: any change of the pet row changes the entry's ETag too.
import type { PetStatus } from '../pets/pets.schema.ts'
import type { OrderPolicy } from '../orders/orders.store.ts'
import type { IfMatch, PageRequest } from '../shared/store.ts'

/** Also the `data` of the inventory events, as stored (rendered by dropping `version`, inventory.view.ts). */
export interface InventoryRecord {
  petId: number
  quantity: number
  /** The pet's current status. */
  status: PetStatus
  /** The pet row's version. */
  version: number
}

export interface InventoryStore {
  /** In pet id order; `page.afterId` is a pet id. */
  listInventory (page: PageRequest): Promise<InventoryRecord[]>
  /** Null when the pet does not exist. */
  getInventory (petId: number): Promise<InventoryRecord | null>
  /**
   * Sets the stock in one transaction and applies rule 6: above 0, a pending or sold pet becomes
   * available; at 0, an available pet becomes pending if it has open orders, else sold. Always
   * bumps the pet row's version. Rule 10: the pet's orders lapsed at `now` are swept first, so
   * they are not open orders. Writes inventory.updated, and inventory.low when the stock falls from
   * above `lowStockThreshold` to at or below it, in the same transaction.
   * Throws not_found, precondition_failed.
   */
  setStock (
    petId: number,
    quantity: number,
    ifMatch: IfMatch,
    now: number,
    policy?: OrderPolicy
  ): Promise<InventoryRecord>
}
