// The orders feature as app.ts registers it: the service on its port, and its routes. The service
// is handed on too: the order-sweep job (jobs/order-sweep.ts) runs its sweep.
import type { Feature } from '../routing/feature.ts'
import type { Clock } from '../shared/clock.ts'
import { orderRoutes } from './orders.routes.ts'
import { createOrderService, type OrderService, type OrderSettings } from './orders.service.ts'
import type { OrderStore } from './orders.store.ts'

/** `settings`: the hold, the caps per plan, the cool-down and the inventory.low threshold (config.ts). */
export function ordersFeature (
  store: OrderStore,
  shared: { clock: Clock; settings: OrderSettings }
): Feature & { service: OrderService } {
  const orders = createOrderService(store, shared.clock, shared.settings)
  return { service: orders, routes: async (v1) => { await v1.register(orderRoutes, { orders }) } }
}
