// Deliveries on both engines, to real receivers on 127.0.0.1, checked with the standardwebhooks
// package: the test event, the fan-out of the feed by type and visibility, secret rotation,
// replay, the deliveries list, retries, redirects, SSRF at attempt time, a dead endpoint beside a
// live one, and disabling after 5 days of failures.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { manualClock } from '../../src/shared/clock.ts'
import { pollUntil } from '../helpers/server.ts'
import { closedPort, startReceiver } from './receiver.ts'
import { received, subscribe, verified, webhookApp } from './helpers.ts'
import type { TestApp } from '../helpers/app.ts'

async function deliveries (app: TestApp, id: string, key?: string): Promise<Array<{
  eventId: string
  type: string
  attempt: number
  outcome: string
  status?: number
  error?: string
  durationMs?: number
}>> {
  const response = await app.call({ method: 'GET', url: `/v1/webhooks/${id}/deliveries`, ...(key === undefined ? {} : { key }) })
  assert.equal(response.statusCode, 200)
  return response.json()
}

async function settled (app: TestApp, id: string, count: number, timeoutMs = 5000): ReturnType<typeof deliveries> {
  return (await pollUntil(async () => {
    const list = await deliveries(app, id)
    return list.filter((d) => d.outcome !== 'pending').length >= count ? list : undefined
  }, { timeoutMs, intervalMs: 20, message: `${count} attempts recorded` })).value
}

test('POST /test delivers a signed webhook.test to that endpoint alone within a second, and the attempt is listed', async (t) => {
  const app = await webhookApp(t)
  const receiver = await startReceiver(t)
  const bystander = await startReceiver(t)
  const endpoint = await subscribe(app, receiver, ['webhook.*'], app.keys.customer)
  await subscribe(app, bystander, ['webhook.*'], app.keys.customer)

  const started = Date.now()
  const queued = await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role: 'customer' })
  assert.equal(queued.statusCode, 202)
  const { eventId } = queued.json()
  const [delivery] = await received(receiver, 1, 1000)
  assert.ok(Date.now() - started < 1000, 'first attempt within 1 s')

  const payload = verified(delivery!, endpoint.secret)
  assert.equal(payload.type, 'webhook.test')
  assert.equal(delivery!.headers['webhook-id'], eventId)
  assert.equal(delivery!.headers['content-type'], 'application/json')
  assert.equal(delivery!.method, 'POST')
  assert.ok(Math.abs(Number(delivery!.headers['webhook-timestamp']) - Date.now() / 1000) < 5, 'the timestamp is the attempt\'s')
  assert.deepEqual(Object.keys(payload).sort(), ['data', 'id', 'timestamp', 'type'])
  assert.equal(payload.id, eventId, 'the body carries the event id, the webhook-id header\'s')

  const [entry] = await settled(app, endpoint.id, 1)
  assert.deepEqual({
    eventId: entry!.eventId, type: entry!.type, attempt: entry!.attempt, outcome: entry!.outcome, status: entry!.status
  }, { eventId, type: 'webhook.test', attempt: 1, outcome: 'succeeded', status: 204 })
  assert.equal(typeof entry!.durationMs, 'number')
  await new Promise((resolve) => setTimeout(resolve, 300))
  assert.equal(bystander.received.length, 0, 'another endpoint of the same holder gets no test event')
  assert.equal(receiver.received.length, 1, 'delivered once')
})

