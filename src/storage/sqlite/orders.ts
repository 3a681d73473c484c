// OrderStore on SQLite. Placing, completing and cancelling are each one synchronous transaction
// (see database.ts) that changes the order and its pet's row together, and appends its events
// and cool-downs in the same transaction (inside the writer's callback).
import type { PetStatus } from '../../pets/pets.schema.ts'
import {
  DEFAULT_ORDER_POLICY,
  type OrderChanges,
  type OrderFilter,
  type OrderOwner,
  type OrderRecord,
  type OrderStore
} from '../../orders/orders.store.ts'
import type { IfMatch } from '../../shared/store.ts'
import { AppError, notFound } from '../../errors.ts'
import { cooldownRefusal, lapsed, openOrder, orderLimitRefusal, orderRefusal, visibleOrder } from '../checks.ts'
import { idempotentCreate } from '../idempotency.ts'
import { lowStockEvents, orderEvent } from '../order-events.ts'
import type { Db } from './database.ts'
import type { Writer } from './writer.ts'
import type { PetCache } from './pet-cache.ts'
import type { SqliteIdempotency } from './idempotency.ts'
import type { SqliteEventLog } from './events.ts'
import { INVENTORY_COLUMNS, ORDER_COLUMNS, toInventory, toOrder, type InventoryRow, type OrderRow } from '../rows.ts'

/**
 * Rule 10's sweep of one pet, for the stores whose changes must not count its lapsed orders
 * (orders, inventory). Skipped while none of the pet's open orders can have lapsed (PetHolds);
 * `force` sweeps anyway (the periodic sweep, which found the pet by its lapsed orders).
 */
export type PetSweep = (petId: number, now: number, cooldownMs: number, force?: boolean) => number

/**
 * Inside a writer transaction: deletes the pet's open orders expired at `now` and returns their
 * units (rule 5), with an order.expired event for each and its owner's cool-down (rule 11).
 * Returns how many it deleted.
 */
export function createPetSweep (db: Db, cache: PetCache, events: SqliteEventLog): PetSweep {
  const expiredOf = db.prepare(`DELETE FROM orders WHERE pet_id = ? AND complete = 0 AND expires_at <= ? RETURNING ${ORDER_COLUMNS}`)
  const returnStock = db.prepare(`UPDATE pets SET stock = stock + ?,
    status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1 WHERE id = ?`)
  const earliestOf = db.prepare('SELECT min(expires_at) AS earliest FROM orders WHERE pet_id = ? AND complete = 0')
  const coolDown = createCooldowns(db)
  return (petId, now, cooldownMs, force = false) => {
    // About 5 µs an order when it deletes nothing (docs/performance.md, "Orders").
    if (!force && !cache.holds.due(petId, now)) return 0
    const gone = (expiredOf.all(petId, now) as unknown as OrderRow[]).map(toOrder).sort((a, b) => a.id - b.id)
    if (gone.length === 0) {
      cache.holds.known(petId, (earliestOf.get(petId) as { earliest: number | null }).earliest ?? Infinity)
      return 0
    }
    // Deleted: unknown again until a sweep deletes nothing (this one may yet be rolled back).
    cache.holds.forget(petId)
    cache.forget(petId)
    returnStock.run(gone.reduce((sum, o) => sum + o.quantity, 0), petId)
    events.append(gone.map((order) => orderEvent('order.expired', order)), now)
    // Rule 11 runs from the lapse itself (rule 10: expiresAt), whenever the sweep comes.
    for (const order of gone) coolDown(order.ownerKeyId, petId, order.expiresAt!, cooldownMs)
    // Last: should the transaction be lost after all, the counts of these lapsed orders are one
    // low, but their owners' earliest lapse stays before now, so the next cap check reloads them.
    for (const order of gone) cache.orders.closed(order.ownerKeyId, petId, order.quantity)
    return gone.length
  }
}

