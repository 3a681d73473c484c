// The orders port. Placing, completing and cancelling an order each change the order and its
// pet's row (stock, status) together, so each is ONE method that the engine runs in ONE
// transaction. Engines must take stock with a conditional UPDATE
// (`SET stock = stock - q ... WHERE id = ? AND status = 'available' AND stock >= q`), so that
// orders accepted for a pet never add up to more than its stock under any concurrency.
import type { OrderLimits } from '../accounts/plans.ts'
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
  /**
   * epoch ms when the open order lapses (rule 10): from then on it counts as cancelled, and the
   * next sweep deletes it and returns its stock. Null once complete: a complete order never expires.
   */
  expiresAt: number | null
  version: number
}

/** Rule 10: how long an open order holds its stock, unless ORDER_HOLD_MINUTES says otherwise (config.ts). */
export const DEFAULT_ORDER_HOLD_MS = 30 * 60_000

/**
 * Rule 11: after a customer cancels an order or lets it lapse, it may not hold that pet again for
 * this long (the default of ORDER_COOLDOWN_MINUTES). Longer than a rival's polling interval plus
 * the periodic sweep's 10 s, so a rival who polls every few seconds gets the pet.
 */
export const DEFAULT_ORDER_COOLDOWN_MS = 5 * 60_000

/** inventory.low: a stock falling from above this to at or below it (the default of INVENTORY_LOW_THRESHOLD). */
export const DEFAULT_LOW_STOCK_THRESHOLD = 5

/**
 * What a change of orders needs besides its own input, for the effects it writes with it: the
 * cool-downs of the orders it cancels or sweeps (rule 11; 0: none) and the threshold of inventory.low.
 * Absent: the defaults.
 */
export interface OrderPolicy {
  cooldownMs: number
  lowStockThreshold: number
}

export const DEFAULT_ORDER_POLICY: OrderPolicy = {
  cooldownMs: DEFAULT_ORDER_COOLDOWN_MS,
  lowStockThreshold: DEFAULT_LOW_STOCK_THRESHOLD
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
  /** When the order lapses (rule 10): the service dates it from its hold time; the store takes it as given. */
  expiresAt: number
  /** Rule 9: the owner's caps, checked against its live open orders; null or absent: none (staff, admin). */
  limits?: OrderLimits | null
  /** Rule 11: refuse while the owner is cooling down from this pet (customers; staff and admin are exempt). */
  checkCooldown?: boolean
  policy?: OrderPolicy
}

export interface OrderChanges {
  /** Completes the order (rule 4). Completing is one way: a complete order cannot change. */
  complete?: true
  /** epoch ms; the service passes `now` when completing without one */
  shipDate?: number
}

/**
 * Every change writes its events in its own transaction (docs/product.md, events): order.created,
 * order.updated (ship date), order.completed, order.cancelled (the order as it was), order.expired
 * (each lapsed order a sweep deletes, lazy ones included), inventory.low (a placement that takes
 * the stock from above the threshold to at or below it). Refusals write nothing.
 */
export interface OrderStore {
  /**
   * In id order. With `now`, an open order whose expiresAt has passed is left out (rule 10: it
   * counts as cancelled even before a sweep deletes it); every method below takes `now` the same way.
   */
  listOrders (filter: OrderFilter, page: PageRequest, now?: number): Promise<OrderRecord[]>
  /** Null when missing, not the owner's, or expired at `now`. */
  getOrder (id: number, owner: OrderOwner, now?: number): Promise<OrderRecord | null>
  /**
   * Rules 2 and 3: takes the quantity off the pet's stock and inserts the order; the pet becomes
   * pending when its stock reaches 0. The Idempotency-Key claim is checked and recorded in the
   * same transaction (a replay returns the first record and changes nothing).
   * Rule 10 first: the pet's open orders expired at `now` are swept (deleted, stock returned) in
   * the same transaction, so they never refuse an order. Rule 9: with `limits`, the owner's live
   * open orders (their number, their units of this pet) must leave room for this one. Rule 11:
   * with `checkCooldown`, an owner cooling down from the pet is refused (after the sweep, which may
   * have just started that cool-down).
   * Throws pet_not_found, pet_not_available, insufficient_stock, order_limit_reached, order_cooldown,
   * idempotency_key_reused.
   */
  placeOrder (input: NewOrderInput, idempotency: IdempotencyClaim | null): Promise<Created<OrderRecord>>
  /**
   * Changes the ship date and/or completes the order (rule 4: when the last open order of a pet
   * with stock 0 completes, the pet becomes sold).
   * Throws not_found, precondition_failed, order_already_complete.
   */
  updateOrder (
    id: number,
    changes: OrderChanges,
    ifMatch: IfMatch,
    now: number,
    policy?: OrderPolicy
  ): Promise<OrderRecord>
  /**
   * Rule 5: deletes the open order and returns its quantity to the pet's stock; a pending pet
   * becomes available again. Rule 11: when the owner cancels (`owner` given), its cool-down from the pet starts.
   * Throws not_found (also another owner's order), precondition_failed, order_already_complete.
   */
  cancelOrder (id: number, owner: OrderOwner, ifMatch: IfMatch, now: number, policy?: OrderPolicy): Promise<void>
  /**
   * Rule 10, the periodic sweep: deletes the open orders expired at `now` and returns their stock
   * (rule 5), for at most `maxPets` pets (all of each pet's expired orders), starting each owner's
   * cool-down (rule 11), and forgets cool-downs that have ended. Returns how many orders it
   * deleted; fewer pets than `maxPets` swept means none is left.
   */
  sweepExpired (now: number, maxPets: number, policy?: OrderPolicy): Promise<{ orders: number; pets: number }>
}