test('the feed fans out to each enabled endpoint whose types match and whose owner may see the event', async (t) => {
  const app = await webhookApp(t)
  const other = await app.makeKey('customer')
  const [mine, theirs, admins, narrow] = [
    await startReceiver(t),
    await startReceiver(t),
    await startReceiver(t),
    await startReceiver(t)
  ]
  const mineEndpoint = await subscribe(app, mine, ['webhook.*'], app.keys.customer)
  await subscribe(app, theirs, ['webhook.disabled'], other.key)
  const adminEndpoint = await subscribe(app, admins, ['webhook.disabled'], app.keys.admin)
  await subscribe(app, narrow, ['order.*'], app.keys.customer)

  // Disabling an endpoint writes webhook.disabled for its owner (and admins).
  const target = await subscribe(app, 'http://127.0.0.1:9/gone', ['order.*'], app.keys.customer)
  assert.equal((await app.call({ method: 'PATCH', url: `/v1/webhooks/${target.id}`, role: 'customer', payload: { status: 'disabled' } })).statusCode, 200)

  const [toMe] = await received(mine, 1)
  const [toAdmin] = await received(admins, 1)
  assert.equal(verified(toMe!, mineEndpoint.secret).type, 'webhook.disabled')
  assert.equal((verified(toAdmin!, adminEndpoint.secret).data as { id: string }).id, target.id)
  assert.equal(toMe!.headers['webhook-id'], toAdmin!.headers['webhook-id'], 'one event, one id in every delivery')
  await new Promise((resolve) => setTimeout(resolve, 300))
  assert.equal(theirs.received.length, 0, 'another customer never gets my events')
  assert.equal(narrow.received.length, 0, 'types filter')
  assert.equal(mine.received.length, 1)

  // Replay: the same event again, with the same webhook-id.
  const replay = await app.call({
    method: 'POST',
    url: `/v1/webhooks/${mineEndpoint.id}/replay`,
    role: 'customer',
    payload: { since: new Date(Date.now() - 60_000).toISOString() }
  })
  assert.equal(replay.statusCode, 202)
  assert.deepEqual(replay.json(), { queued: 1 })
  const [, again] = await received(mine, 2)
  assert.equal(again!.headers['webhook-id'], toMe!.headers['webhook-id'])
  // The replay's attempt is recorded a moment after the receiver has it; until then its delivery is
  // in flight, and a replay of its event rightly skips it (this raced on PostgreSQL).
  await pollUntil(async () => {
    const list = (await app.call({ method: 'GET', url: `/v1/webhooks/${mineEndpoint.id}/deliveries`, role: 'customer' })).json() as Array<{ outcome: string }>
    return list.length > 0 && list.every((d) => d.outcome !== 'pending') && list.length >= 2 ? true : undefined
  }, { timeoutMs: 5000, intervalMs: 20, message: 'the replay\'s attempt recorded' })
  const byId = await app.call({
    method: 'POST',
    url: `/v1/webhooks/${mineEndpoint.id}/replay`,
    role: 'customer',
    payload: { eventIds: [toMe!.headers['webhook-id'], `evt_${'0'.repeat(32)}`] }
  })
  assert.deepEqual(byId.json(), { queued: 1 }, 'an unknown id queues nothing')
  const theirsEndpoint = (await app.call({ method: 'GET', url: '/v1/webhooks', key: other.key })).json()[0]
  const foreign = await app.call({
    method: 'POST',
    url: `/v1/webhooks/${theirsEndpoint.id}/replay`,
    key: other.key,
    payload: { eventIds: [toMe!.headers['webhook-id']] }
  })
  assert.deepEqual(foreign.json(), { queued: 0 }, 'a replay never queues an event the owner may not see')
})

