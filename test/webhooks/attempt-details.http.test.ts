// What each delivery attempt sent and what the endpoint answered (issue 50 section 2 item 4), on
// both engines, with real receivers on 127.0.0.1: GET /v1/webhooks/{id}/attempts/{attemptId} shows
// the receiver's status, headers and body exactly, the request's body and headers verify with the
// official standardwebhooks package, a hostile answer is kept as at most 4 KiB of text, the
// secret appears nowhere, and the details go after their retention while the attempt stays listed.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { attemptPruneJob } from '../../src/jobs/attempt-prune.ts'
import { webhookJobs } from '../../src/jobs/webhook-dispatch.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { ATTEMPT_DETAILS_KEPT_MS } from '../../src/webhooks/attempt.ts'
import type { Dispatcher } from '../../src/webhooks/dispatcher.ts'
import type { TestApp } from '../helpers/app.ts'
import { pollUntil } from '../helpers/server.ts'
import { startReceiver } from './receiver.ts'
import { received, subscribe, webhookApp } from './helpers.ts'

interface Header { name: string; value: string }
interface Attempt {
  id: string
  webhookId: string
  eventId: string
  type: string
  attempt: number
  kind: string
  at: string
  outcome: string
  status?: number
  error?: string
  durationMs: number
  request: { url: string; headers: Header[]; body: string } | null
  response: { status: number; headers: Header[]; body: string; truncated: boolean } | null
  keptUntil: string
}

const DAY = 24 * 3_600_000

/** The endpoint's attempts made (not pending), newest first, once there are `count`. */
async function attemptIds (app: TestApp, id: string, count: number): Promise<string[]> {
  return (await pollUntil(async () => {
    const response = await app.call({ method: 'GET', url: `/v1/webhooks/${id}/deliveries?limit=100`, role: 'admin' })
    assert.equal(response.statusCode, 200)
    const made = (response.json() as Array<{ id?: string }>).flatMap((d) => d.id === undefined ? [] : [d.id])
    return made.length >= count ? made : undefined
  }, { timeoutMs: 5000, intervalMs: 20, message: `${count} attempts recorded` })).value
}

async function attemptOf (app: TestApp, webhookId: string, attemptId: string, key?: string): Promise<Attempt> {
  const who = key === undefined ? { role: 'admin' as const } : { key }
  const response = await app.call({ method: 'GET', url: `/v1/webhooks/${webhookId}/attempts/${attemptId}`, ...who })
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

async function createCategory (app: TestApp, name: string): Promise<void> {
  assert.equal((await app.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name } })).statusCode, 201)
}

const headerValue = (headers: Header[], name: string): string | undefined =>
  headers.find((h) => h.name.toLowerCase() === name)?.value

