// OrderStore on SQLite. Placing, completing and cancelling are each one synchronous transaction
// (see database.ts) that changes the order and its pet's row together.
import type { PetStatus } from '../../pets/pets.schema.ts'
import { DEFAULT_ORDER_HOLD_MS, type OrderChanges, type OrderFilter, type OrderOwner, type OrderRecord, type OrderStore } from '../../orders/orders.store.ts'
import type { IfMatch } from '../../shared/store.ts'
import { notFound } from '../../errors.ts'
import { lapsed, openOrder, orderLimitRefusal, orderRefusal, visibleOrder } from '../checks.ts'
import { idempotentCreate } from '../idempotency.ts'
import type { Db } from './database.ts'
import type { Writer } from './writer.ts'
import type { PetCache } from './pet-cache.ts'
import type { SqliteIdempotency } from './idempotency.ts'
import { ORDER_COLUMNS, toOrder, type OrderRow } from '../rows.ts'

export function createSqliteOrderStore (db: Db, writer: Writer, idempotency: SqliteIdempotency, cache: PetCache): OrderStore {
  const byId = db.prepare(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ?`)
  const insert = db.prepare(`INSERT INTO orders (pet_id, owner_key_id, quantity, ship_date, complete, created_at, expires_at) VALUES (?, ?, ?, ?, 0, ?, ?) RETURNING ${ORDER_COLUMNS}`)
  // Rule 9: the owner's live open orders, and its units of one pet in them.
  const held = db.prepare(`SELECT count(*) AS orders, coalesce(sum(CASE WHEN pet_id = :pet THEN quantity END), 0) AS units
    FROM orders WHERE owner_key_id = :owner AND complete = 0 AND expires_at > :now`)
  // Rule 10: the sweep of one pet deletes its expired open orders; their units go back (rule 5).
  const expiredOf = db.prepare('DELETE FROM orders WHERE pet_id = ? AND complete = 0 AND expires_at <= ? RETURNING quantity')
  const petsToSweep = db.prepare('SELECT DISTINCT pet_id FROM orders WHERE complete = 0 AND expires_at <= ? LIMIT ?')
  const petState = db.prepare('SELECT status, stock FROM pets WHERE id = ?')
  // Rules 2 and 3 in one conditional UPDATE: it takes the stock only while the pet is available
  // and the stock covers the quantity, so no interleaving (here or on PostgreSQL) can oversell.
  // In SET, `stock` is the value before the update.
  const takeStock = db.prepare(`UPDATE pets SET stock = stock - :quantity,
    status = CASE WHEN stock = :quantity THEN 'pending' ELSE status END, version = version + 1
    WHERE id = :id AND status = 'available' AND stock >= :quantity`)
  // A complete order never expires (rule 10).
  const complete = db.prepare(`UPDATE orders SET complete = 1, ship_date = ?, expires_at = NULL, version = version + 1 WHERE id = ? RETURNING ${ORDER_COLUMNS}`)
  const setShipDate = db.prepare(`UPDATE orders SET ship_date = ?, version = version + 1 WHERE id = ? RETURNING ${ORDER_COLUMNS}`)
  // Rule 4: the pet is sold once its stock is 0 and no open order is left.
  const sellIfDone = db.prepare(`UPDATE pets SET status = 'sold', version = version + 1
    WHERE id = :id AND stock = 0 AND status <> 'sold' AND NOT EXISTS (SELECT 1 FROM orders WHERE pet_id = :id AND complete = 0)`)
  const remove = db.prepare('DELETE FROM orders WHERE id = ?')
  // Rule 5: the quantity goes back; a pending pet has stock again, so it is available.
  const returnStock = db.prepare(`UPDATE pets SET stock = stock + ?,
    status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1 WHERE id = ?`)
  // One prepared statement per filter combination, made on first use (16 at most).
  const listStatements = new Map<string, ReturnType<Db['prepare']>>()

  /** Rule 10, inside a writer transaction: deletes the pet's orders expired at `now` and returns their stock. */
  function sweepPet (petId: number, now: number): number {
    const gone = expiredOf.all(petId, now) as unknown as Array<{ quantity: number }>
    if (gone.length > 0) {
      cache.forget(petId)
      returnStock.run(gone.reduce((sum, o) => sum + o.quantity, 0), petId)
    }
    return gone.length
  }

  /**
   * The open order to change at `now`: one that has lapsed is swept (its pet's expired orders
   * deleted, their stock returned) and then does not exist, so the caller answers 404 after the commit.
   */
  function openAt (id: number, owner: OrderOwner, ifMatch: IfMatch, now: number | undefined): OrderRow | null {
    const found = byId.get(id) as OrderRow | undefined
    if (found !== undefined && visibleOrder(found, owner) !== undefined && lapsed(found, now)) {
      sweepPet(found.pet_id, now!)
      return null
    }
    return openOrder(found, id, owner, ifMatch)
  }

  function listStatement (filter: OrderFilter & { live?: boolean }) {
    const shape = `${filter.petId !== undefined ? 'p' : ''}${filter.complete !== undefined ? 'c' : ''}${filter.ownerKeyId !== undefined ? 'o' : ''}${filter.live === true ? 'l' : ''}`
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
      return await writer.run(() => idempotentCreate<OrderRecord>(claim, () => {
        if (input.limits != null) {
          const refusal = orderLimitRefusal(input.limits, held.get({ owner: input.ownerKeyId, pet: input.petId, now: input.now }) as { orders: number; units: number }, input.petId, input.quantity)
          if (refusal !== null) throw refusal
        }
        // Rule 10: stock held by the pet's expired orders comes back before this order is judged.
        sweepPet(input.petId, input.now)
        cache.forget(input.petId)
        if (Number(takeStock.run({ id: input.petId, quantity: input.quantity }).changes) === 0) {
          throw orderRefusal(input.petId, input.quantity, petState.get(input.petId) as { status: PetStatus; stock: number } | undefined)
        }
        const expiresAt = input.expiresAt ?? input.now + DEFAULT_ORDER_HOLD_MS
        return toOrder(insert.get(input.petId, input.ownerKeyId, input.quantity, input.shipDate, input.now, expiresAt) as unknown as OrderRow)
      }, idempotency))
    },

    async updateOrder (id, changes: OrderChanges, ifMatch, now) {
      const result = await writer.run(() => {
        const row = openAt(id, null, ifMatch, now)
        if (row === null) return null
        if (changes.complete === true) {
          // Rule 4 asks whether open orders are left: the pet's lapsed ones are not (rule 10).
          if (now !== undefined) sweepPet(row.pet_id, now)
          const updated = toOrder(complete.get(changes.shipDate ?? row.ship_date, id) as unknown as OrderRow)
          cache.forget(row.pet_id)
          sellIfDone.run({ id: row.pet_id })
          return updated
        }
        return toOrder(setShipDate.get(changes.shipDate ?? row.ship_date, id) as unknown as OrderRow)
      })
      if (result === null) throw notFound(`order ${id}`)
      return result
    },

    async cancelOrder (id, owner, ifMatch, now) {
      const cancelled = await writer.run(() => {
        const row = openAt(id, owner, ifMatch, now)
        if (row === null) return false
        remove.run(id)
        // An open order's pet cannot have been deleted (deletePet refuses), so this finds it.
        cache.forget(row.pet_id)
        returnStock.run(row.quantity, row.pet_id)
        return true
      })
      if (!cancelled) throw notFound(`order ${id}`)
    },

    async sweepExpired (now, maxPets) {
      return await writer.run(() => {
        const pets = (petsToSweep.all(now, maxPets) as unknown as Array<{ pet_id: number }>).map((row) => row.pet_id)
        let orders = 0
        for (const petId of pets) orders += sweepPet(petId, now)
        return { orders, pets: pets.length }
      })
    }
  }
}