test('after rotate_secret both secrets verify for 24 hours, then only the new one signs', async (t) => {
  const clock = manualClock(Date.now())
  const app = await webhookApp(t, { clock })
  const receiver = await startReceiver(t)
  const endpoint = await subscribe(app, receiver, ['webhook.test'], app.keys.customer)
  const rotated = await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/rotate_secret`, role: 'customer' })
  assert.equal(rotated.statusCode, 200)
  const secret = rotated.json().secret as string
  assert.notEqual(secret, endpoint.secret)

  await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role: 'customer' })
  const [during] = await received(receiver, 1)
  assert.equal(verified(during!, endpoint.secret).type, 'webhook.test', 'the old secret verifies')
  assert.equal(verified(during!, secret).type, 'webhook.test', 'the new secret verifies')

  clock.advance(24 * 3_600_000 + 1000)
  await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role: 'customer' })
  const [, after] = await received(receiver, 2)
  const signatures = (after!.headers['webhook-signature'] as string).split(' ')
  const id = after!.headers['webhook-id'] as string
  const at = new Date(Number(after!.headers['webhook-timestamp']) * 1000)
  assert.deepEqual(signatures, [new Webhook(secret).sign(id, at, after!.body)], 'one signature, by the new secret')
})

test('a failed attempt is retried on the schedule until it succeeds; after the last one the delivery is failed', async (t) => {
  const app = await webhookApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '100ms,100ms' } })
  let answers = [500, 503, 200]
  const flaky = await startReceiver(t, (_req, res) => { res.writeHead(answers.shift() ?? 500).end() })
  const endpoint = await subscribe(app, flaky, ['webhook.test'], app.keys.customer)
  await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role: 'customer' })
  const list = await settled(app, endpoint.id, 3)
  assert.deepEqual(list.map((d) => [d.attempt, d.outcome, d.status]), [[3, 'succeeded', 200], [2, 'failed', 503], [1, 'failed', 500]])
  const ids = new Set((await received(flaky, 3)).map((r) => r.headers['webhook-id']))
  assert.equal(ids.size, 1, 'the same webhook-id on every retry')

  answers = []
  const down = await subscribe(app, `http://127.0.0.1:${await closedPort()}/`, ['webhook.test'], app.keys.customer)
  await app.call({ method: 'POST', url: `/v1/webhooks/${down.id}/test`, role: 'customer' })
  const failed = await settled(app, down.id, 3)
  assert.deepEqual(failed.map((d) => [d.attempt, d.outcome, d.error]), [[3, 'failed', 'connection refused'], [2, 'failed', 'connection refused'], [1, 'failed', 'connection refused']])
  await new Promise((resolve) => setTimeout(resolve, 400))
  assert.equal((await deliveries(app, down.id)).length, 3, 'no attempt after the last of the schedule')
})

test('a redirect is a failure and is never followed', async (t) => {
  const app = await webhookApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '24h' } })
  const inside = await startReceiver(t)
  const bouncer = await startReceiver(t, (_req, res) => { res.writeHead(307, { location: `http://127.0.0.1:${inside.port}/admin` }).end() })
  const endpoint = await subscribe(app, bouncer, ['webhook.test'], app.keys.customer)
  await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role: 'customer' })
  const [attempt] = (await settled(app, endpoint.id, 1)).filter((d) => d.outcome !== 'pending')
  assert.deepEqual([attempt!.outcome, attempt!.status, attempt!.error], ['failed', 307, 'redirect not followed'])
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.equal(inside.received.length, 0)
})

test('the URL is checked again at every attempt: a name that now resolves to a forbidden address is refused and nothing connects', async (t) => {
  let answer = '93.184.215.14'
  const app = await webhookApp(t, {
    resolve: async () => [{ address: answer, family: 4 }],
    env: { WEBHOOK_RETRY_SCHEDULE: '24h' }
  })
  const local = await startReceiver(t)
  const endpoint = await subscribe(app, `https://hooks.example:${local.port}/`, ['webhook.test'], app.keys.customer)
  for (const address of ['127.0.0.1', '169.254.169.254']) {
    answer = address
    await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role: 'customer' })
  }
  const attempts = (await settled(app, endpoint.id, 2)).filter((d) => d.outcome !== 'pending')
  assert.deepEqual(attempts.map((d) => [d.outcome, d.error]), [['failed', 'the webhook URL host must resolve only to public addresses'], ['failed', 'the webhook URL host must resolve only to public addresses']])
  assert.equal(local.received.length, 0, 'nothing reached the loopback receiver')
})

