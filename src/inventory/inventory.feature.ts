// The inventory feature as app.ts registers it: the service on its port, and its routes.
import type { OrderPolicy } from '../orders/orders.store.ts'
import type { Feature } from '../routing/feature.ts'
import type { Clock } from '../shared/clock.ts'
import { inventoryRoutes } from './inventory.routes.ts'
import { createInventoryService } from './inventory.service.ts'
import type { InventoryStore } from './inventory.store.ts'

/** `policy`: the order settings' threshold of inventory.low and cool-down (ORDER_* and INVENTORY_LOW_THRESHOLD). */
export function inventoryFeature (store: InventoryStore, shared: { clock: Clock; policy: OrderPolicy }): Feature {
  const inventory = createInventoryService(store, shared.clock, shared.policy)
  return { routes: async (v1) => { await v1.register(inventoryRoutes, { inventory }) } }
}
