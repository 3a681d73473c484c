// Events to the API's shape. The store keeps each event's data as the record its store knew
// (an OrderRecord, a PetRecord, a KeyState …); it is rendered here, when read, by each feature's
// own view (the one its GET answers with), so an event's data is the resource "as a GET would
// answer" and SQL never formats dates or views. One renderer per type family.
import type { CategoryRecord } from '../categories/categories.store.ts'
import { toPublicCategory } from '../categories/categories.view.ts'
import type { InventoryRecord } from '../inventory/inventory.store.ts'
import { toPublicInventory } from '../inventory/inventory.view.ts'
import type { KeyState } from '../keys/keys.service.ts'
import { toApiKey } from '../keys/keys.view.ts'
import { toPublicOrder } from '../orders/orders.view.ts'
import type { OrderRecord } from '../orders/orders.store.ts'
import type { PetRecord } from '../pets/pets.store.ts'
import { toPublicPet } from '../pets/pets.view.ts'
import type { ApiEvent } from './events.schema.ts'
import type { StoredEvent } from './events.store.ts'

/** `pet.deleted`, `category.deleted`: `{ id }` as stored. */
const isDeletion = (type: string): boolean => type.endsWith('.deleted')

/**
 * Each family's renderer of stored data; a family not listed (key bans, quota, deprecation,
 * webhook) stores its final object.
 */
const RENDERERS: Record<string, (data: unknown, type: string) => unknown> = {
  order: (data) => toPublicOrder(data as OrderRecord),
  pet: (data, type) => isDeletion(type) ? data : toPublicPet(data as PetRecord),
  category: (data, type) => isDeletion(type) ? data : toPublicCategory(data as CategoryRecord),
  inventory: (data) => toPublicInventory(data as InventoryRecord),
  // key.banned and key.unbanned store `{ keyId, until, strike }`; the others a KeyState.
  key: (data, type) => type === 'key.banned' || type === 'key.unbanned' ? data : toApiKey(data as KeyState)
}

export function renderEvent (event: StoredEvent): ApiEvent {
  const family = event.type.slice(0, event.type.indexOf('.'))
  const render = RENDERERS[family]
  return {
    id: event.id,
    type: event.type,
    createdAt: new Date(event.createdAt).toISOString(),
    data: render === undefined ? event.data : render(event.data, event.type)
  }
}