test('an endpoint answering 500 with a body and its own headers: the attempt shows exactly those, and the body we sent verifies with standardwebhooks', async (t) => {
  const app = await webhookApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '1h' } })
  const answer = JSON.stringify({ error: 'database down', traceId: 'abc-123' })
  const receiver = await startReceiver(t, (_req, res) => {
    res.writeHead(500, [['Content-Type', 'application/json'], ['X-Receiver-Trace', 'abc-123'], ['Retry-After', '30']]).end(answer)
  })
  const endpoint = await subscribe(app, receiver, ['category.*'], app.keys.staff)
  await createCategory(app, 'Dogs')
  const [attemptId] = await attemptIds(app, endpoint.id, 1)
  const attempt = await attemptOf(app, endpoint.id, attemptId!, app.keys.staff)

  assert.deepEqual(
    [attempt.id, attempt.webhookId, attempt.attempt, attempt.kind, attempt.outcome, attempt.status, attempt.error],
    [attemptId, endpoint.id, 1, 'first', 'failed', 500, 'HTTP 500']
  )
  assert.ok(attempt.response)
  assert.deepEqual([attempt.response.status, attempt.response.body, attempt.response.truncated], [500, answer, false])
  assert.deepEqual(attempt.response.headers.slice(0, 3), [
    { name: 'Content-Type', value: 'application/json' },
    { name: 'X-Receiver-Trace', value: 'abc-123' },
    { name: 'Retry-After', value: '30' }
  ], 'the receiver\'s own headers, as it sent them, in order')
  assert.equal(headerValue(attempt.response.headers, 'transfer-encoding'), 'chunked', 'and Node\'s own, as received')

  // What we sent is what the receiver got, and it verifies with the official package.
  const [delivery] = await received(receiver, 1)
  assert.ok(attempt.request)
  assert.equal(attempt.request.url, endpoint.url)
  assert.equal(attempt.request.body, delivery!.body)
  assert.deepEqual(attempt.request.headers.map((h) => h.name),
    ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type', 'content-length', 'user-agent'])
  for (const { name, value } of attempt.request.headers) assert.equal(delivery!.headers[name], value, name)
  const asSent = Object.fromEntries(attempt.request.headers.map((h) => [h.name, h.value]))
  const payload = new Webhook(endpoint.secret).verify(attempt.request.body, asSent) as { id: string; type: string }
  assert.deepEqual([payload.id, payload.type], [attempt.eventId, 'category.created'])
  assert.equal(Date.parse(attempt.keptUntil), Date.parse(attempt.at) + ATTEMPT_DETAILS_KEPT_MS)

  // The secret is in no answer about the endpoint's attempts.
  const texts = [
    (await app.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}/attempts/${attemptId!}`, role: 'admin' })).body,
    (await app.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}/deliveries`, role: 'admin' })).body
  ]
  const secretBytes = endpoint.secret.slice('whsec_'.length)
  for (const text of texts) assert.ok(!text.includes(secretBytes) && !text.includes(endpoint.secret))
})

test('a hostile answer (HTML, invalid UTF-8, NUL, 1 MB) is kept as at most 4 KiB of text, marked truncated, never interpreted', async (t) => {
  const app = await webhookApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '1h' } })
  const html = '<script>alert(document.cookie)</script><img src=x onerror=alert(1)>'
  const receiver = await startReceiver(t, (_req, res) => {
    const body = Buffer.concat([Buffer.from(html), Buffer.from([0xff, 0xfe, 0x00, 0xc3]), Buffer.alloc(1024 * 1024, 'A')])
    res.writeHead(502, { 'content-type': 'text/html', 'x-evil': '<b>bold</b>' }).end(body)
  })
  const endpoint = await subscribe(app, receiver, ['category.*'], app.keys.staff)
  await createCategory(app, 'Cats')
  const [attemptId] = await attemptIds(app, endpoint.id, 1)
  const { response, status, durationMs } = await attemptOf(app, endpoint.id, attemptId!)
  assert.ok(response)
  assert.equal(status, 502)
  assert.ok(response.body.startsWith(`${html}\ufffd\ufffd\ufffd\ufffdAAA`), 'the text as it came, invalid bytes and NUL replaced')
  assert.ok(Buffer.byteLength(response.body) <= 4096, `${Buffer.byteLength(response.body)} bytes`)
  assert.ok(response.body.length > 4000, 'the first 4 KiB are kept')
  assert.equal(response.truncated, true)
  assert.equal(headerValue(response.headers, 'x-evil'), '<b>bold</b>')
  assert.ok(durationMs < 5000, `the 1 MB was not read: ${durationMs} ms`)
})

