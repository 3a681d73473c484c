// Webhooks that settle (issue 49 section 2), on both engines, with real receivers verifying every
// delivery with the official standardwebhooks package: a replay while a retry waits sends the
// event once more, not twice (once a replay left the retry pending: one event reached the
// receiver 4 times, and /metrics showed a delivery pending for ever); attempts have ids and say
// first try, retry or replay; recover re-sends only what failed.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { TestApp } from '../helpers/app.ts'
import { pollUntil } from '../helpers/server.ts'
import { startReceiver } from './receiver.ts'
import { received, subscribe, verified, webhookApp } from './helpers.ts'

interface Entry {
  id?: string
  eventId: string
  type: string
  attempt: number
  kind: string
  outcome: string
  status?: number
}

async function deliveries (app: TestApp, id: string): Promise<Entry[]> {
  const response = await app.call({ method: 'GET', url: `/v1/webhooks/${id}/deliveries?limit=100`, role: 'admin' })
  assert.equal(response.statusCode, 200)
  return response.json()
}

/** The deliveries list once it shows `count` attempts made. */
async function attempts (app: TestApp, id: string, count: number): Promise<Entry[]> {
  return (await pollUntil(async () => {
    const list = await deliveries(app, id)
    return list.filter((d) => d.outcome !== 'pending').length >= count ? list : undefined
  }, { timeoutMs: 5000, intervalMs: 20, message: `${count} attempts recorded` })).value
}

async function metric (app: TestApp, name: string): Promise<number> {
  const text = (await app.app.inject({ method: 'GET', url: '/metrics' })).body
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  return line === undefined ? 0 : Number(line.split(' ')[1])
}

async function createCategory (app: TestApp, name: string): Promise<void> {
  assert.equal((await app.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name } })).statusCode, 201)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

test('a replay while a retry waits sends the event once more: as many deliveries as attempts, nothing pending, the metrics agree', async (t) => {
  const app = await webhookApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '2s' } })
  const answers = [500]
  const receiver = await startReceiver(t, (_req, res) => { res.writeHead(answers.shift() ?? 204).end() })
  const endpoint = await subscribe(app, receiver, ['category.*'], app.keys.staff)
  await createCategory(app, 'Dogs')
  await attempts(app, endpoint.id, 1)

  const replay = await app.call({
    method: 'POST',
    url: `/v1/webhooks/${endpoint.id}/replay`,
    role: 'staff',
    payload: { since: new Date(Date.now() - 60_000).toISOString() }
  })
  assert.deepEqual([replay.statusCode, replay.json()], [202, { queued: 1 }])
  await received(receiver, 2)
  // Past the retry's time: nothing else comes.
  await sleep(2500)

  const list = await deliveries(app, endpoint.id)
  // The waiting retry the replay made due is the replay's attempt (issue 49: it was listed as a retry).
  assert.deepEqual(list.map((d) => [d.attempt, d.kind, d.outcome, d.status]), [[2, 'replay', 'succeeded', 204], [1, 'first', 'failed', 500]])
  assert.ok(list.every((d) => /^att_\d+$/.test(d.id ?? '')), 'every attempt has an id')
  assert.notEqual(list[0]!.id, list[1]!.id)
  // Its own page says so too, and it sent the very body of the first attempt (one body per delivery).
  const detail = async (attemptId: string) => (await app.call({
    method: 'GET', url: `/v1/webhooks/${endpoint.id}/attempts/${attemptId}`, role: 'staff'
  })).json() as { kind: string; request: { body: string } | null }
  const [replayed, firstTry] = [await detail(list[0]!.id!), await detail(list[1]!.id!)]
  assert.equal(replayed.kind, 'replay')
  assert.ok(replayed.request !== null && replayed.request.body === firstTry.request?.body)
  assert.equal(receiver.received.length, list.length, 'the receiver got exactly what the attempts say')
  for (const delivery of receiver.received) {
    const payload = verified(delivery, endpoint.secret)
    assert.deepEqual([payload.type, payload.id], ['category.created', list[0]!.eventId])
  }
  assert.equal(await metric(app, 'webhook_deliveries_pending'), 0)
  assert.equal(await metric(app, 'webhook_oldest_pending_age_seconds'), 0)
  assert.equal(await metric(app, 'webhook_attempts_total{outcome="succeeded"}'), 1)
  assert.equal(await metric(app, 'webhook_attempts_total{outcome="retrying"}'), 1)
  assert.equal(await metric(app, 'webhook_attempts_total{outcome="failed"}'), 0)
})

