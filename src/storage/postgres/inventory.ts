// InventoryStore on PostgreSQL: the stock column of the pet row, its status and its version.
// Setting the stock appends its events in the same transaction.
import type { InventoryStore } from '../../inventory/inventory.store.ts'
import { statusForStock } from '../../inventory/inventory.rules.ts'
import { DEFAULT_ORDER_POLICY } from '../../orders/orders.store.ts'
import { currentRow, stockAsksOpenOrders } from '../checks.ts'
import { stockSetEvents } from '../order-events.ts'
import type { Db } from './database.ts'
import { appendEvents } from './events.ts'
import { INVENTORY_COLUMNS, toInventory, type InventoryRow } from '../rows.ts'

export function createPostgresInventoryStore (db: Db): InventoryStore {
  return {
    async listInventory (page) {
      return (await db.query<InventoryRow>(`SELECT ${INVENTORY_COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`, [page.afterId ?? 0, page.limit])).map(toInventory)
    },

    async getInventory (petId) {
      const row = await db.first<InventoryRow>(`SELECT ${INVENTORY_COLUMNS} FROM pets WHERE id = $1`, [petId])
      return row === undefined ? null : toInventory(row)
    },

    async setStock (petId, quantity, ifMatch, now, policy = DEFAULT_ORDER_POLICY) {
      return db.transaction(async (tx) => {
        // The pet row lock orders this against orders being placed, completed or cancelled.
        const checked = currentRow(await tx.first<InventoryRow>(`SELECT ${INVENTORY_COLUMNS} FROM pets WHERE id = $1 FOR UPDATE`, [petId]), `pet ${petId}`, ifMatch)
        // Rule 6 asks whether open orders are left: the pet's lapsed ones are not (rule 10). Swept
        // after the If-Match check, which the sweep's version bump would otherwise fail; a lapsed
        // order the sweep skips (a cancel holds it) is not open either.
        const swept = (await tx.first<{ n: number }>('SELECT sweep_expired_orders($1, $2, $3) AS n', [petId, now, policy.cooldownMs]))?.n ?? 0
        const row = swept > 0 ? (await tx.first<InventoryRow>(`SELECT ${INVENTORY_COLUMNS} FROM pets WHERE id = $1`, [petId]))! : checked
        const open = stockAsksOpenOrders(row.status, quantity)
          && await tx.first('SELECT 1 FROM orders WHERE pet_id = $1 AND NOT complete AND expires_at > $2 LIMIT 1', [petId, now]) !== undefined
        const item = toInventory((await tx.first<InventoryRow>(
          `UPDATE pets SET stock = $1, status = $2, version = version + 1 WHERE id = $3 RETURNING ${INVENTORY_COLUMNS}`,
          [quantity, statusForStock(row.status, quantity, open), petId]))!)
        await appendEvents(tx, stockSetEvents(row.stock, item, policy.lowStockThreshold), now, toInventory(row))
        return item
      })
    }
  }
}
