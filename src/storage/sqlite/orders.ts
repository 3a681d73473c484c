// OrderStore on SQLite. Placing, completing and cancelling are each one synchronous transaction
// (see database.ts) that changes the order and its pet's row together.
import type { PetStatus } from '../../pets/pets.schema.ts'
import type { OrderChanges, OrderFilter, OrderRecord, OrderStore } from '../../orders/orders.store.ts'
import { openOrder, orderRefusal, visibleOrder } from '../checks.ts'
import type { Db, Writer } from './database.ts'
import type { PetCache } from './pet-cache.ts'
import type { SqliteIdempotency } from './idempotency.ts'
import { ORDER_COLUMNS, toOrder, type OrderRow } from '../rows.ts'

export function createSqliteOrderStore (db: Db, writer: Writer, idempotency: SqliteIdempotency, cache: PetCache): OrderStore {
  const byId = db.prepare(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ?`)
  const insert = db.prepare(`INSERT INTO orders (pet_id, owner_key_id, quantity, ship_date, complete, created_at) VALUES (?, ?, ?, ?, 0, ?) RETURNING ${ORDER_COLUMNS}`)
  const petState = db.prepare('SELECT status, stock FROM pets WHERE id = ?')
  // Rules 2 and 3 in one conditional UPDATE: it takes the stock only while the pet is available
  // and the stock covers the quantity, so no interleaving (here or on PostgreSQL) can oversell.
  // In SET, `stock` is the value before the update.
  const takeStock = db.prepare(`UPDATE pets SET stock = stock - :quantity,
    status = CASE WHEN stock = :quantity THEN 'pending' ELSE status END, version = version + 1
    WHERE id = :id AND status = 'available' AND stock >= :quantity`)
  const complete = db.prepare(`UPDATE orders SET complete = 1, ship_date = ?, version = version + 1 WHERE id = ? RETURNING ${ORDER_COLUMNS}`)
  const setShipDate = db.prepare(`UPDATE orders SET ship_date = ?, version = version + 1 WHERE id = ? RETURNING ${ORDER_COLUMNS}`)
  // Rule 4: the pet is sold once its stock is 0 and no open order is left.
  const sellIfDone = db.prepare(`UPDATE pets SET status = 'sold', version = version + 1
    WHERE id = :id AND stock = 0 AND status <> 'sold' AND NOT EXISTS (SELECT 1 FROM orders WHERE pet_id = :id AND complete = 0)`)
  const remove = db.prepare('DELETE FROM orders WHERE id = ?')
  // Rule 5: the quantity goes back; a pending pet has stock again, so it is available.
  const returnStock = db.prepare(`UPDATE pets SET stock = stock + ?,
    status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1 WHERE id = ?`)
  // One prepared statement per filter combination, made on first use (8 at most).
  const listStatements = new Map<string, ReturnType<Db['prepare']>>()

  function listStatement (filter: OrderFilter) {
    const shape = `${filter.petId !== undefined ? 'p' : ''}${filter.complete !== undefined ? 'c' : ''}${filter.ownerKeyId !== undefined ? 'o' : ''}`
    let statement = listStatements.get(shape)
    if (statement === undefined) {
      const where = ['id > :after']
      if (filter.petId !== undefined) where.push('pet_id = :pet')
      if (filter.complete !== undefined) where.push('complete = :complete')
      if (filter.ownerKeyId !== undefined) where.push('owner_key_id = :owner')
      statement = db.prepare(`SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where.join(' AND ')} ORDER BY id LIMIT :limit`)
      listStatements.set(shape, statement)
    }
    return statement
  }

  return {
    async listOrders (filter, page) {
      const params: Record<string, number> = { after: page.afterId ?? 0, limit: page.limit }
      if (filter.petId !== undefined) params.pet = filter.petId
      if (filter.complete !== undefined) params.complete = filter.complete ? 1 : 0
      if (filter.ownerKeyId !== undefined) params.owner = filter.ownerKeyId
      return (listStatement(filter).all(params) as unknown as OrderRow[]).map(toOrder)
    },

    async getOrder (id, owner) {
      const row = visibleOrder(byId.get(id) as OrderRow | undefined, owner)
      return row === undefined ? null : toOrder(row)
    },

    async placeOrder (input, claim) {
      return await writer.run(() => {
        if (claim !== null) {
          const first = idempotency.replay(claim)
          if (first !== null) return { record: JSON.parse(first) as OrderRecord, replayed: true }
        }
        cache.forget(input.petId)
        if (Number(takeStock.run({ id: input.petId, quantity: input.quantity }).changes) === 0) {
          throw orderRefusal(input.petId, input.quantity, petState.get(input.petId) as { status: PetStatus; stock: number } | undefined)
        }
        const record = toOrder(insert.get(input.petId, input.ownerKeyId, input.quantity, input.shipDate, input.now) as unknown as OrderRow)
        if (claim !== null) idempotency.remember(claim, record)
        return { record, replayed: false }
      })
    },

    async updateOrder (id, changes: OrderChanges, ifMatch) {
      return await writer.run(() => {
        const row = openOrder(byId.get(id) as OrderRow | undefined, id, null, ifMatch)
        if (changes.complete === true) {
          const updated = toOrder(complete.get(changes.shipDate ?? row.ship_date, id) as unknown as OrderRow)
          cache.forget(row.pet_id)
          sellIfDone.run({ id: row.pet_id })
          return updated
        }
        return toOrder(setShipDate.get(changes.shipDate ?? row.ship_date, id) as unknown as OrderRow)
      })
    },

    async cancelOrder (id, owner, ifMatch) {
      await writer.run(() => {
        const row = openOrder(byId.get(id) as OrderRow | undefined, id, owner, ifMatch)
        remove.run(id)
        // An open order's pet cannot have been deleted (deletePet refuses), so this finds it.
        cache.forget(row.pet_id)
        returnStock.run(row.quantity, row.pet_id)
      })
    }
  }
}
