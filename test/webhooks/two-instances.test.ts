// Two instances on one PostgreSQL database, both dispatching: every delivery is attempted by
// exactly one of them (FOR UPDATE SKIP LOCKED and a lease), and within a second of its commit
// whichever instance queued it.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { systemClock } from '../../src/shared/clock.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { buildTestApp } from '../helpers/app.ts'
import { cleanupStack } from '../helpers/server.ts'
import { requireService, skippedTestEnd } from '../helpers/services.ts'
import { createTestSchema, testPostgresReason, TEST_DATABASE_URL } from '../helpers/stores.ts'
import { received, subscribe } from './helpers.ts'
import { startReceiver } from './receiver.ts'

test('two instances on PostgreSQL attempt each delivery exactly once', { timeout: 120_000 }, async (t) => {
  if (!requireService(t, await testPostgresReason())) throw skippedTestEnd('PostgreSQL')
  // The apps stop, then their stores close, then the schema is dropped.
  const cleanup = cleanupStack(t)
  const schema = await createTestSchema(t)
  const open = async () => {
    const stores = await createPostgresStores(TEST_DATABASE_URL, { poolMax: 4, schema })
    cleanup(() => stores.close())
    return stores
  }
  const env = { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '20' }
  const first = await buildTestApp(t, { stores: await open(), env, deps: { clock: systemClock } })
  const second = await buildTestApp(t, { stores: await open(), env, deps: { clock: systemClock } })
  cleanup(() => first.app.close())
  cleanup(() => second.app.close())
  // Slow answers keep attempts in flight on both instances at once.
  const receiver = await startReceiver(t, (_req, res) => { setTimeout(() => res.writeHead(204).end(), 30) })
  const endpoint = await subscribe(first, receiver, ['webhook.test'], first.keys.admin)

  const count = 40
  const eventIds: string[] = []
  await Promise.all(Array.from({ length: count }, async (_, i) => {
    const app = i % 2 === 0 ? first : second
    const response = await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, key: first.keys.admin })
    eventIds.push(response.json().eventId)
  }))
  await received(receiver, count, 10_000)
  await new Promise((resolve) => setTimeout(resolve, 500))
  const ids = receiver.received.map((r) => r.headers['webhook-id'] as string)
  assert.equal(ids.length, count, 'no delivery attempted twice')
  assert.deepEqual([...new Set(ids)].sort(), eventIds.sort(), 'every event once')
  const attempts = (await first.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}/deliveries?limit=100`, key: first.keys.admin })).json() as Array<{ attempt: number; outcome: string }>
  assert.equal(attempts.length, count)
  assert.ok(attempts.every((a) => a.attempt === 1 && a.outcome === 'succeeded'))
})