/** Rule 11: starts (or lengthens) an owner's cool-down from a pet, `cooldownMs` from `from`. */
function createCooldowns (db: Db): (owner: number | null, petId: number, from: number, cooldownMs: number) => void {
  const upsert = db.prepare(`INSERT INTO order_cooldowns (owner_key_id, pet_id, until) VALUES (?, ?, ?)
    ON CONFLICT (owner_key_id, pet_id) DO UPDATE SET until = max(until, excluded.until)`)
  return (owner, petId, from, cooldownMs) => {
    if (owner !== null && cooldownMs > 0) upsert.run(owner, petId, from + cooldownMs)
  }
}

/** Most ended cool-downs one periodic sweep forgets. */
const MAX_COOLDOWNS_PRUNED = 1000

export function createSqliteOrderStore (
  db: Db,
  writer: Writer,
  idempotency: SqliteIdempotency,
  cache: PetCache,
  events: SqliteEventLog
): OrderStore {
  const byId = db.prepare(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ?`)
  // No RETURNING: the row is the values given, the id and the defaults (placeOrder), and a
  // RETURNING clause cost 2.2 of an order's 21 µs of SQL (docs/performance.md, "Orders").
  const insert = db.prepare(`INSERT INTO orders (pet_id, owner_key_id, quantity, ship_date, complete, created_at, expires_at, version)
    VALUES (?, ?, ?, ?, 0, ?, ?, 1)`)
  const petsToSweep = db.prepare('SELECT DISTINCT pet_id FROM orders WHERE complete = 0 AND expires_at <= ? LIMIT ?')
  const petState = db.prepare('SELECT status, stock FROM pets WHERE id = ?')
  // Rules 2 and 3 in one conditional UPDATE: it takes the stock only while the pet is available
  // and the stock covers the quantity, so no interleaving (here or on PostgreSQL) can oversell.
  // In SET, `stock` is the value before the update.
  const takeStock = db.prepare(`UPDATE pets SET stock = stock - :quantity,
    status = CASE WHEN stock = :quantity THEN 'pending' ELSE status END, version = version + 1
    WHERE id = :id AND status = 'available' AND stock >= :quantity RETURNING ${INVENTORY_COLUMNS}`)
  const cooldownOf = db.prepare('SELECT until FROM order_cooldowns WHERE owner_key_id = ? AND pet_id = ?')
  const pruneCooldowns = db.prepare('DELETE FROM order_cooldowns WHERE rowid IN (SELECT rowid FROM order_cooldowns WHERE until <= ? LIMIT ?)')
  // A complete order never expires (rule 10).
  const complete = db.prepare(`UPDATE orders SET complete = 1, ship_date = ?, expires_at = NULL, version = version + 1 WHERE id = ? RETURNING ${ORDER_COLUMNS}`)
  const setShipDate = db.prepare(`UPDATE orders SET ship_date = ?, version = version + 1 WHERE id = ? RETURNING ${ORDER_COLUMNS}`)
  // Rule 4: the pet is sold once its stock is 0 and no open order is left.
  const sellIfDone = db.prepare(`UPDATE pets SET status = 'sold', version = version + 1
    WHERE id = :id AND stock = 0 AND status <> 'sold' AND NOT EXISTS (SELECT 1 FROM orders WHERE pet_id = :id AND complete = 0)`)
  const remove = db.prepare('DELETE FROM orders WHERE id = ?')
  const sweepPet = createPetSweep(db, cache, events)
  const coolDown = createCooldowns(db)
  // Rule 5: the quantity goes back; a pending pet has stock again, so it is available.
  const returnStock = db.prepare(`UPDATE pets SET stock = stock + ?,
    status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1 WHERE id = ?`)
  // One prepared statement per filter combination, made on first use (16 at most).
  const listStatements = new Map<string, ReturnType<Db['prepare']>>()

  /**
   * The open order to change at `now`: one that has lapsed is swept (its pet's expired orders
   * deleted, their stock returned) and then does not exist, so the caller answers 404 after the commit.
   */
  function openAt (id: number, owner: OrderOwner, ifMatch: IfMatch, now: number, cooldownMs: number): OrderRow | null {
    const found = byId.get(id) as OrderRow | undefined
    if (found !== undefined && visibleOrder(found, owner) !== undefined && lapsed(found, now)) {
      sweepPet(found.pet_id, now, cooldownMs)
      return null
    }
    return openOrder(found, id, owner, ifMatch)
  }

  /**
   * writer.run for a write that changes the open-order counts: when its transaction is lost after
   * `fn` changed them (the group commit failed, or fn threw after), the owners it touched are
   * forgotten, so their counts are loaded again from the table. fn calls `touch` with each owner
   * as it changes its counts, before the change; a write touching none (a refusal) forgets nothing.
   */
  async function counted<T> (fn: (touch: (owner: number | null) => void) => T): Promise<T> {
    const touched = new Set<number>()
    const touch = (owner: number | null): void => { if (owner !== null) touched.add(owner) }
    try {
      return await writer.run(() => fn(touch))
    } catch (error) {
      if (touched.size > 0) cache.orders.forget(touched)
      // Not a refusal (which undoes its own savepoint only): the transaction may be lost, and
      // with it orders closed by other writes of its batch, which the known holds left out.
      if (!(error instanceof AppError)) cache.holds.clear()
      throw error
    }
  }

  function listStatement (filter: OrderFilter & { live?: boolean }) {
    const shape = `${filter.petId !== undefined ? 'p' : ''}${filter.complete !== undefined ? 'c' : ''}`
      + `${filter.ownerKeyId !== undefined ? 'o' : ''}${filter.live === true ? 'l' : ''}`
    let statement = listStatements.get(shape)
    if (statement === undefined) {
      const where = ['id > :after']
      if (filter.petId !== undefined) where.push('pet_id = :pet')
      if (filter.complete !== undefined) where.push('complete = :complete')
      if (filter.ownerKeyId !== undefined) where.push('owner_key_id = :owner')
      // Rule 10: an expired open order counts as cancelled before the sweep deletes it.
      if (filter.live === true) where.push('(expires_at IS NULL OR expires_at > :now)')
      statement = db.prepare(`SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where.join(' AND ')} ORDER BY id LIMIT :limit`)
      listStatements.set(shape, statement)
    }
    return statement
  }

  return {
    async listOrders (filter, page, now) {
      const params: Record<string, number> = { after: page.afterId ?? 0, limit: page.limit }
      if (now !== undefined) params.now = now
      if (filter.petId !== undefined) params.pet = filter.petId
      if (filter.complete !== undefined) params.complete = filter.complete ? 1 : 0
      if (filter.ownerKeyId !== undefined) params.owner = filter.ownerKeyId
      return (listStatement({ ...filter, live: now !== undefined }).all(params) as unknown as OrderRow[]).map(toOrder)
    },

    async getOrder (id, owner, now) {
      const row = visibleOrder(byId.get(id) as OrderRow | undefined, owner)
      return row === undefined || lapsed(row, now) ? null : toOrder(row)
    },

    async placeOrder (input, claim) {
      const policy = input.policy ?? DEFAULT_ORDER_POLICY
      return await counted((touch) => idempotentCreate<OrderRecord>(claim, () => {
        if (input.limits != null) {
          const refusal = orderLimitRefusal(
            input.limits,
            cache.orders.held(input.ownerKeyId, input.petId, input.now),
            input.petId,
            input.quantity
          )
          if (refusal !== null) throw refusal
        }
        // Rule 10: stock held by the pet's expired orders comes back before this order is judged.
        sweepPet(input.petId, input.now, policy.cooldownMs)
        if (input.checkCooldown === true) {
          // After the sweep: an order of this owner that lapsed just now has started a cool-down.
          const refusal = cooldownRefusal(
            input.petId,
            (cooldownOf.get(input.ownerKeyId, input.petId) as { until: number } | undefined)?.until,
            input.now
          )
          if (refusal !== null) throw refusal
        }
        cache.forget(input.petId)
        const taken = takeStock.get({ id: input.petId, quantity: input.quantity }) as InventoryRow | undefined
        if (taken === undefined) {
          throw orderRefusal(
            input.petId,
            input.quantity,
            petState.get(input.petId) as { status: PetStatus; stock: number } | undefined
          )
        }
        const { petId, ownerKeyId, quantity, shipDate, now, expiresAt } = input
        const { lastInsertRowid } = insert.run(petId, ownerKeyId, quantity, shipDate, now, expiresAt)
        const order: OrderRecord = {
          id: Number(lastInsertRowid), petId, quantity, shipDate, complete: false,
          ownerKeyId, createdAt: now, expiresAt, version: 1
        }
        const item = toInventory(taken)
        events.append([
          orderEvent('order.created', order),
          ...lowStockEvents(item.quantity + input.quantity, item, policy.lowStockThreshold)
        ], input.now)
        touch(order.ownerKeyId)
        cache.orders.opened(order.ownerKeyId, order.petId, order.quantity, input.expiresAt)
        cache.holds.opened(order.petId, input.expiresAt)
        return order
      }, idempotency))
    },

    async updateOrder (id, changes: OrderChanges, ifMatch, now, policy = DEFAULT_ORDER_POLICY) {
      const result = await counted((touch) => {
        const row = openAt(id, null, ifMatch, now, policy.cooldownMs)
        if (row === null) return null
        if (changes.complete === true) {
          // Rule 4 asks whether open orders are left: the pet's lapsed ones are not (rule 10).
          sweepPet(row.pet_id, now, policy.cooldownMs)
          const updated = toOrder(complete.get(changes.shipDate ?? row.ship_date, id) as unknown as OrderRow)
          cache.forget(row.pet_id)
          sellIfDone.run({ id: row.pet_id })
          events.append([orderEvent('order.completed', updated)], now, toOrder(row))
          touch(row.owner_key_id)
          cache.orders.closed(row.owner_key_id, row.pet_id, row.quantity)
          return updated
        }
        const updated = toOrder(setShipDate.get(changes.shipDate ?? row.ship_date, id) as unknown as OrderRow)
        events.append([orderEvent('order.updated', updated)], now, toOrder(row))
        return updated
      })
      if (result === null) throw notFound(`order ${id}`)
      return result
    },

    async cancelOrder (id, owner, ifMatch, now, policy = DEFAULT_ORDER_POLICY) {
      const cancelled = await counted((touch) => {
        const row = openAt(id, owner, ifMatch, now, policy.cooldownMs)
        if (row === null) return false
        remove.run(id)
        // An open order's pet cannot have been deleted (deletePet refuses), so this finds it.
        cache.forget(row.pet_id)
        returnStock.run(row.quantity, row.pet_id)
        events.append([orderEvent('order.cancelled', toOrder(row))], now)
        // Rule 11: a customer cancelling its own order; staff cancelling one starts no cool-down.
        if (owner !== null) coolDown(row.owner_key_id, row.pet_id, now, policy.cooldownMs)
        touch(row.owner_key_id)
        cache.orders.closed(row.owner_key_id, row.pet_id, row.quantity)
        return true
      })
      if (!cancelled) throw notFound(`order ${id}`)
    },

    async sweepExpired (now, maxPets, policy = DEFAULT_ORDER_POLICY) {
      return await writer.run(() => {
        const pets = (petsToSweep.all(now, maxPets) as unknown as Array<{ pet_id: number }>).map((row) => row.pet_id)
        let orders = 0
        for (const petId of pets) orders += sweepPet(petId, now, policy.cooldownMs, true)
        pruneCooldowns.run(now, MAX_COOLDOWNS_PRUNED)
        return { orders, pets: pets.length }
      })
    }
  }
}
