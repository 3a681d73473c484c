// OrderStore on PostgreSQL. Placing, completing and cancelling are each one transaction that
// changes the order and its pet's row together.
//
// Placing one is a call of the function place_order (migration 3): the claim of the
// Idempotency-Key, the caps, the sweep of the pet's expired orders, the stock and the insert in
// one round trip and one transaction, with its events (migration 8: order.created, inventory.low,
// order.expired of the sweep) and the cool-down check. The orders that arrive while a batch is in
// flight are placed together by one call of place_orders (migration 6): one round trip, one transaction and
// one WAL flush for the batch, each order decided as if alone (group commit on the API side; the
// design and figures are in docs/performance.md, "PostgreSQL orders"). Since migration 32 the
// batch's orders of one pet are decided as a run in memory, with one UPDATE of the pet and one
// INSERT of their orders and of their events (place_order_run).
//
// Locks, always in this order so no two transactions wait on each other in a cycle:
// the order row (SELECT ... FOR UPDATE), then the pet row. Placing an order locks only the pet
// row, through its conditional UPDATE: under READ COMMITTED a concurrent UPDATE of the same row
// waits, then re-checks its WHERE against the committed row, so the stock taken never exceeds
// the stock there was (the database enforces the rule, not this process's memory). The sweep of
// expired orders skips the order rows another transaction holds (FOR UPDATE SKIP LOCKED).
// Completing, re-dating and cancelling append their events in their transaction (appendEvents).
import { idempotencyKeyReused, notFound, orderCooldown, ServiceUnavailableError } from '../../errors.ts'
import { newEventId } from '../../events/events.store.ts'
import type { PetStatus } from '../../pets/pets.schema.ts'
import {
  DEFAULT_ORDER_POLICY,
  type OrderFilter,
  type OrderOwner,
  type OrderRecord,
  type OrderStore
} from '../../orders/orders.store.ts'
import { IDEMPOTENCY_TTL_MS, type IfMatch } from '../../shared/store.ts'
import { lapsed, openOrder, orderLimitRefusal, orderRefusal, visibleOrder } from '../checks.ts'
import { orderEvent } from '../order-events.ts'
import { createBatcher } from './batch.ts'
import { appendEvents } from './events.ts'
import type { Db, Tx } from './database.ts'
import type { PostgresIdempotency } from './idempotency.ts'
import { ORDER_COLUMNS, toOrder, type OrderRow } from '../rows.ts'

/** What place_order answers: an outcome, its detail, and the order's columns once placed. */
type PlaceRow = { outcome: 'placed' | 'replayed' | 'reused' | 'limit' | 'cooldown' | 'refused'; detail: string | null } & OrderRow

const PLACE_ORDER = `SELECT outcome, detail, ${ORDER_COLUMNS} FROM place_order($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`
const PLACE_ORDERS = `SELECT item, outcome, detail, ${ORDER_COLUMNS} FROM place_orders($1::jsonb, $2)`

/** One order of a batch, as place_orders reads it (the parameters of place_order, by name). */
interface BatchItem {
  pet: number
  owner: number | null
  quantity: number
  shipDate: number | null
  now: number
  expiresAt: number
  maxOrders: number | null
  maxUnits: number | null
  scope: string | null
  key: string | null
  fingerprint: string | null
  lowStock: number
  cooldownMs: number
  checkCooldown: boolean
  /** The id of the order's event, if it is placed: the app's (newEventId), as every other event's. */
  eventId: string
}

/** An order's outcome, or why its call failed (the database could not serve it, or a bug). */
type Placed = { row: PlaceRow } | { error: unknown }

/** Most ended cool-downs one periodic sweep forgets. */
const MAX_COOLDOWNS_PRUNED = 1000

/** Most orders placed by one call: a batch stays a few milliseconds of the database's time. */
export const MAX_ORDER_BATCH = 64

export interface PostgresOrderStoreOptions {
  /** Batches of orders in flight at once (default 1: the next batch forms while one commits). */
  orderBatchesInFlight?: number
}

/**
 * The open order to change at `now`, locked (the checks: openOrder in checks.ts). One that has
 * lapsed (rule 10) is swept with its pet's other expired orders, and is then no order: null, so
 * the caller answers 404 once the sweep is committed.
 */
