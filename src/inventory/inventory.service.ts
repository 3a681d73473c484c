// The inventory rules (docs/product.md section 5, rules 6 and 7); the status change rides in the store's transaction.
import { notFound } from '../errors.ts'
import type { OrderPolicy } from '../orders/orders.store.ts'
import type { Clock } from '../shared/clock.ts'
import { pageRequest, toPage, type Page } from '../shared/pagination.ts'
import type { IfMatch } from '../shared/store.ts'
import type { InventoryListQuery } from './inventory.schema.ts'
import type { InventoryRecord, InventoryStore } from './inventory.store.ts'

export interface InventoryService {
  list (query: InventoryListQuery): Promise<Page<InventoryRecord>>
  get (petId: number): Promise<InventoryRecord>
  setStock (petId: number, quantity: number, ifMatch: IfMatch): Promise<InventoryRecord>
}

/** `policy`: the threshold of inventory.low, and the cool-down of the lapsed orders a change sweeps (config.orders). */
export function createInventoryService (
  inventory: InventoryStore,
  clock: Clock,
  policy: OrderPolicy
): InventoryService {
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
      return await inventory.setStock(petId, quantity, ifMatch, clock.now(), policy)
    }
  }
}
