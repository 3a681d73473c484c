// OrderStore on PostgreSQL. Placing, completing and cancelling are each one transaction that
// changes the order and its pet's row together.
//
// Locks, always in this order so no two transactions wait on each other in a cycle:
// the order row (SELECT ... FOR UPDATE), then the pet row. Placing an order locks only the pet
// row, through its conditional UPDATE: under READ COMMITTED a concurrent UPDATE of the same row
// waits, then re-checks its WHERE against the committed row, so the stock taken never exceeds
// the stock there was (the database enforces the rule, not this process's memory).
import type { PetStatus } from '../../pets/pets.schema.ts'
import type { OrderFilter, OrderOwner, OrderRecord, OrderStore } from '../../orders/orders.store.ts'
import type { IfMatch } from '../../shared/store.ts'
import { openOrder, orderRefusal, visibleOrder } from '../checks.ts'
import type { Db, Tx } from './database.ts'
import type { PostgresIdempotency } from './idempotency.ts'
import { ORDER_COLUMNS, toOrder, type OrderRow } from '../rows.ts'

/** Locks the open order to change (the checks: openOrder in checks.ts). */
async function lockOpenOrder (tx: Tx, id: number, owner: OrderOwner, ifMatch: IfMatch): Promise<OrderRow> {
  return openOrder(await tx.first<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1 FOR UPDATE`, [id]), id, owner, ifMatch)
}

export function createPostgresOrderStore (db: Db, idempotency: PostgresIdempotency): OrderStore {
  return {
    async listOrders (filter: OrderFilter, page) {
      const params: unknown[] = [page.afterId ?? 0, page.limit]
      const where = ['id > $1']
      if (filter.petId !== undefined) where.push(`pet_id = $${params.push(filter.petId)}`)
      if (filter.complete !== undefined) where.push(`complete = $${params.push(filter.complete)}`)
      if (filter.ownerKeyId !== undefined) where.push(`owner_key_id = $${params.push(filter.ownerKeyId)}`)
      return (await db.query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where.join(' AND ')} ORDER BY id LIMIT $2`, params)).map(toOrder)
    },

    async getOrder (id, owner) {
      const row = visibleOrder(await db.first<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [id]), owner)
      return row === undefined ? null : toOrder(row)
    },

    async placeOrder (input, claim) {
      const result = await db.transaction(async (tx) => {
        if (claim !== null) {
          const first = await idempotency.claim(tx, claim)
          if (first !== null) return { record: JSON.parse(first) as OrderRecord, replayed: true }
        }
        // Rules 2 and 3 in one conditional UPDATE (in SET, `stock` is the value before it).
        const taken = await tx.query(`UPDATE pets SET stock = stock - $2,
          status = CASE WHEN stock = $2 THEN 'pending' ELSE status END, version = version + 1
          WHERE id = $1 AND status = 'available' AND stock >= $2 RETURNING id`, [input.petId, input.quantity])
        if (taken.length === 0) {
          // Why not: read under the row lock, so the reason given is the current one.
          const pet = await tx.first<{ status: PetStatus; stock: number }>('SELECT status, stock FROM pets WHERE id = $1 FOR UPDATE', [input.petId])
          throw orderRefusal(input.petId, input.quantity, pet)
        }
        const row = await tx.first<OrderRow>(
          `INSERT INTO orders (pet_id, owner_key_id, quantity, ship_date, complete, created_at) VALUES ($1, $2, $3, $4, false, $5) RETURNING ${ORDER_COLUMNS}`,
          [input.petId, input.ownerKeyId, input.quantity, input.shipDate, input.now])
        const record = toOrder(row!)
        if (claim !== null) await idempotency.remember(tx, claim, record)
        return { record, replayed: false }
      })
      if (claim !== null && !result.replayed) await idempotency.purge(claim.now)
      return result
    },

    async updateOrder (id, changes, ifMatch) {
      return db.transaction(async (tx) => {
        const row = await lockOpenOrder(tx, id, null, ifMatch)
        if (changes.complete !== true) {
          const updated = await tx.first<OrderRow>(`UPDATE orders SET ship_date = $1, version = version + 1 WHERE id = $2 RETURNING ${ORDER_COLUMNS}`, [changes.shipDate ?? row.ship_date, id])
          return toOrder(updated!)
        }
        // Lock the pet before deciding rule 4: two last orders completing at once then run one
        // after the other, and the second sees the first complete (each statement of a READ
        // COMMITTED transaction reads what was committed before it), so the pet is sold.
        await tx.query('SELECT 1 FROM pets WHERE id = $1 FOR UPDATE', [row.pet_id])
        const updated = await tx.first<OrderRow>(`UPDATE orders SET complete = true, ship_date = $1, version = version + 1 WHERE id = $2 RETURNING ${ORDER_COLUMNS}`, [changes.shipDate ?? row.ship_date, id])
        // Rule 4: the pet is sold once its stock is 0 and no open order is left.
        await tx.query(`UPDATE pets SET status = 'sold', version = version + 1
          WHERE id = $1 AND stock = 0 AND status <> 'sold' AND NOT EXISTS (SELECT 1 FROM orders WHERE pet_id = $1 AND NOT complete)`, [row.pet_id])
        return toOrder(updated!)
      })
    },

    async cancelOrder (id, owner, ifMatch) {
      await db.transaction(async (tx) => {
        const row = await lockOpenOrder(tx, id, owner, ifMatch)
        await tx.query('DELETE FROM orders WHERE id = $1', [id])
        // Rule 5: the quantity goes back; a pending pet has stock again, so it is available.
        // An open order's pet cannot have been deleted (deletePet refuses), so this finds it.
        await tx.query(`UPDATE pets SET stock = stock + $1,
          status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1 WHERE id = $2`, [row.quantity, row.pet_id])
      })
    }
  }
}