test('a dead endpoint holding its attempts does not delay another endpoint\'s deliveries', async (t) => {
  const app = await webhookApp(t, { env: { WEBHOOK_TIMEOUT_MS: '4000', WEBHOOK_RETRY_SCHEDULE: '24h' } })
  const dead = await startReceiver(t, () => { /* never answers */ })
  const live = await startReceiver(t)
  const deadEndpoint = await subscribe(app, dead, ['webhook.test'], app.keys.customer)
  const liveEndpoint = await subscribe(app, live, ['webhook.test'], app.keys.customer)
  for (let i = 0; i < 6; i++) await app.call({ method: 'POST', url: `/v1/webhooks/${deadEndpoint.id}/test`, role: 'customer' })
  await received(dead, 4, 2000)
  const started = Date.now()
  await app.call({ method: 'POST', url: `/v1/webhooks/${liveEndpoint.id}/test`, role: 'customer' })
  await received(live, 1, 1000)
  assert.ok(Date.now() - started < 1000)
  assert.equal(dead.received.length, 4, 'at most 4 attempts in flight to one endpoint')
})

test('an endpoint whose every attempt failed for 5 days is disabled, with a webhook.disabled event for its owner and admins', async (t) => {
  const clock = manualClock(Date.now())
  const app = await webhookApp(t, { clock, env: { WEBHOOK_RETRY_SCHEDULE: '1h' } })
  const admins = await startReceiver(t)
  await subscribe(app, admins, ['webhook.disabled'], app.keys.admin)
  const down = await subscribe(app, `http://127.0.0.1:${await closedPort()}/`, ['webhook.test'], app.keys.customer)
  await app.call({ method: 'POST', url: `/v1/webhooks/${down.id}/test`, role: 'customer' })
  await settled(app, down.id, 1)
  clock.advance(5 * 24 * 3_600_000 - 60_000)
  await app.call({ method: 'POST', url: `/v1/webhooks/${down.id}/test`, role: 'customer' })
  await settled(app, down.id, 3)
  assert.equal((await app.call({ method: 'GET', url: `/v1/webhooks/${down.id}`, role: 'customer' })).json().status, 'enabled', 'not yet 5 days')
  clock.advance(60_000)
  await app.call({ method: 'POST', url: `/v1/webhooks/${down.id}/test`, role: 'customer' })
  await pollUntil(
    async () => (await app.call({ method: 'GET', url: `/v1/webhooks/${down.id}`, role: 'customer' })).json().status === 'disabled'
      ? true
      : undefined,
    { timeoutMs: 3000, message: 'disabled' }
  )
  // The admin's receiver checks timestamps against the wall clock; this test's clock is 5 days on.
  const [notice] = await received(admins, 1)
  const body = JSON.parse(notice!.body)
  assert.equal(body.type, 'webhook.disabled')
  assert.deepEqual([body.data.id, body.data.status, body.data.reason], [down.id, 'disabled', 'failing'])
})

test('/metrics counts attempts by outcome and shows the deliveries waiting', async (t) => {
  const app = await webhookApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '24h' } })
  const receiver = await startReceiver(t)
  const endpoint = await subscribe(app, receiver, ['webhook.test'], app.keys.customer)
  const down = await subscribe(app, `http://127.0.0.1:${await closedPort()}/`, ['webhook.test'], app.keys.customer)
  await app.call({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, role: 'customer' })
  await app.call({ method: 'POST', url: `/v1/webhooks/${down.id}/test`, role: 'customer' })
  await settled(app, down.id, 1)
  await settled(app, endpoint.id, 1)
  const text = (await app.app.inject({ method: 'GET', url: '/metrics' })).body
  assert.match(text, /^webhook_attempts_total\{outcome="succeeded"\} 1$/m)
  assert.match(text, /^webhook_attempts_total\{outcome="retrying"\} 1$/m)
  assert.match(text, /^webhook_deliveries_pending 1$/m, 'the retry waits')
  assert.match(text, /^webhook_oldest_pending_age_seconds \d/m)
})
