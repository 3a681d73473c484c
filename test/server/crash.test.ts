// Crash safety: a server process killed with SIGKILL in the middle of a burst of orders loses
// none it acknowledged, and the stock still equals the initial stock minus every order on record
// (an order is written with its stock change in one transaction, or not at all). SQLite always;
// PostgreSQL when it is reachable.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { tempDir } from '../helpers/temp.ts'
import { call, cleanupStack, createKey, requireServices, schemaDatabaseUrl, startServerProcess } from '../scale/helpers.ts'

const STOCK = 100_000
const ROUNDS = 1
const CLIENTS = 16

async function crashAndRecover (
  t: TestContext,
  cleanup: ReturnType<typeof cleanupStack>,
  env: Record<string, string>
): Promise<void> {
  const quotas = { perMinute: 1_000_000, perDay: 1_000_000 }
  const staff = await createKey(env, 'staff', 'enterprise', quotas)
  const customer = await createKey(env, 'customer', 'enterprise', quotas)
  let server = await startServerProcess(cleanup, env)
  const category = await call(server.url, '/v1/categories', { method: 'POST', key: staff.key, body: { name: 'Dogs' } })
  const petId = (await call(server.url, '/v1/pets', {
    method: 'POST',
    key: staff.key,
    body: { name: 'Rex', categoryId: category.body.id }
  })).body.id as number
  assert.equal((await call(server.url, `/v1/store/inventory/${petId}`, { method: 'PUT', key: staff.key, body: { quantity: STOCK } })).status, 200)

  const acknowledged = new Map<number, number>() // order id -> quantity
  let failed = 0
  for (let round = 1; round <= ROUNDS; round++) {
    const url = server.url
    let killed = false
    let sent = 0
    const client = async (): Promise<void> => {
      while (!killed) {
        const quantity = 1 + (sent++ % 3)
        try {
          const answer = await call(url, '/v1/store/orders', { method: 'POST', key: customer.key, body: { petId, quantity } })
          assert.equal(answer.status, 201, JSON.stringify(answer.body))
          acknowledged.set(answer.body.id as number, quantity)
        } catch (error) {
          if (!killed) throw error
          failed++ // in flight when the process died: never acknowledged
        }
      }
    }
    const target = acknowledged.size + 100
    const clients = Array.from({ length: CLIENTS }, () => client())
    while (acknowledged.size < target) await new Promise((resolve) => setImmediate(resolve))
    const exited = once(server.child, 'exit')
    server.child.kill('SIGKILL')
    killed = true
    await exited
    await Promise.all(clients)
    server = await startServerProcess(cleanup, env)
  }

  // Every order on record, page by page.
  const recorded = new Map<number, number>()
  let next: string | null = '/v1/store/orders?limit=100'
  while (next !== null) {
    const page = await call(server.url, next, { key: staff.key })
    assert.equal(page.status, 200)
    for (const order of page.body) recorded.set(order.id as number, order.quantity as number)
    next = /<[^>]*?(\/v1\/[^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1] ?? null
  }
  const missing = [...acknowledged].filter(([id, quantity]) => recorded.get(id) !== quantity)
  assert.deepEqual(missing, [], 'every acknowledged order is on record with its quantity')
  const taken = [...recorded.values()].reduce((sum, quantity) => sum + quantity, 0)
  const stock = await call(server.url, `/v1/store/inventory/${petId}`, { key: staff.key })
  assert.deepEqual(stock.body, { petId, quantity: STOCK - taken, status: 'available' })
  t.diagnostic(`${ROUNDS} SIGKILL(s): ${acknowledged.size} orders acknowledged, all on record; ${recorded.size - acknowledged.size} more committed unacknowledged, ${failed} requests cut; stock ${STOCK} - ${taken} = ${STOCK - taken}`)
}

test('SIGKILL during a burst of orders on SQLite: after a restart every acknowledged order is there and the stock adds up', { timeout: 60_000 }, async (t) => {
  const cleanup = cleanupStack(t)
  const dir = tempDir(t, 'petstore-crash-')
  await crashAndRecover(t, cleanup, { DATABASE_URL: `sqlite:${join(dir, 'p.db')}` })
})

test('SIGKILL during a burst of orders on PostgreSQL: after a restart every acknowledged order is there and the stock adds up', { timeout: 60_000 }, async (t) => {
  if (!await requireServices(t, ['postgres'])) return
  // First: its cleanups (the servers) run before the schema is dropped.
  const cleanup = cleanupStack(t)
  const schema = await schemaDatabaseUrl(t)
  await crashAndRecover(t, cleanup, { DATABASE_URL: schema.url() })
})