test('a refused connection keeps what was sent and no response; another holder\'s attempt and an unknown one are 404, a malformed id 400', async (t) => {
  const app = await webhookApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '1h' } })
  // Port 9 on 127.0.0.1: nothing listens (discard is not run here).
  const endpoint = await subscribe(app, 'http://127.0.0.1:9/hook', ['category.*'], app.keys.staff)
  await createCategory(app, 'Birds')
  const [attemptId] = await attemptIds(app, endpoint.id, 1)
  const attempt = await attemptOf(app, endpoint.id, attemptId!, app.keys.staff)
  assert.deepEqual([attempt.outcome, attempt.status, attempt.error, attempt.response], ['failed', undefined, 'connection refused', null])
  assert.equal(attempt.request?.url, 'http://127.0.0.1:9/hook')

  const other = await app.makeKey('staff')
  const theirs = await app.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}/attempts/${attemptId!}`, key: other.key })
  assert.deepEqual([theirs.statusCode, theirs.json().code], [404, 'not_found'])
  const otherEndpoint = await subscribe(app, 'http://127.0.0.1:9/other', ['category.*'], app.keys.staff)
  const elsewhere = await app.call({ method: 'GET', url: `/v1/webhooks/${otherEndpoint.id}/attempts/${attemptId!}`, key: app.keys.staff })
  assert.deepEqual([elsewhere.statusCode, elsewhere.json().code], [404, 'not_found'], 'an attempt of another endpoint')
  const unknown = await app.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}/attempts/att_999999999`, key: app.keys.staff })
  assert.equal(unknown.statusCode, 404)
  const malformed = await app.call({ method: 'GET', url: `/v1/webhooks/${endpoint.id}/attempts/12`, key: app.keys.staff })
  assert.deepEqual([malformed.statusCode, malformed.json().code], [400, 'validation_failed'])
})

test('retention: past ATTEMPT_DETAILS_KEPT_DAYS the prune job removes what an attempt sent and got; the attempt stays listed, a younger one keeps its details', async (t) => {
  const clock = manualClock(Date.now())
  const app = await webhookApp(t, { clock })
  const receiver = await startReceiver(t, (_req, res) => { res.writeHead(200, { 'x-kept': 'yes' }).end('thanks') })
  const endpoint = await subscribe(app, receiver, ['category.*'], app.keys.staff)
  await createCategory(app, 'Old')
  const [old] = await attemptIds(app, endpoint.id, 1)
  clock.advance(3 * DAY)
  await createCategory(app, 'Young')
  const [young] = await attemptIds(app, endpoint.id, 2)
  assert.notEqual(young, old)
  assert.equal((await attemptOf(app, endpoint.id, old!)).response?.body, 'thanks')

  const dispatcher: Pick<Dispatcher, 'pruneAttemptDetails'> = {
    pruneAttemptDetails: (before, max) => app.stores.webhooks.pruneAttemptDetails(before, max)
  }
  // The job is one of the webhook jobs the app runs (jobs/jobs.ts lists webhookJobs).
  const jobs = webhookJobs({ dispatcher: dispatcher as Dispatcher, webhookPollMs: 50, clock })
  assert.ok(jobs.some((job) => job.name === 'webhook-attempt-prune'))
  const job = attemptPruneJob({ dispatcher, clock })

  clock.advance(ATTEMPT_DETAILS_KEPT_MS - 3 * DAY - 1000)
  await job.run()
  assert.notEqual((await attemptOf(app, endpoint.id, old!)).request, null, 'not yet past its retention')
  clock.advance(2000)
  await job.run()
  const pruned = await attemptOf(app, endpoint.id, old!)
  assert.deepEqual([pruned.request, pruned.response, pruned.outcome, pruned.status], [null, null, 'succeeded', 200])
  const kept = await attemptOf(app, endpoint.id, young!)
  assert.deepEqual(
    [kept.response?.body, headerValue(kept.response?.headers ?? [], 'x-kept'), kept.request === null],
    ['thanks', 'yes', false]
  )
  assert.deepEqual(await attemptIds(app, endpoint.id, 2), [young, old], 'both attempts are still listed')

  clock.advance(3 * DAY)
  await job.run()
  assert.deepEqual((await attemptOf(app, endpoint.id, young!)).request, null)
  assert.equal(await app.stores.webhooks.pruneAttemptDetails(clock.now(), 1000), 0, 'nothing is left to prune')
})