async function lockOpenOrder (
  tx: Tx,
  id: number,
  owner: OrderOwner,
  ifMatch: IfMatch,
  now: number,
  cooldownMs: number
): Promise<OrderRow | null> {
  const found = await tx.first<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1 FOR UPDATE`, [id])
  if (found !== undefined && visibleOrder(found, owner) !== undefined && lapsed(found, now)) {
    await tx.query('SELECT sweep_expired_orders($1, $2, $3)', [found.pet_id, now, cooldownMs])
    return null
  }
  return openOrder(found, id, owner, ifMatch)
}

export function createPostgresOrderStore (
  db: Db,
  idempotency: PostgresIdempotency,
  options: PostgresOrderStoreOptions = {}
): OrderStore {
  const placeOne = async (item: BatchItem): Promise<Placed> => {
    try {
      const rows = await db.statement<PlaceRow>('place_order', PLACE_ORDER, [
        item.pet,
        item.owner,
        item.quantity,
        item.shipDate,
        item.now,
        item.expiresAt,
        item.maxOrders,
        item.maxUnits,
        item.scope,
        item.key,
        item.fingerprint,
        IDEMPOTENCY_TTL_MS,
        item.lowStock,
        item.cooldownMs,
        item.checkCooldown,
        item.eventId
      ])
      return { row: rows[0]! }
    } catch (error) {
      return { error }
    }
  }

  const place = createBatcher<BatchItem, Placed>({
    maxBatch: MAX_ORDER_BATCH,
    maxInFlight: options.orderBatchesInFlight ?? 1,
    async run (items) {
      if (items.length === 1) return [await placeOne(items[0]!)]
      try {
        const rows = await db.statement<PlaceRow & { item: number }>(
          'place_orders',
          PLACE_ORDERS,
          [JSON.stringify(items), IDEMPOTENCY_TTL_MS]
        )
        const placed: Placed[] = new Array<Placed>(items.length)
        for (const row of rows) placed[row.item] = { row }
        return placed
      } catch (error) {
        // The batch rolled back as a whole (refusals never raise, so this is the database being
        // unavailable, or a bug in one item): when the database is there, each order is placed
        // again alone, so one order's failure is its own and the others still go through.
        if (error instanceof ServiceUnavailableError) return items.map(() => ({ error }))
        return await Promise.all(items.map(placeOne))
      }
    }
  })

  return {
    async listOrders (filter: OrderFilter, page, now) {
      const params: unknown[] = [page.afterId ?? 0, page.limit]
      const where = ['id > $1']
      if (filter.petId !== undefined) where.push(`pet_id = $${params.push(filter.petId)}`)
      if (filter.complete !== undefined) where.push(`complete = $${params.push(filter.complete)}`)
      if (filter.ownerKeyId !== undefined) where.push(`owner_key_id = $${params.push(filter.ownerKeyId)}`)
      // Rule 10: an expired open order counts as cancelled before the sweep deletes it.
      if (now !== undefined) where.push(`(expires_at IS NULL OR expires_at > $${params.push(now)})`)
      return (await db.query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where.join(' AND ')} ORDER BY id LIMIT $2`, params)).map(toOrder)
    },

    async getOrder (id, owner, now) {
      const row = visibleOrder(await db.first<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [id]), owner)
      return row === undefined || lapsed(row, now) ? null : toOrder(row)
    },

    async placeOrder (input, claim) {
      // The idempotency step (replay, work, remember) runs inside SQL here, in place_order, not
      // through storage/idempotency.ts: the claim, the order and its result are one round trip.
      const limits = input.limits ?? null
      const policy = input.policy ?? DEFAULT_ORDER_POLICY
      const placed = await place({
        pet: input.petId, owner: input.ownerKeyId, quantity: input.quantity, shipDate: input.shipDate, now: input.now,
        expiresAt: input.expiresAt,
        maxOrders: limits?.openOrders ?? null, maxUnits: limits?.unitsPerPet ?? null,
        scope: claim?.scope ?? null, key: claim?.key ?? null, fingerprint: claim?.fingerprint ?? null,
        lowStock: policy.lowStockThreshold, cooldownMs: policy.cooldownMs, checkCooldown: input.checkCooldown === true,
        eventId: newEventId()
      })
      if ('error' in placed) throw placed.error
      const row = placed.row
      switch (row.outcome) {
        case 'replayed': return { record: JSON.parse(row.detail!) as OrderRecord, replayed: true }
        case 'reused': throw idempotencyKeyReused()
        case 'cooldown': throw orderCooldown(input.petId, Number(row.detail))
        case 'limit': throw orderLimitRefusal(
          limits!,
          JSON.parse(row.detail!) as { orders: number; units: number },
          input.petId,
          input.quantity
        )!
        case 'refused': throw orderRefusal(
          input.petId,
          input.quantity,
          row.detail === null ? undefined : JSON.parse(row.detail) as { status: PetStatus; stock: number }
        )
        case 'placed': break
      }
      if (claim !== null) await idempotency.purge(claim.now)
      return { record: toOrder(row), replayed: false }
    },

    async updateOrder (id, changes, ifMatch, now, policy = DEFAULT_ORDER_POLICY) {
      const result = await db.transaction(async (tx) => {
        const row = await lockOpenOrder(tx, id, null, ifMatch, now, policy.cooldownMs)
        if (row === null) return null
        if (changes.complete !== true) {
          const updated = toOrder((await tx.first<OrderRow>(`UPDATE orders SET ship_date = $1, version = version + 1 WHERE id = $2 RETURNING ${ORDER_COLUMNS}`, [changes.shipDate ?? row.ship_date, id]))!)
          await appendEvents(tx, [orderEvent('order.updated', updated)], now, toOrder(row))
          return updated
        }
        // Rule 4 asks whether open orders are left: the pet's lapsed ones are not (rule 10).
        await tx.query('SELECT sweep_expired_orders($1, $2, $3)', [row.pet_id, now, policy.cooldownMs])
        // Lock the pet before deciding rule 4: two last orders completing at once then run one
        // after the other, and the second sees the first complete (each statement of a READ
        // COMMITTED transaction reads what was committed before it), so the pet is sold.
        await tx.query('SELECT 1 FROM pets WHERE id = $1 FOR UPDATE', [row.pet_id])
        // A complete order never expires (rule 10).
        const updated = toOrder((await tx.first<OrderRow>(`UPDATE orders SET complete = true, ship_date = $1, expires_at = NULL, version = version + 1 WHERE id = $2 RETURNING ${ORDER_COLUMNS}`, [changes.shipDate ?? row.ship_date, id]))!)
        // Rule 4: the pet is sold once its stock is 0 and no open order is left (a lapsed one
        // that a cancel holds, so the sweep skipped it, is not open either).
        await tx.query(`UPDATE pets SET status = 'sold', version = version + 1
          WHERE id = $1 AND stock = 0 AND status <> 'sold' AND NOT EXISTS (SELECT 1 FROM orders WHERE pet_id = $1 AND NOT complete AND expires_at > $2)`, [row.pet_id, now])
        await appendEvents(tx, [orderEvent('order.completed', updated)], now, toOrder(row))
        return updated
      })
      if (result === null) throw notFound(`order ${id}`)
      return result
    },

    async cancelOrder (id, owner, ifMatch, now, policy = DEFAULT_ORDER_POLICY) {
      const cancelled = await db.transaction(async (tx) => {
        const row = await lockOpenOrder(tx, id, owner, ifMatch, now, policy.cooldownMs)
        if (row === null) return false
        await tx.query('DELETE FROM orders WHERE id = $1', [id])
        // Rule 5: the quantity goes back; a pending pet has stock again, so it is available.
        // An open order's pet cannot have been deleted (deletePet refuses), so this finds it.
        await tx.query(`UPDATE pets SET stock = stock + $1,
          status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1 WHERE id = $2`, [row.quantity, row.pet_id])
        await appendEvents(tx, [orderEvent('order.cancelled', toOrder(row))], now)
        // Rule 11: a customer cancelling its own order; staff cancelling one starts no cool-down.
        if (owner !== null && policy.cooldownMs > 0) {
          await tx.query(`INSERT INTO order_cooldowns (owner_key_id, pet_id, until) VALUES ($1, $2, $3)
            ON CONFLICT (owner_key_id, pet_id) DO UPDATE SET until = greatest(order_cooldowns.until, excluded.until)`, [row.owner_key_id, row.pet_id, now + policy.cooldownMs])
        }
        return true
      })
      if (!cancelled) throw notFound(`order ${id}`)
    },

    async sweepExpired (now, maxPets, policy = DEFAULT_ORDER_POLICY) {
      // One statement per pet, each its own transaction: a sweep never holds two pets' rows, so
      // it cannot deadlock with another instance's sweep or with an order.
      const pets = await db.query<{ pet_id: number }>('SELECT DISTINCT pet_id FROM orders WHERE NOT complete AND expires_at <= $1 LIMIT $2', [now, maxPets])
      let orders = 0
      for (const { pet_id: petId } of pets) {
        orders += (await db.first<{ n: number }>('SELECT sweep_expired_orders($1, $2, $3) AS n', [petId, now, policy.cooldownMs]))?.n ?? 0
      }
      await db.query('DELETE FROM order_cooldowns WHERE ctid IN (SELECT ctid FROM order_cooldowns WHERE until <= $1 LIMIT $2)', [now, MAX_COOLDOWNS_PRUNED])
      return { orders, pets: pets.length }
    }
  }
}
