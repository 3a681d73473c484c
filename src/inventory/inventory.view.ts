// The inventory entry as the API shows it: the record without its version (the ETag carries it).
// The GET routes and the renderer of inventory events both use it.
import type { InventoryItem } from './inventory.schema.ts'
import type { InventoryRecord } from './inventory.store.ts'

export const toPublicInventory = ({ version: _version, ...entry }: InventoryRecord): InventoryItem => entry
