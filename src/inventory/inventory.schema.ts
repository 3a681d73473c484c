// The public contract of inventory: InventoryItem, InventoryUpdate and our bounds (docs/product.md section 5).
import { Type, type Static } from 'typebox'
import { PetStatusSchema } from '../pets/pets.schema.ts'
import { Int64, PageQuery } from '../shared/schemas.ts'

export const InventoryItemSchema = Type.Object({
  petId: Int64({ description: 'Identifier of the animal the entry tracks.' }),
  quantity: Type.Integer({ minimum: 0, description: 'Current stock count.' }),
  status: PetStatusSchema
}, { title: 'InventoryItem', additionalProperties: false, description: 'The stock of a pet, with the pet\'s current status.', examples: [{ petId: 1, quantity: 1, status: 'available' }] })
export type InventoryItem = Static<typeof InventoryItemSchema>

export const InventoryItemsSchema = Type.Array(InventoryItemSchema, {
  title: 'InventoryItems',
  description: 'An array of InventoryItem objects.',
  examples: [[
    { petId: 1, quantity: 1, status: 'available' },
    { petId: 3, quantity: 0, status: 'pending' }
  ]]
})

export const InventoryUpdateSchema = Type.Object({
  quantity: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'The new stock count, 0 to 1,000,000.' })
}, { title: 'InventoryUpdate', additionalProperties: false, description: 'The new stock of a pet.', examples: [{ quantity: 5 }] })

export const InventoryListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type InventoryListQuery = Static<typeof InventoryListQuery>
