// InventoryStore on SQLite: the stock column of the pet row, its status and its version.
import type { InventoryStore } from '../../inventory/inventory.store.ts'
import { statusForStock } from '../../inventory/inventory.rules.ts'
import { currentRow, stockAsksOpenOrders } from '../checks.ts'
import type { Db } from './database.ts'
import type { Writer } from './writer.ts'
import type { PetCache } from './pet-cache.ts'
import { INVENTORY_COLUMNS, toInventory, type InventoryRow } from '../rows.ts'

export function createSqliteInventoryStore (db: Db, writer: Writer, cache: PetCache): InventoryStore {
  const byId = db.prepare(`SELECT ${INVENTORY_COLUMNS} FROM pets WHERE id = ?`)
  const list = db.prepare(`SELECT ${INVENTORY_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`)
  const openOrders = db.prepare('SELECT 1 FROM orders WHERE pet_id = ? AND complete = 0 LIMIT 1')
  const update = db.prepare(`UPDATE pets SET stock = ?, status = ?, version = version + 1 WHERE id = ? RETURNING ${INVENTORY_COLUMNS}`)

  return {
    async listInventory (page) {
      return (list.all(page.afterId ?? 0, page.limit) as unknown as InventoryRow[]).map(toInventory)
    },

    async getInventory (petId) {
      const row = byId.get(petId) as InventoryRow | undefined
      return row === undefined ? null : toInventory(row)
    },

    async setStock (petId, quantity, ifMatch) {
      return await writer.run(() => {
        const row = currentRow(byId.get(petId) as InventoryRow | undefined, `pet ${petId}`, ifMatch)
        cache.forget(petId)
        const open = stockAsksOpenOrders(row.status, quantity) && openOrders.get(petId) !== undefined
        return toInventory(update.get(quantity, statusForStock(row.status, quantity, open), petId) as unknown as InventoryRow)
      })
    }
  }
}
