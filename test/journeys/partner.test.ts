// The partner's journey (issue 52 item 2): a partner subscribes its receiver (a real node:http
// server on 127.0.0.1 that verifies each delivery with the official `standardwebhooks` package),
// the receiver fails, the partner fixes it and replays, then waits past two retry slots of the
// server (WEBHOOK_RETRY_SCHEDULE=2s,2s). Effects asserted: what the receiver got (each request
// verified, the event delivered exactly as often as the endpoint's attempts say), nothing left
// pending, and the server's /metrics agreeing with both.
//
// Guards (issue 49 section 2): a successful replay did not settle the retry already scheduled,
// so the event was sent again at its next slot (one event reached a receiver 4 times), the
// delivery stayed pending and webhook_deliveries_pending stayed 1.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { pollUntil } from '../helpers/server.ts'
import { startReceiver } from '../webhooks/receiver.ts'
import { serveJourney } from './serve.ts'

/** The samples of one metric in Prometheus text, by their label text (`outcome="succeeded"`). */
function samples (text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))) {
    out[match[1] ?? ''] = Number(match[2])
  }
  return out
}

test('a partner\'s receiver fails, the partner replays, and past two retry slots the event was delivered exactly as the attempts say, nothing pending, the metrics agree', { timeout: 90_000 }, async (t) => {
  const server = await serveJourney(t, { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '2s,2s' })
  const key = server.keys.customer
  const api = async (path: string, init: RequestInit = {}): Promise<Response> => await fetch(`${server.url}/v1${path}`, {
    ...init,
    headers: { 'x-api-key': key, ...(init.body !== undefined && { 'content-type': 'application/json' }) }
  })

  // The receiver answers 500 until the partner fixes it; a delivery it cannot verify gets 400.
  // Each request is noted by its webhook-id header, the event's id.
  let failing = true
  let verifier: Webhook | null = null
  const verdicts: Array<{ eventId: string; status: number }> = []
  const receiver = await startReceiver(t, (req, res) => {
    const got = receiver.received.at(-1)!
    let status: number
    try {
      verifier!.verify(got.body, got.headers as Record<string, string>)
      status = failing ? 500 : 204
    } catch {
      status = 400
    }
    verdicts.push({ eventId: String(req.headers['webhook-id']), status })
    res.writeHead(status).end()
  })
  const subscribed = await api('/webhooks', {
    method: 'POST',
    body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hooks`, types: ['order.*'] })
  })
  assert.equal(subscribed.status, 201, await subscribed.clone().text())
  const endpoint = await subscribed.json() as { id: string; secret: string }
  verifier = new Webhook(endpoint.secret)

  const pets = await (await api('/pets?limit=100')).json() as Array<{ id: number; name: string }>
  // From just before the order: the sample data's own order events, written when the server
  // started (a moment ago on a fast machine), are not the partner's to replay here.
  const since = new Date().toISOString()
  const petId = pets.find((pet) => pet.name === 'Bubbles')!.id
  const order = await api('/store/orders', { method: 'POST', body: JSON.stringify({ petId, quantity: 1 }) })
  assert.equal(order.status, 201)
  const { value: eventId } = await pollUntil(async () => verdicts[0]?.eventId, {
    timeoutMs: 5000,
    intervalMs: 50,
    message: 'the order\'s event did not reach the receiver'
  })

  // The partner fixes its receiver and replays what it missed, before the first retry is due.
  failing = false
  const replayed = await api(`/webhooks/${endpoint.id}/replay`, { method: 'POST', body: JSON.stringify({ since }) })
  assert.equal(replayed.status, 202, await replayed.clone().text())
  await pollUntil(async () => verdicts.some((v) => v.status === 204) || undefined, {
    timeoutMs: 5000,
    intervalMs: 50,
    message: 'the replay did not reach the receiver'
  })
  // Past both retry slots (2 s, then 2 s more) with a margin for a loaded machine.
  await new Promise((resolve) => setTimeout(resolve, 6000))

  assert.deepEqual(verdicts, [{ eventId, status: 500 }, { eventId, status: 204 }], 'received: the failed attempt, then the replay; never the retry')
  const attempts = await (await api(`/webhooks/${endpoint.id}/deliveries`)).json() as Array<{
    eventId: string
    outcome: string
    status?: number
    kind: string
  }>
  assert.deepEqual(attempts.filter((a) => a.outcome === 'pending'), [], 'nothing pending')
  const made = attempts.filter((a) => a.eventId === eventId).reverse()
  assert.deepEqual(made.map((a) => a.status), verdicts.map((v) => v.status), 'the attempts say what the receiver got')
  assert.equal(made[0]?.kind, 'first')

  const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text()
  assert.deepEqual(samples(metrics, 'webhook_deliveries_pending'), { '': 0 })
  const byOutcome = samples(metrics, 'webhook_attempts_total')
  assert.equal(byOutcome['outcome="succeeded"'], 1, metrics)
  assert.equal(Object.values(byOutcome).reduce((a, b) => a + b, 0), verdicts.length, 'one attempt counted per request received')
})
