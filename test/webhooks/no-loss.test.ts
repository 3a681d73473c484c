// THE NO-LOSS TEST (issue 31): SIGKILL the server while 16 writers place orders, with an endpoint
// subscribed to order.*; after a restart every acknowledged order has exactly one order.created
// in GET /v1/events, and the receiver has had every one of those events at least once. SQLite
// and PostgreSQL. Needs order.created (written with the order) and GET /v1/events.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { tempDir } from '../helpers/temp.ts'
import { pollUntil } from '../helpers/server.ts'
import { call, cleanupStack, createKey, requireServices, schemaDatabaseUrl, startServerProcess } from '../scale/helpers.ts'
import { startReceiver } from './receiver.ts'

const WRITERS = 16
const ORDERS_BEFORE_KILL = 150

async function killMidBurst (
  t: TestContext,
  cleanup: ReturnType<typeof cleanupStack>,
  database: Record<string, string>
): Promise<void> {
  // A short attempt deadline: a lease the killed process held expires 5 s after it.
  const env = { ...database, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,2s,5s' }
  const quotas = { perMinute: 1_000_000, perDay: 1_000_000 }
  const staff = await createKey(env, 'staff', 'enterprise', quotas)
  const customer = await createKey(env, 'customer', 'enterprise', quotas)
  const delivered = new Map<number, Set<string>>() // order id -> webhook-ids received
  const receiver = await startReceiver(t)
  let server = await startServerProcess(cleanup, env)

  const category = await call(server.url, '/v1/categories', { method: 'POST', key: staff.key, body: { name: 'Dogs' } })
  const petId = (await call(server.url, '/v1/pets', {
    method: 'POST',
    key: staff.key,
    body: { name: 'Rex', categoryId: category.body.id }
  })).body.id as number
  assert.equal((await call(server.url, `/v1/store/inventory/${petId}`, { method: 'PUT', key: staff.key, body: { quantity: 100_000 } })).status, 200)
  const hook = await call(server.url, '/v1/webhooks', { method: 'POST', key: customer.key, body: { url: `http://127.0.0.1:${receiver.port}/orders`, types: ['order.*'] } })
  assert.equal(hook.status, 201, JSON.stringify(hook.body))

  const acknowledged = new Set<number>()
  let killed = false
  const writer = async (): Promise<void> => {
    while (!killed) {
      try {
        const answer = await call(server.url, '/v1/store/orders', { method: 'POST', key: customer.key, body: { petId, quantity: 1 } })
        assert.equal(answer.status, 201, JSON.stringify(answer.body))
        acknowledged.add(answer.body.id as number)
      } catch (error) {
        if (!killed) throw error
      }
    }
  }
  const writers = Array.from({ length: WRITERS }, () => writer())
  while (acknowledged.size < ORDERS_BEFORE_KILL) await new Promise((resolve) => setImmediate(resolve))
  const exited = once(server.child, 'exit')
  server.child.kill('SIGKILL')
  killed = true
  await exited
  await Promise.all(writers)
  server = await startServerProcess(cleanup, env)

  // The feed: every order.created, page by page, following the cursor to an empty page.
  const created = new Map<number, number>()
  let next = '/v1/events?type=order.created&limit=100'
  for (;;) {
    const page = await call(server.url, next, { key: staff.key })
    assert.equal(page.status, 200, JSON.stringify(page.body))
    for (const event of page.body as unknown as Array<{ data: { id: number } }>) {
      created.set(event.data.id, (created.get(event.data.id) ?? 0) + 1)
    }
    if ((page.body as unknown[]).length === 0) break
    const link = /<[^>]*?(\/v1\/[^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1]
    assert.ok(link !== undefined, 'every page of the feed has a next link')
    next = link
  }
  const notExactlyOnce = [...acknowledged].filter((id) => created.get(id) !== 1)
  assert.deepEqual(notExactlyOnce, [], 'every acknowledged order has exactly one order.created')

  // The receiver: every one of them at least once (the restarted server delivers what was left).
  const record = (): void => {
    for (const { body, headers } of receiver.received) {
      const payload = JSON.parse(body) as { type: string; data: { id: number } }
      if (payload.type !== 'order.created') continue
      let ids = delivered.get(payload.data.id)
      if (ids === undefined) delivered.set(payload.data.id, ids = new Set())
      ids.add(headers['webhook-id'] as string)
    }
  }
  await pollUntil(async () => {
    record()
    return [...acknowledged].every((id) => delivered.has(id)) ? true : undefined
  }, {
    timeoutMs: 30_000,
    intervalMs: 200,
    message: `the receiver has ${[...acknowledged].filter((id) => delivered.has(id)).length} of ${acknowledged.size} acknowledged orders`
  })
  assert.ok([...delivered.values()].every((ids) => ids.size === 1), 'one event id per order, however many attempts')
  t.diagnostic(`${acknowledged.size} orders acknowledged before SIGKILL, each with one order.created, all delivered; ${receiver.received.length} deliveries received`)
}

test('no loss on SQLite: SIGKILL mid-burst, then every acknowledged order has one order.created, delivered at least once', { timeout: 120_000 }, async (t) => {
  const cleanup = cleanupStack(t)
  const dir = tempDir(t, 'petstore-no-loss-')
  await killMidBurst(t, cleanup, { DATABASE_URL: `sqlite:${join(dir, 'p.db')}` })
})

test('no loss on PostgreSQL: SIGKILL mid-burst, then every acknowledged order has one order.created, delivered at least once', { timeout: 120_000 }, async (t) => {
  if (!await requireServices(t, ['postgres'])) return
  const cleanup = cleanupStack(t)
  const schema = await schemaDatabaseUrl(t)
  await killMidBurst(t, cleanup, { DATABASE_URL: schema.url() })
})
