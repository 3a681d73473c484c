// What the dispatcher logs (issue 49 section 2: an endpoint answering 500 once wrote nothing at
// any level): a warn line per failed attempt, at most one a minute per endpoint (the next says how
// many were left out), and an info line when an endpoint is disabled, whatever the reason.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { EventDraft } from '../../src/events/events.store.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { createDispatcher, DISABLE_AFTER_MS, type WebhookSettings } from '../../src/webhooks/dispatcher.ts'
import { isLoopback, T0 } from '../helpers/app.ts'
import { pollUntil } from '../helpers/server.ts'
import { startReceiver } from './receiver.ts'

interface Line { level: 'warn' | 'info'; fields: Record<string, unknown>; message: string }

test('a warn line per failed attempt, one a minute per endpoint at most, and an info line per endpoint disabled', async (t) => {
  const clock = manualClock(T0)
  const stores = createSqliteStores(':memory:')
  t.after(() => stores.close())
  const receiver = await startReceiver(t, (_req, res) => { res.writeHead(500).end() })
  const keys = createKeyAdmin(stores.keys, clock)
  const failing = await keys.create({ role: 'admin', plan: 'pro' })
  const expiresAt = new Date(T0 + DISABLE_AFTER_MS + 3_600_000).toISOString()
  const expiring = await keys.create({ role: 'admin', plan: 'pro', expiresAt })
  const endpoint = async (id: string, ownerKeyId: number) => {
    await stores.webhooks.createWebhook({
      id, ownerKeyId, url: `http://127.0.0.1:${receiver.port}/${id}`, types: ['webhook.test'], description: null, secret: 'whsec_logs', now: T0
    }, 10)
    return id
  }
  const down = await endpoint('wh_000000000000000000000001', failing.record.id)
  const orphan = await endpoint('wh_000000000000000000000002', expiring.record.id)
  const queue = async (id: string, owner: number, n: number) => {
    const draft: EventDraft = { type: 'webhook.test', audience: 'webhook', subjectKeyId: owner, data: { webhookId: id } }
    for (let i = 0; i < n; i++) await stores.webhooks.queueTest(id, draft, clock.now())
  }

  const lines: Line[] = []
  const settings: WebhookSettings = {
    timeoutMs: 2000,
    retryScheduleMs: [3_600_000],
    allowedHosts: ['127.0.0.1'],
    maxInFlight: 64,
    maxInFlightPerEndpoint: 4,
    pollMs: 250
  }
  const dispatcher = createDispatcher({
    store: stores.webhooks,
    clock,
    settings,
    mayConnect: isLoopback,
    log: {
      warn: (fields, message) => { lines.push({ level: 'warn', fields: fields as Record<string, unknown>, message }) },
      info: (fields, message) => { lines.push({ level: 'info', fields: fields as Record<string, unknown>, message }) }
    }
  })
  t.after(() => dispatcher.drain())
  const round = async (attempts: number) => {
    await dispatcher.tick()
    const done = async () => receiver.received.length >= attempts && dispatcher.inFlight() === 0 ? true : undefined
    await pollUntil(done, { timeoutMs: 3000, message: `${attempts} attempts made and recorded` })
  }
  const warned = () => lines.filter((l) => l.level === 'warn')

  await queue(down, failing.record.id, 3)
  await round(3)
  assert.equal(warned().length, 1, 'three failures in a minute: one line')
  const { fields } = warned()[0]!
  assert.deepEqual([fields.webhookId, fields.status, fields.attempt, fields.suppressed], [down, 500, 1, 0])
  assert.match(warned()[0]!.message, /webhook attempt failed/)

  clock.advance(60_000)
  await queue(down, failing.record.id, 1)
  await round(4)
  assert.equal(warned().length, 2)
  assert.equal(warned()[1]!.fields.suppressed, 2, 'the line says how many failures were not logged')

  // Five days of failures (the retries, due by now, fail too): disabled, said once at info.
  clock.advance(DISABLE_AFTER_MS)
  await dispatcher.tick()
  const said = async () => lines.some((l) => l.level === 'info') && dispatcher.inFlight() === 0 ? true : undefined
  await pollUntil(said, { timeoutMs: 3000, message: 'the endpoint disabled' })
  const disabled = lines.filter((l) => l.level === 'info')
  assert.deepEqual(disabled.map((l) => [l.fields.webhookId, l.fields.reason]), [[down, 'failing']])
  assert.match(disabled[0]!.message, /disabled/)

  // The other endpoint's owner expires: disabled at the next round, said at info too.
  clock.advance(2 * 3_600_000)
  await dispatcher.tick()
  assert.deepEqual(lines.filter((l) => l.level === 'info').map((l) => [l.fields.webhookId, l.fields.reason]), [
    [down, 'failing'],
    [orphan, 'owner_inactive']
  ])
})
