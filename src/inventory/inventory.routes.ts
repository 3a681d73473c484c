// Inventory over HTTP: schema, one service call, status code.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { etagOf, ifMatchOf, setNextLink } from '../routing/conditional.ts'
import { PetIdParams } from '../pets/pets.schema.ts'
import { Reply, ETagHeader, IfMatchHeaders, LinkHeader, NoQuery } from '../shared/schemas.ts'
import { InventoryItemSchema, InventoryItemsSchema, InventoryListQuery, InventoryUpdateSchema } from './inventory.schema.ts'
import type { InventoryService } from './inventory.service.ts'
import { toPublicInventory as toPublic } from './inventory.view.ts'

export interface InventoryRoutesOptions { inventory: InventoryService }

export async function inventoryRoutes (fastify: FastifyInstance, { inventory }: InventoryRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Inventory']

  app.get('/store/inventory', {
    schema: {
      operationId: 'listInventory', tags, summary: 'List inventory entries',
      description: 'One entry per pet, in pet id order, with its stock and its current status. The next page, if any, is in the `Link: <…>; rel="next"` header.',
      querystring: InventoryListQuery,
      response: { 200: Reply('A page of inventory entries.', InventoryItemsSchema, LinkHeader) }
    },
    config: { role: 'customer', scope: 'inventory:read', errors: ['validation_failed'] }
  }, async (request, reply) => {
    const page = await inventory.list(request.query)
    setNextLink(request, reply, page.nextCursor)
    return page.items.map(toPublic)
  })

  app.get('/store/inventory/:petId', {
    schema: {
      operationId: 'getInventory', tags, summary: 'Get the inventory entry of a pet',
      description: 'The stock of the pet and its current status. The entry lives on the pet, so its ETag is the pet\'s: any change of the pet changes it.',
      params: PetIdParams, querystring: NoQuery,
      response: { 200: Reply('The inventory entry.', InventoryItemSchema, ETagHeader) }
    },
    config: { role: 'customer', scope: 'inventory:read', errors: ['validation_failed', 'not_found'] }
  }, async (request, reply) => {
    const entry = await inventory.get(request.params.petId)
    reply.header('etag', etagOf(entry))
    return toPublic(entry)
  })

  app.put('/store/inventory/:petId', {
    schema: {
      operationId: 'setInventory', tags, summary: 'Set the stock of a pet',
      description: 'Sets the stock count. Above 0, a `pending` or `sold` pet becomes `available`; at 0, an `available` pet becomes `pending` if it has open orders, else `sold`. Open orders keep what they took: the new count is what is left to order. Honours `If-Match` (the pet\'s ETag).',
      params: PetIdParams, querystring: NoQuery, headers: IfMatchHeaders, body: InventoryUpdateSchema,
      response: { 200: Reply('The updated inventory entry.', InventoryItemSchema, ETagHeader) }
    },
    config: { role: 'staff', scope: 'inventory:write', errors: ['validation_failed', 'not_found', 'precondition_failed'] }
  }, async (request, reply) => {
    const entry = await inventory.setStock(request.params.petId, request.body.quantity, ifMatchOf(request))
    reply.header('etag', etagOf(entry))
    return toPublic(entry)
  })
}
