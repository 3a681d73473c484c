// The order rules (docs/product.md section 5, rules 2 to 5). The stock arithmetic itself is atomic in
// the store; here: who may see and touch which order, and what completing means.
import { AppError, notFound } from '../errors.ts'
import type { Caller } from '../accounts/caller.ts'
import type { OrderLimits, Plan } from '../accounts/plans.ts'
import type { Clock } from '../shared/clock.ts'
import { pageRequest, toPage, type Page } from '../shared/pagination.ts'
import type { Created, IdempotencyClaim, IfMatch } from '../shared/store.ts'
import type { NewOrder, OrderListQuery, OrderPatch } from './orders.schema.ts'
import type { OrderChanges, OrderOwner, OrderPolicy, OrderRecord, OrderStore } from './orders.store.ts'

/**
 * Also the OrderPolicy every change of orders and stock takes: the cool-down (rule 11) and the
 * threshold of inventory.low.
 */
export interface OrderSettings extends OrderPolicy {
  /** Rule 10: how long an open order holds its stock (ORDER_HOLD_MINUTES, default DEFAULT_ORDER_HOLD_MS). */
  holdMs: number
  /** Rule 9: caps per plan (null: none); ORDER_LIMITS overrides the defaults of accounts/plans.ts. */
  limits: Record<Plan, OrderLimits | null>
}

export interface OrderService {
  list (query: OrderListQuery, caller: Caller): Promise<Page<OrderRecord>>
  get (id: number, caller: Caller): Promise<OrderRecord>
  /**
   * `claimAt`: the request's Idempotency-Key claim (null without one), dated by the instant the
   * order is placed at: the clock is read once, here, for the order and its claim.
   */
  place (
    input: NewOrder,
    caller: Caller,
    claimAt: (now: number) => IdempotencyClaim | null
  ): Promise<Created<OrderRecord>>
  update (id: number, patch: OrderPatch, ifMatch: IfMatch): Promise<OrderRecord>
  cancel (id: number, caller: Caller, ifMatch: IfMatch): Promise<void>
  /** Rule 10: one bounded batch of the periodic sweep of expired orders. */
  sweep (): Promise<{ orders: number; pets: number }>
}

/** The periodic sweep runs this often per process, and takes this many pets' expired orders per run. */
export const SWEEP_EVERY_MS = 10_000
export const SWEEP_MAX_PETS = 200

/** A customer works on its own orders only; staff and admin on all. Another's order is not_found, never forbidden. */
const ownerOf = (caller: Caller): OrderOwner => caller.role === 'customer' ? { ownerKeyId: caller.keyId } : null

/** An ISO 8601 date-time (already checked by the schema) as epoch ms. */
function epochOf (text: string, field: string): number {
  const ms = Date.parse(text)
  if (!Number.isFinite(ms)) {
    throw new AppError('validation_failed', `invalid body: /${field} is not a date-time this API can store`, { details: [{ path: `/${field}`, message: 'must be an ISO 8601 date-time' }] })
  }
  return ms
}

/** Rule 9: customers are capped by their plan; staff and admin never are. */
const limitsOf = (caller: Caller, settings: OrderSettings): OrderLimits | null =>
  caller.role === 'customer' ? settings.limits[caller.plan] : null

export function createOrderService (orders: OrderStore, clock: Clock, settings: OrderSettings): OrderService {
  return {
    async list (query, caller) {
      const page = pageRequest(query)
      const owner = ownerOf(caller)
      const filter = {
        ...(query.petId !== undefined && { petId: query.petId }),
        ...(query.complete !== undefined && { complete: query.complete }),
        ...(owner !== null && { ownerKeyId: owner.ownerKeyId })
      }
      return toPage(await orders.listOrders(filter, page, clock.now()), page)
    },

    async get (id, caller) {
      const order = await orders.getOrder(id, ownerOf(caller), clock.now())
      if (order === null) throw notFound(`order ${id}`)
      return order
    },

    async place (input, caller, claimAt) {
      const now = clock.now()
      const idempotency = claimAt(now)
      const shipDate = input.shipDate === undefined ? null : epochOf(input.shipDate, 'shipDate')
      // Rule 10: the service decides when the order lapses; the store takes it as given.
      return await orders.placeOrder({
        petId: input.petId, quantity: input.quantity, shipDate, ownerKeyId: caller.keyId, now,
        expiresAt: now + settings.holdMs, limits: limitsOf(caller, settings),
        // Rule 11: staff and admin place orders for the shop; only customers cool down.
        checkCooldown: caller.role === 'customer', policy: settings
      }, idempotency)
    },

    async update (id, patch, ifMatch) {
      const changes: OrderChanges = {}
      if (patch.shipDate !== undefined) changes.shipDate = epochOf(patch.shipDate, 'shipDate')
      if (patch.complete === true) {
        // Rule 4: completing records the actual ship date, now unless the request gives one.
        changes.complete = true
        changes.shipDate ??= clock.now()
      }
      return await orders.updateOrder(id, changes, ifMatch, clock.now(), settings)
    },

    async cancel (id, caller, ifMatch) {
      await orders.cancelOrder(id, ownerOf(caller), ifMatch, clock.now(), settings)
    },

    async sweep () {
      return await orders.sweepExpired(clock.now(), SWEEP_MAX_PETS, settings)
    }
  }
}
