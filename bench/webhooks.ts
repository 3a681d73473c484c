// The webhooks scenario (issue 31): orders placed while one endpoint is subscribed to order.*, and
// the proof that every order.created reached the receiver by the end of the run. Everything goes
// through the API, as a customer would do it: the endpoint is created and deleted with
// /v1/webhooks, the orders counted by the stock the pet lost (/v1/store/inventory/{petId}).
//
// The server allows the receiver's loopback URL through WEBHOOK_ALLOWED_HOSTS=127.0.0.1, the
// documented knob for local development and tests (docs/configuration.md); nothing else changes.
import { performance } from 'node:perf_hooks'
import type { ChildServer } from './processes.ts'
import type { Row } from './report.ts'

/** The receiver's address as the server's webhook guard must allow it. */
export const RECEIVER_HOST = '127.0.0.1'

async function call (
  base: string,
  headers: Record<string, string>,
  method: string,
  path: string,
  expect: number,
  body?: unknown
): Promise<unknown> {
  const response = await fetch(base + path, {
    method,
    headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (response.status !== expect) throw new Error(`${method} ${path} answered ${response.status}, expected ${expect}: ${text.slice(0, 200)}`)
  return text === '' ? null : JSON.parse(text)
}

export const stockOf = async (base: string, headers: Record<string, string>, petId: number): Promise<number> =>
  (await call(base, headers, 'GET', `/v1/store/inventory/${petId}`, 200) as { quantity: number }).quantity

/**
 * Subscribes an endpoint at `receiver` + `hookPath` to order.*, runs `load` (the probe and the
 * measured rounds), then waits up to `drainSeconds` for as many distinct order.created deliveries
 * as the pet lost stock, and deletes the endpoint. `drainSeconds` is null when the deliveries did
 * not all come in time.
 */
export async function withWebhook<T> (
  api: { base: string; headers: Record<string, string> },
  receiver: ChildServer,
  options: { hookPath: string; petId: number; drainSeconds: number },
  load: () => Promise<T>
): Promise<{ result: T; webhook: NonNullable<Row['webhook']> }> {
  const created = await call(api.base, api.headers, 'POST', '/v1/webhooks', 201, {
    url: `${receiver.base}${options.hookPath}`, types: ['order.*'], description: 'npm run bench: the webhooks scenario'
  }) as { id: string }
  try {
    const before = await stockOf(api.base, api.headers, options.petId)
    const started = performance.now()
    const result = await load()
    const loadSeconds = (performance.now() - started) / 1000
    const orders = before - await stockOf(api.base, api.headers, options.petId)
    const delivered = async (): Promise<{ distinct: number; repeats: number }> =>
      (await receiver.deliveries())[options.hookPath]?.types['order.created'] ?? { distinct: 0, repeats: 0 }
    const atLoadEnd = await delivered()
    const drainStarted = performance.now()
    let now = atLoadEnd
    while (now.distinct < orders && performance.now() - drainStarted < options.drainSeconds * 1000) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      now = await delivered()
    }
    return {
      result,
      webhook: {
        orders,
        delivered: now.distinct,
        repeats: now.repeats,
        deliveredPerSecDuringLoad: atLoadEnd.distinct / loadSeconds,
        drainSeconds: now.distinct >= orders ? (performance.now() - drainStarted) / 1000 : null
      }
    }
  } finally {
    await call(api.base, api.headers, 'DELETE', `/v1/webhooks/${created.id}`, 204)
  }
}
