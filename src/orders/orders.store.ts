// The orders port. Placing, completing and cancelling an order each change the order and its
// pet's row (stock, status) together, so each is ONE method that the engine runs in ONE
// transaction. Engines must take stock with a conditional UPDATE
// (`SET stock = stock - q ... WHERE id = ? AND status = 'available' AND stock >= q`), so that
// orders accepted for a pet never add up to more than its stock under any concurrency.
import type { Created, IdempotencyClaim, IfMatch, PageRequest } from '../shared/store.ts'

export interface OrderRecord {
  id: number
  petId: number
  quantity: number
  /** epoch ms; null while no ship date is known (set on completion at the latest) */
  shipDate: number | null
  complete: boolean
  /** The API key that placed the order: customers see and cancel only their own. */
  ownerKeyId: number
  createdAt: number // epoch ms
  version: number
}

export interface OrderFilter {
  petId?: number
  complete?: boolean
  /** Only the orders of this API key (a customer's view); absent: every order (staff). */
  ownerKeyId?: number
}

/** Who may touch the order: `ownerKeyId` restricts to that key's orders (others are not_found); null: any (staff). */
export type OrderOwner = { ownerKeyId: number } | null

export interface NewOrderInput {
  petId: number
  quantity: number
  shipDate: number | null
  ownerKeyId: number
  now: number
}

export interface OrderChanges {
  /** Completes the order (rule 4). Completing is one way: a complete order cannot change. */
  complete?: true
  /** epoch ms; the service passes `now` when completing without one */
  shipDate?: number
}

export interface OrderStore {
  /** In id order. */
  listOrders (filter: OrderFilter, page: PageRequest): Promise<OrderRecord[]>
  /** Null when missing or not the owner's. */
  getOrder (id: number, owner: OrderOwner): Promise<OrderRecord | null>
  /**
   * Rules 2 and 3: takes the quantity off the pet's stock and inserts the order; the pet becomes
   * pending when its stock reaches 0. The Idempotency-Key claim is checked and recorded in the
   * same transaction (a replay returns the first record and changes nothing).
   * Throws pet_not_found, pet_not_available, insufficient_stock, idempotency_key_reused.
   */
  placeOrder (input: NewOrderInput, idempotency: IdempotencyClaim | null): Promise<Created<OrderRecord>>
  /**
   * Changes the ship date and/or completes the order (rule 4: when the last open order of a pet
   * with stock 0 completes, the pet becomes sold).
   * Throws not_found, precondition_failed, order_already_complete.
   */
  updateOrder (id: number, changes: OrderChanges, ifMatch: IfMatch): Promise<OrderRecord>
  /**
   * Rule 5: deletes the open order and returns its quantity to the pet's stock; a pending pet
   * becomes available again.
   * Throws not_found (also another owner's order), precondition_failed, order_already_complete.
   */
  cancelOrder (id: number, owner: OrderOwner, ifMatch: IfMatch): Promise<void>
}
