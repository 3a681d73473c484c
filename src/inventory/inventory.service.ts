// The inventory rules (docs/product.md section 5, rules 6 and 7); the status change rides in the store's transaction.
import { notFound } from '../errors.ts'
import { pageRequest, toPage, type Page } from '../shared/pagination.ts'
import type { IfMatch } from '../shared/store.ts'
import type { InventoryListQuery } from './inventory.schema.ts'
import type { InventoryRecord, InventoryStore } from './inventory.store.ts'

export interface InventoryService {
  list (query: InventoryListQuery): Promise<Page<InventoryRecord>>
  get (petId: number): Promise<InventoryRecord>
  setStock (petId: number, quantity: number, ifMatch: IfMatch): Promise<InventoryRecord>
}

export function createInventoryService (inventory: InventoryStore): InventoryService {
  return {
    async list (query) {
      const page = pageRequest(query)
      // Entries are keyed by pet id; the shared pager wants `id`.
      const rows = (await inventory.listInventory(page)).map((record) => ({ id: record.petId, record }))
      const { items, nextCursor } = toPage(rows, page)
      return { items: items.map((row) => row.record), nextCursor }
    },

    async get (petId) {
      const entry = await inventory.getInventory(petId)
      if (entry === null) throw notFound(`pet ${petId}`)
      return entry
    },

    async setStock (petId, quantity, ifMatch) {
      return await inventory.setStock(petId, quantity, ifMatch)
    }
  }
}
