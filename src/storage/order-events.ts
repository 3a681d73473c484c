// The events the order and inventory stores write with their changes (docs/product.md, events),
// built once for both engines. `data` is the record as the store knows it; events/render.ts turns
// it into the API's shape when it is read. PostgreSQL's place_order and sweep_expired_orders build
// the same rows in SQL (storage/postgres/migrations.ts).
import { eventDraft, type EventDraft, type EventType } from '../events/catalogue.ts'
import { crossesLowStock } from '../inventory/inventory.rules.ts'
import type { InventoryRecord } from '../inventory/inventory.store.ts'
import type { OrderRecord } from '../orders/orders.store.ts'

/** The catalogue's order types. */
export type OrderEventType = Extract<EventType, `order.${string}`>

/** An order event: its owner may see it, and staff. */
export const orderEvent = (type: OrderEventType, order: OrderRecord): EventDraft =>
  eventDraft(type, order.ownerKeyId, order)

/** A stock event: the shop's, every staff member sees it. */
const inventoryEvent = (type: 'inventory.updated' | 'inventory.low', item: InventoryRecord): EventDraft =>
  eventDraft(type, null, item)

/** inventory.low, when the stock went from `before` (above the threshold) to the item's (at or below it). */
export const lowStockEvents = (before: number, item: InventoryRecord, threshold: number): EventDraft[] =>
  crossesLowStock(before, item.quantity, threshold) ? [inventoryEvent('inventory.low', item)] : []

/** Staff set the stock: inventory.updated, and inventory.low when it crossed the threshold. */
export const stockSetEvents = (before: number, item: InventoryRecord, threshold: number): EventDraft[] =>
  [inventoryEvent('inventory.updated', item), ...lowStockEvents(before, item, threshold)]
