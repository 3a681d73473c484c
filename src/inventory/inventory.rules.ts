// The stock rules both engines apply inside their transactions (docs/product.md section 5).
import type { PetStatus } from '../pets/pets.schema.ts'

/**
 * Rule 6: the pet's status once its stock is set to `quantity`. Stock above 0 makes a pending or
 * sold pet available; stock 0 makes an available pet pending while it has open orders, else sold;
 * a pending or sold pet at 0 keeps its status.
 */
export function statusForStock (current: PetStatus, quantity: number, hasOpenOrders: boolean): PetStatus {
  if (quantity > 0) return 'available'
  if (current !== 'available') return current
  return hasOpenOrders ? 'pending' : 'sold'
}

/** inventory.low: the stock fell from above the threshold to at or below it (by any cause). */
export function crossesLowStock (before: number, after: number, threshold: number): boolean {
  return before > threshold && after <= threshold
}
