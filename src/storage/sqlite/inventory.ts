// InventoryStore on SQLite: the stock column of the pet row, its status and its version. Setting
// the stock appends its events in the same transaction (inside the writer's callback).
import type { InventoryStore } from '../../inventory/inventory.store.ts'
import { statusForStock } from '../../inventory/inventory.rules.ts'
import { DEFAULT_ORDER_POLICY } from '../../orders/orders.store.ts'
import { currentRow, stockAsksOpenOrders } from '../checks.ts'
import { stockSetEvents } from '../order-events.ts'
import type { Db } from './database.ts'
import type { SqliteEventLog } from './events.ts'
import { createPetSweep } from './orders.ts'
import type { Writer } from './writer.ts'
import type { PetCache } from './pet-cache.ts'
import { INVENTORY_COLUMNS, toInventory, type InventoryRow } from '../rows.ts'

export function createSqliteInventoryStore (
  db: Db,
  writer: Writer,
  cache: PetCache,
  events: SqliteEventLog
): InventoryStore {
  const byId = db.prepare(`SELECT ${INVENTORY_COLUMNS} FROM pets WHERE id = ?`)
  const list = db.prepare(`SELECT ${INVENTORY_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`)
  const openOrders = db.prepare('SELECT 1 FROM orders WHERE pet_id = ? AND complete = 0 LIMIT 1')
  const update = db.prepare(`UPDATE pets SET stock = ?, status = ?, version = version + 1 WHERE id = ? RETURNING ${INVENTORY_COLUMNS}`)
  const sweepPet = createPetSweep(db, cache, events)

  return {
    async listInventory (page) {
      return (list.all(page.afterId ?? 0, page.limit) as unknown as InventoryRow[]).map(toInventory)
    },

    async getInventory (petId) {
      const row = byId.get(petId) as InventoryRow | undefined
      return row === undefined ? null : toInventory(row)
    },

    async setStock (petId, quantity, ifMatch, now, policy = DEFAULT_ORDER_POLICY) {
      return await writer.run(() => {
        const checked = currentRow(byId.get(petId) as InventoryRow | undefined, `pet ${petId}`, ifMatch)
        // Rule 6 asks whether open orders are left: the pet's lapsed ones are not (rule 10). Swept
        // after the If-Match check, which the sweep's version bump would otherwise fail.
        const row = sweepPet(petId, now, policy.cooldownMs) > 0 ? byId.get(petId) as unknown as InventoryRow : checked
        cache.forget(petId)
        const open = stockAsksOpenOrders(row.status, quantity) && openOrders.get(petId) !== undefined
        const item = toInventory(
          update.get(quantity, statusForStock(row.status, quantity, open), petId) as unknown as InventoryRow
        )
        events.append(stockSetEvents(row.stock, item, policy.lowStockThreshold), now, toInventory(row))
        return item
      })
    }
  }
}
