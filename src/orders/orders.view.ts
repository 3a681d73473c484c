// The order as the API shows it: dates as ISO instants, shipDate omitted until known, no owner.
// The routes and the renderer of order events both use it.
import type { Order } from './orders.schema.ts'
import type { OrderRecord } from './orders.store.ts'

export const toPublicOrder = (record: OrderRecord): Order => ({
  id: record.id,
  petId: record.petId,
  quantity: record.quantity,
  ...(record.shipDate !== null && { shipDate: new Date(record.shipDate).toISOString() }),
  complete: record.complete,
  expiresAt: record.expiresAt === null ? null : new Date(record.expiresAt).toISOString()
})
