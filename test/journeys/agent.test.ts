// The agent's journey (issue 52 item 2): an AI agent on the official MCP SDK client, under the
// sample customer key of a server process, lists every pet page by page following the cursor
// the list tool returns, places an order, repeats the same call (as an agent that lost the answer
// does), cancels it, and reads its own usage. Effects asserted: every pet seen once, one order
// placed (REST shows it, then shows it gone), the usage the server recorded equal to what the
// limiter charged (and the one free call).
//
// Guards (issue 49 section 1): no result carried a cursor, so an agent never got past page 1;
// a tool call was recorded twice in the usage (the operation and the outer POST /mcp), so usage
// was twice what the limiter charged.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { pollUntil } from '../helpers/server.ts'
import { serveJourney } from './serve.ts'

interface ToolResult { isError?: boolean; structuredContent?: Record<string, unknown> }

test('an agent lists every pet page by page, orders once although it repeats the call, cancels, and its usage is what the limiter charged', { timeout: 90_000 }, async (t) => {
  const server = await serveJourney(t)
  const key = server.keys.customer
  const rest = async (path: string): Promise<Response> =>
    await fetch(`${server.url}/v1${path}`, { headers: { 'x-api-key': server.keys.admin } })

  const agent = new Client({ name: 'journey-agent', version: '1.0.0' })
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { 'X-API-Key': key } }
  }))
  t.after(() => agent.close())
  const call = async (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const result = await agent.callTool({ name, arguments: args }) as ToolResult
    assert.notEqual(result.isError, true, `${name}: ${JSON.stringify(result.structuredContent)}`)
    assert.ok(result.structuredContent !== undefined, `${name} has structured content`)
    return result.structuredContent
  }

  // Every pet, two a page, as docs/api.md's loop does it.
  const seen: number[] = []
  let pages = 0
  let cursor: string | undefined
  do {
    const page = await call('listPets', { limit: 2, ...(cursor !== undefined && { cursor }) })
    seen.push(...(page.data as Array<{ id: number }>).map((pet) => pet.id))
    cursor = page.nextCursor as string | undefined
    pages++
  } while (cursor !== undefined && pages < 50)
  const all = (await (await rest('/pets?limit=100')).json() as Array<{ id: number }>).map((pet) => pet.id)
  assert.ok(all.length > 4, 'the sample catalogue spans several pages')
  assert.deepEqual(seen, all, 'every pet once, in the order of the list')
  assert.equal(pages, Math.ceil(all.length / 2))

  // An order, then the same call again: the session's derived idempotency key makes it one.
  const pets = await (await rest('/pets?status=available&limit=100')).json() as Array<{ id: number; name: string }>
  const petId = pets.find((pet) => pet.name === 'Bubbles')!.id
  const ordersOf = async (): Promise<number[]> =>
    (await (await rest(`/store/orders?petId=${petId}&limit=100`)).json() as Array<{ id: number }>).map((order) => order.id)
  const before = await ordersOf()
  const placed = await call('placeOrder', { body: { petId, quantity: 1 } })
  const again = await call('placeOrder', { body: { petId, quantity: 1 } })
  const orderId = (placed.data as { id: number }).id
  assert.equal((again.data as { id: number }).id, orderId, 'the repeated call answers the same order')
  assert.deepEqual(await ordersOf(), [...before, orderId].sort((a, b) => a - b), 'one order placed')

  const cancelled = await call('cancelOrder', { orderId })
  assert.equal(cancelled.status, 204)
  assert.equal((await rest(`/store/orders/${orderId}`)).status, 404, 'the order is gone')

  // What the limiter charged this key today, and the usage the server writes every 2 s: each
  // message counted once. Usage counts what the windows were charged: the free getRateLimit call
  // is not counted, so allowed is the day window's used.
  // The admin finds the key's id: a call of the agent's own key would be counted as well.
  const customers = await (await rest('/admin/keys?role=customer&limit=100')).json() as Array<{ id: number }>
  assert.equal(customers.length, 1)
  const keyId = customers[0]!.id
  const limits = await call('getRateLimit', {})
  const day = (limits.data as { windows: { day: { limit: number; remaining: number } } }).windows.day
  const charged = day.limit - day.remaining
  const { value: usage } = await pollUntil(async () => {
    const answer = await rest(`/admin/keys/${keyId}/usage?days=1`)
    const days = (await answer.json() as { days: Array<{ allowed: number; mcp: number }> }).days
    return days.length === 1 && days[0]!.allowed >= charged ? days[0] : undefined
  }, { timeoutMs: 6000, intervalMs: 250, message: 'the usage was not written' })
  assert.deepEqual({ allowed: usage.allowed, mcp: usage.mcp }, { allowed: charged, mcp: charged })
})
