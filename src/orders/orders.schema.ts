// The public contract of orders: the Order resource and our bounds (docs/product.md section 5).
// Examples name the records `serve --sample-data` loads: orders 1 and 2 are open orders for
// pets 10 and 11 (Bubbles and Nemo, fish in stock).
import { Type, type Static } from 'typebox'
import { IdParam, Int64, PageQuery } from '../shared/schemas.ts'

const Quantity = Type.Integer({ minimum: 1, maximum: 1000, description: 'Number of units ordered, 1 to 1,000.' })
const ShipDate = (description: string) => Type.String({ format: 'date-time', description })

const orderIdParams = (example: number) => Type.Object({
  orderId: IdParam('The order id.', [example])
}, { additionalProperties: false })
export const OrderIdParams = orderIdParams(1)
/** cancelOrder's example cancels an order no other example uses (order 2). */
export const CancelOrderIdParams = orderIdParams(2)

/**
 * The contract marks no field of Order as required (docs/product.md section 5); our responses
 * always carry id, petId, quantity and complete, and carry shipDate once one is known (omitted,
 * never null, before that).
 */
export const OrderSchema = Type.Object({
  id: Int64({ description: 'Unique order identifier.' }),
  petId: Int64({ description: 'Identifier of the animal in the order.' }),
  quantity: Type.Integer({ description: 'Number of units ordered.' }),
  shipDate: Type.Optional(ShipDate('Expected or actual ship date (ISO 8601, UTC). Absent until one is given or the order completes.')),
  complete: Type.Boolean({ description: 'Whether the order has been fulfilled.' }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When the open order lapses (ISO 8601, UTC): by default 30 minutes after it was placed (ORDER_HOLD_MINUTES). Unless completed by then, it counts as cancelled from that instant and its stock goes back. Null once complete: a complete order never expires.', example: '2026-11-21T12:30:00.000Z' })
}, {
  title: 'Order',
  additionalProperties: false,
  examples: [{ id: 1, petId: 10, quantity: 2, shipDate: '2026-12-01T10:00:00.000Z', complete: false, expiresAt: '2026-11-21T12:30:00.000Z' }],
  description: 'An order for a pet. `id`, `petId`, `quantity`, `complete` and `expiresAt` are always present in responses; `shipDate` is omitted until it is known. An open order holds its stock until `expiresAt`, then lapses as if cancelled (docs/product.md rule 10).'
})
export type Order = Static<typeof OrderSchema>

export const OrdersSchema = Type.Array(OrderSchema, {
  title: 'Orders',
  description: 'An array of Order objects.',
  examples: [[
    { id: 1, petId: 10, quantity: 2, shipDate: '2026-12-01T10:00:00.000Z', complete: false, expiresAt: '2026-11-21T12:30:00.000Z' },
    { id: 2, petId: 11, quantity: 1, complete: false, expiresAt: '2026-11-21T12:30:00.000Z' }
  ]]
})

export const NewOrderSchema = Type.Object({
  petId: Int64({ description: 'Identifier of the animal to order; it must be `available` with enough stock.' }),
  quantity: Quantity,
  shipDate: Type.Optional(ShipDate('Expected ship date (ISO 8601 with a time zone).'))
}, { title: 'NewOrder', additionalProperties: false, description: 'The input shape of an order.', examples: [{ petId: 10, quantity: 1, shipDate: '2026-12-01T10:00:00Z' }] })
export type NewOrder = Static<typeof NewOrderSchema>

export const OrderPatchSchema = Type.Object({
  // Only `true`: completing is one way (a complete order cannot change), so `false` is refused.
  complete: Type.Optional(Type.Unsafe<true>({ type: 'boolean', enum: [true], description: 'Completes the order; its shipDate becomes now unless given.' })),
  shipDate: Type.Optional(ShipDate('The expected ship date, or the actual one when completing (ISO 8601 with a time zone).'))
}, { title: 'OrderPatch', additionalProperties: false, minProperties: 1, description: 'The changes to an open order; at least one field.', examples: [{ shipDate: '2026-12-02T10:00:00Z' }] })
export type OrderPatch = Static<typeof OrderPatchSchema>

export const OrderListQuery = Type.Object({
  petId: Type.Optional(IdParam('Only orders of this pet.', [10])),
  complete: Type.Optional(Type.Boolean({ description: 'Only complete (`true`) or open (`false`) orders.', examples: [false] })),
  ...PageQuery
}, { additionalProperties: false })
export type OrderListQuery = Static<typeof OrderListQuery>
