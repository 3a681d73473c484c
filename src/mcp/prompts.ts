// The documented workflows as MCP prompts: what an agent should do, step by step, with the tools
// this endpoint lists. The same two workflows as docs/api.md describes for people.
import type { GetPromptResult, Prompt } from '@modelcontextprotocol/sdk/types.js'

export const PROMPTS: Prompt[] = [
  {
    name: 'order-available-pet',
    title: 'Find an available pet and order it',
    description: 'Lists available pets (optionally matching a name), picks one with stock, and places an order for it.',
    arguments: [{ name: 'name', description: 'Part of the pet\'s name to look for (optional).', required: false }, { name: 'quantity', description: 'How many to order (default 1).', required: false }]
  },
  {
    name: 'cancel-order-restock',
    title: 'Cancel an order and see its stock return',
    description: 'Reads an order, cancels it, and reads the pet\'s inventory entry to confirm the stock came back.',
    arguments: [{ name: 'orderId', description: 'The order to cancel.', required: true }]
  }
]

export function promptMessages (name: string, args: Record<string, string>): GetPromptResult {
  const text = name === 'order-available-pet'
    ? [
        `1. Call listPets with status "available"${args.name !== undefined ? ` and name "${args.name}"` : ''} and limit 20.`,
        '2. Pick a pet; call getInventory to check its quantity covers the order.',
        `3. Call placeOrder with body { "petId": <the pet's id>, "quantity": ${args.quantity ?? '1'} }. Do not repeat the call on a timeout: the same call in this session creates one order.`,
        '4. If the result is an error with status 409 insufficient_stock or pet_not_available, pick another pet; with 429, wait retryAfter seconds.'
      ].join('\n')
    : name === 'cancel-order-restock'
      ? [
          `1. Call getOrder with orderId ${args.orderId ?? '<the order>'}; note its petId and quantity.`,
          `2. Call cancelOrder with orderId ${args.orderId ?? '<the order>'}.`,
          '3. Call getInventory with the petId: its quantity is back up by the order\'s quantity.'
        ].join('\n')
      : null
  if (text === null) throw new Error(`no prompt named ${name}`)
  return {
    description: PROMPTS.find((p) => p.name === name)?.description,
    messages: [{ role: 'user', content: { type: 'text', text } }]
  }
}
