// The rules every storage engine applies the same way, written once. Each engine reads the rows
// with its own SQL, inside its own transaction (and, on PostgreSQL, under its row locks), then
// asks these functions what the rows mean; so an engine keeps only its SQL and its locking.
import {
  idempotencyKeyReused,
  insufficientStock,
  notFound,
  orderAlreadyComplete,
  orderCooldown,
  orderLimitReached,
  petHasOpenOrders,
  petNotAvailable,
  petNotFound,
  preconditionFailed,
  type AppError
} from '../errors.ts'
import type { OrderLimits } from '../accounts/plans.ts'
import type { OrderOwner } from '../orders/orders.store.ts'
import type { PetStatus } from '../pets/pets.schema.ts'
import { IDEMPOTENCY_TTL_MS, matchesVersion, type IdempotencyClaim, type IfMatch } from '../shared/store.ts'
import type { OrderRow } from './rows.ts'

/**
 * The check every change starts with: the record exists (else 404 `${what} not found`), then
 * If-Match matches its version (else 412). In that order, so a stale ETag of a deleted record is 404.
 */
export function currentRow<R extends { version: number }> (row: R | undefined, what: string, ifMatch: IfMatch): R {
  if (row === undefined) throw notFound(what)
  if (!matchesVersion(ifMatch, row.version)) throw preconditionFailed()
  return row
}

/** The order as the caller may see it: another customer's order does not exist for them (404, never 403). */
export function visibleOrder (row: OrderRow | undefined, owner: OrderOwner): OrderRow | undefined {
  return row === undefined || (owner !== null && row.owner_key_id !== owner.ownerKeyId) ? undefined : row
}

/**
 * The open order to complete, re-date or cancel (rules 4 and 5): visible to the caller (404),
 * If-Match (412), not complete (409), in that order. `complete` is 0/1 on SQLite, a boolean on PostgreSQL.
 */
export function openOrder (row: OrderRow | undefined, id: number, owner: OrderOwner, ifMatch: IfMatch): OrderRow {
  const order = currentRow(visibleOrder(row, owner), `order ${id}`, ifMatch)
  if (order.complete === true || order.complete === 1) throw orderAlreadyComplete(id)
  return order
}

/**
 * Rule 10: an open order whose expiresAt has passed counts as cancelled (reads leave it out, a
 * change finds no order) from that instant, before any sweep deletes it. `now` undefined: no clock given.
 */
export function lapsed (
  row: { complete: number | boolean; expires_at: number | null },
  now: number | undefined
): boolean {
  return now !== undefined && row.complete !== true && row.complete !== 1
    && row.expires_at !== null && row.expires_at <= now
}

/**
 * Rule 9: whether the owner's live open orders (`orders` of them, `units` of this pet) leave room
 * for `quantity` more units of the pet; the refusal when they do not.
 */
export function orderLimitRefusal (
  limits: OrderLimits,
  held: { orders: number; units: number },
  petId: number,
  quantity: number
): AppError | null {
  if (held.orders >= limits.openOrders) {
    return orderLimitReached(`your plan allows ${limits.openOrders} open orders at a time and you have ${held.orders}; complete, cancel or let one expire first`)
  }
  if (held.units + quantity > limits.unitsPerPet) {
    return orderLimitReached(`your plan allows ${limits.unitsPerPet} units of one pet in open orders; you hold ${held.units} of pet ${petId} and asked ${quantity}`)
  }
  return null
}

/**
 * Rule 11: the owner's cool-down from the pet, read in the placing transaction (`until`, epoch ms;
 * undefined: none recorded), refuses the order until it ends.
 */
export function cooldownRefusal (petId: number, until: number | undefined, now: number): AppError | null {
  return until !== undefined && until > now ? orderCooldown(petId, until) : null
}

/**
 * Rule 2: why placing an order took no stock, once the engine's conditional UPDATE changed no
 * row. `pet` is the pet as read in the same transaction (undefined: there is none).
 */
export function orderRefusal (
  petId: number,
  quantity: number,
  pet: { status: PetStatus; stock: number } | undefined
): AppError {
  if (pet === undefined) return petNotFound(petId)
  if (pet.status !== 'available') return petNotAvailable(petId, pet.status)
  return insufficientStock(petId, pet.stock, quantity)
}

/** Rule 6 needs to know about open orders only when an available pet's stock is set to 0. */
export function stockAsksOpenOrders (status: PetStatus, quantity: number): boolean {
  return quantity === 0 && status === 'available'
}

/** Rule 8: a pet with open orders cannot be deleted. */
export function refuseIfOpenOrders (petId: number, hasOpenOrders: boolean): void {
  if (hasOpenOrders) throw petHasOpenOrders(petId)
}

/** A stored Idempotency-Key claim older than 24 hours counts as absent. */
export function claimExpired (row: { created_at: number }, claim: IdempotencyClaim): boolean {
  return row.created_at <= claim.now - IDEMPOTENCY_TTL_MS
}

/** A live claim seen before: the first result (JSON) to replay, or 409 when the request differs. */
export function replayOf (row: { fingerprint: string; response: string }, claim: IdempotencyClaim): string {
  if (row.fingerprint !== claim.fingerprint) throw idempotencyKeyReused()
  return row.response
}

/** A database migrated by a newer release is never touched: its schema may mean what this one does not know. */
export function refuseNewerSchema (version: number, known: number): void {
  if (version > known) throw new Error(`the database schema (version ${version}) is newer than this program knows (${known}); upgrade the program`)
}