test('a replay of a delivered event sends it again, as a replay, and settles at once', async (t) => {
  const app = await webhookApp(t)
  const receiver = await startReceiver(t)
  const endpoint = await subscribe(app, receiver, ['category.*'], app.keys.staff)
  await createCategory(app, 'Cats')
  await attempts(app, endpoint.id, 1)
  const since = new Date(Date.now() - 60_000).toISOString()
  const replay = await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/replay`, role: 'staff', payload: { since } })
  assert.deepEqual(replay.json(), { queued: 1 })
  const list = await attempts(app, endpoint.id, 2)
  assert.deepEqual(list.map((d) => [d.attempt, d.kind, d.outcome]), [[1, 'replay', 'succeeded'], [1, 'first', 'succeeded']])
  assert.equal((await received(receiver, 2)).length, 2)
  assert.equal(await metric(app, 'webhook_deliveries_pending'), 0)
})

test('POST /recover re-sends only the events whose delivery failed for good, once, and is audited as a recovery', async (t) => {
  const app = await webhookApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '100ms' } })
  let down = true
  // Down for Lost: its two attempts fail; Kept goes through.
  const receiver = await startReceiver(t, (req, res) => {
    res.writeHead(down && receiver.received.at(-1)!.body.includes('"Lost"') ? 503 : 204).end()
  })
  const endpoint = await subscribe(app, receiver, ['category.*'], app.keys.staff)
  const since = new Date(Date.now() - 1000).toISOString()
  await createCategory(app, 'Lost')
  await createCategory(app, 'Kept')
  await attempts(app, endpoint.id, 3)
  assert.deepEqual(
    (await deliveries(app, endpoint.id)).filter((d) => d.outcome !== 'pending').map((d) => d.outcome).sort(),
    ['failed', 'failed', 'succeeded']
  )

  down = false
  const recover = async () => await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/recover`, role: 'staff', payload: { since } })
  const first = await recover()
  assert.deepEqual([first.statusCode, first.json()], [202, { queued: 1 }])
  await received(receiver, 4)
  const last = verified(receiver.received[3]!, endpoint.secret)
  assert.equal((last.data as { name: string }).name, 'Lost')
  const list = await attempts(app, endpoint.id, 4)
  assert.deepEqual(list[0]!.kind, 'replay')
  assert.deepEqual((await recover()).json(), { queued: 0 }, 'nothing failed any more')
  await sleep(300)
  assert.equal(receiver.received.length, 4)

  const audit = (await app.call({ method: 'GET', url: '/v1/admin/audit', role: 'admin' })).json() as Array<{
    action: string
    target: { id: string }
    changes: { queued?: { after: number } }
  }>
  const entries = audit.filter((e) => e.target.id === endpoint.id && e.action.startsWith('webhook.re'))
  assert.deepEqual(entries.map((e) => [e.action, e.changes.queued?.after]), [['webhook.recover', 0], ['webhook.recover', 1]],
    'each recovery is in the audit log as one, newest first')
})

test('POST /test with a type sends that type\'s documented example, signed, to that endpoint alone; the feed shows only webhook.test', async (t) => {
  const { exampleOf } = await import('../../src/events/catalogue.ts')
  const app = await webhookApp(t)
  const receiver = await startReceiver(t)
  const bystander = await startReceiver(t)
  const admins = await startReceiver(t)
  const endpoint = await subscribe(app, receiver, ['webhook.test'], app.keys.customer)
  await subscribe(app, bystander, ['order.*'], app.keys.customer)
  await subscribe(app, admins, ['order.*'], app.keys.admin)

  const queued = await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role: 'customer', payload: { type: 'order.created' } })
  assert.equal(queued.statusCode, 202)
  const { eventId } = queued.json()
  const [delivery] = await received(receiver, 1)
  const payload = verified(delivery!, endpoint.secret)
  assert.deepEqual([payload.id, payload.type], [eventId, 'order.created'])
  assert.deepEqual(payload.data, exampleOf('order.created'))
  const [entry] = await attempts(app, endpoint.id, 1)
  assert.deepEqual([entry!.type, entry!.kind, entry!.outcome], ['order.created', 'first', 'succeeded'])

  await sleep(300)
  assert.deepEqual([bystander.received.length, admins.received.length], [0, 0], 'no other endpoint gets the test')
  const feed = (await app.call({ method: 'GET', url: '/v1/events', role: 'admin' })).json() as Array<{ id: string; type: string }>
  assert.deepEqual(feed.filter((e) => e.type === 'order.created'), [], 'no fake order.created in the feed')
  assert.equal(feed.find((e) => e.id === eventId)?.type, 'webhook.test')

  // Without a body: webhook.test, as before.
  const plain = await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role: 'customer' })
  assert.equal(plain.statusCode, 202)
  const [, second] = await received(receiver, 2)
  assert.equal(verified(second!, endpoint.secret).type, 'webhook.test')
})

test('POST /test refuses a type the endpoint\'s owner may never receive (403) and an unknown one (400)', async (t) => {
  const app = await webhookApp(t)
  const endpoint = await subscribe(app, 'http://127.0.0.1:9/hook', ['order.*'], app.keys.customer)
  const send = async (type: string, role: 'customer' | 'admin' = 'customer') =>
    await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role, payload: { type } })
  const hidden = await send('pet.created')
  assert.deepEqual([hidden.statusCode, hidden.json().code], [403, 'forbidden'])
  // An admin asking does not widen what the customer's endpoint may receive.
  assert.deepEqual((await send('pet.created', 'admin')).json().code, 'forbidden')
  const unknown = await send('order.shipped')
  assert.deepEqual([unknown.statusCode, unknown.json().code, unknown.json().details[0].path], [400, 'validation_failed', '/type'])
  assert.equal((await send('order.cancelled')).statusCode, 202)
})
