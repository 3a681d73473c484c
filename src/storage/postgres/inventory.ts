// InventoryStore on PostgreSQL: the stock column of the pet row, its status and its version.
import type { InventoryStore } from '../../inventory/inventory.store.ts'
import { statusForStock } from '../../inventory/inventory.rules.ts'
import { currentRow, stockAsksOpenOrders } from '../checks.ts'
import type { Db } from './database.ts'
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

    async setStock (petId, quantity, ifMatch) {
      return db.transaction(async (tx) => {
        // The pet row lock orders this against orders being placed, completed or cancelled.
        const row = currentRow(await tx.first<InventoryRow>(`SELECT ${INVENTORY_COLUMNS} FROM pets WHERE id = $1 FOR UPDATE`, [petId]), `pet ${petId}`, ifMatch)
        const open = stockAsksOpenOrders(row.status, quantity)
          && await tx.first('SELECT 1 FROM orders WHERE pet_id = $1 AND NOT complete LIMIT 1', [petId]) !== undefined
        const updated = await tx.first<InventoryRow>(
          `UPDATE pets SET stock = $1, status = $2, version = version + 1 WHERE id = $3 RETURNING ${INVENTORY_COLUMNS}`,
          [quantity, statusForStock(row.status, quantity, open), petId])
        return toInventory(updated!)
      })
    }
  }
}
