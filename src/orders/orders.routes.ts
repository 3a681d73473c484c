// Orders over HTTP: schema, one service call, status code.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { requireCaller } from '../access/principal.ts'
import { etagOf, idempotencyClaimOf, ifMatchOf, setNextLink } from '../routing/conditional.ts'
import {
  Reply,
  ETagHeader,
  IfMatchHeaders,
  LinkHeader,
  LocationHeader,
  NoContent,
  NoQuery,
  idempotencyKeyHeaders
} from '../shared/schemas.ts'
import {
  CancelOrderIdParams,
  NewOrderSchema,
  OrderIdParams,
  OrderListQuery,
  OrderPatchSchema,
  OrderSchema,
  OrdersSchema
} from './orders.schema.ts'
import type { OrderService } from './orders.service.ts'
import { toPublicOrder } from './orders.view.ts'

export interface OrderRoutesOptions { orders: OrderService }

export async function orderRoutes (fastify: FastifyInstance, { orders }: OrderRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Orders']

  app.get('/store/orders', {
    schema: {
      operationId: 'listOrders', tags, summary: 'List orders',
      description: 'Orders in id order, filtered by `petId` and `complete`. A customer sees only the orders its own API key placed; staff and admin see every order. The next page, if any, is in the `Link: <…>; rel="next"` header. The try-it panel of the reference docs is disabled for this operation.',
      querystring: OrderListQuery,
      response: { 200: Reply('A page of orders.', OrdersSchema, LinkHeader) },
      'x-hideTryItPanel': true
    },
    config: { role: 'customer', scope: 'orders:read', errors: ['validation_failed'] }
  }, async (request, reply) => {
    const page = await orders.list(request.query, requireCaller(request.principal))
    setNextLink(request, reply, page.nextCursor)
    return page.items.map(toPublicOrder)
  })

  app.post('/store/orders', {
    schema: {
      operationId: 'placeOrder', tags, summary: 'Place an order',
      querystring: NoQuery,
      headers: idempotencyKeyHeaders('9a3e7c2d-4b1f-4f8a-8e5d-6c0b2a9f1e73'),
      body: NewOrderSchema,
      response: { 201: Reply('The order, as placed (also on a replay).', OrderSchema, { ...LocationHeader, ...ETagHeader }) }
    },
    config: { role: 'customer', scope: 'orders:write', errors: ['validation_failed', 'pet_not_found', 'pet_not_available', 'insufficient_stock', 'order_limit_reached', 'order_cooldown', 'idempotency_key_reused'] }
  }, async (request, reply) => {
    const { record } = await orders.place(
      request.body,
      requireCaller(request.principal),
      (now) => idempotencyClaimOf(request, now)
    )
    reply.code(201).header('location', `/v1/store/orders/${record.id}`).header('etag', etagOf(record))
    return toPublicOrder(record)
  })

  app.get('/store/orders/:orderId', {
    schema: {
      operationId: 'getOrder', tags, summary: 'Get an order',
      description: 'A customer may read only its own orders: another customer\'s order is `404 not_found`. A cancelled order is `404` too.',
      params: OrderIdParams, querystring: NoQuery,
      response: { 200: Reply('The order.', OrderSchema, ETagHeader) }
    },
    config: { role: 'customer', scope: 'orders:read', errors: ['validation_failed', 'not_found'] }
  }, async (request, reply) => {
    const order = await orders.get(request.params.orderId, requireCaller(request.principal))
    reply.header('etag', etagOf(order))
    return toPublicOrder(order)
  })

  app.patch('/store/orders/:orderId', {
    schema: {
      operationId: 'updateOrder', tags, summary: 'Complete an order or change its ship date',
      params: OrderIdParams, querystring: NoQuery, headers: IfMatchHeaders, body: OrderPatchSchema,
      response: { 200: Reply('The updated order.', OrderSchema, ETagHeader) }
    },
    config: { role: 'staff', scope: 'orders:write', errors: ['validation_failed', 'not_found', 'precondition_failed', 'order_already_complete'] }
  }, async (request, reply) => {
    const order = await orders.update(request.params.orderId, request.body, ifMatchOf(request))
    reply.header('etag', etagOf(order))
    return toPublicOrder(order)
  })

  app.delete('/store/orders/:orderId', {
    schema: {
      operationId: 'cancelOrder', tags, summary: 'Cancel an order',
      params: CancelOrderIdParams, querystring: NoQuery, headers: IfMatchHeaders,
      response: { 204: NoContent('The order is cancelled.') }
    },
    config: { role: 'customer', scope: 'orders:write', errors: ['validation_failed', 'not_found', 'precondition_failed', 'order_already_complete'] }
  }, async (request, reply) => {
    await orders.cancel(request.params.orderId, requireCaller(request.principal), ifMatchOf(request))
    return reply.code(204).send(null)
  })
}
