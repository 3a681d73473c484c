// petstore trigger, in process through main() against the real app listening on a port: through
// the server to the key's endpoints subscribed to the type (POST /v1/webhooks/{id}/test { type }),
// or straight to a local receiver with --forward-to, signed as `petstore listen` signs. Each
// delivery is checked with the official standardwebhooks package (verified() of test/webhooks).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { main } from '../../src/cli/main.ts'
import { systemClock } from '../../src/shared/clock.ts'
import { newSecret } from '../../src/webhooks/signature.ts'
import { listenTestApp } from '../helpers/app.ts'
import { memoryIo } from '../helpers/io.ts'
import { startReceiver } from '../webhooks/receiver.ts'
import { received, verified } from '../webhooks/helpers.ts'

/** The app on a port, delivering webhooks to 127.0.0.1 at once, on the system clock (the package checks timestamps). */
async function server (t: TestContext): Promise<Awaited<ReturnType<typeof listenTestApp>>> {
  return await listenTestApp(t, { env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50' }, deps: { clock: systemClock } })
}

async function exampleOf (baseUrl: string, key: string, type: string): Promise<unknown> {
  const types = await (await fetch(`${baseUrl}/event_types`, { headers: { 'x-api-key': key } })).json() as Array<{ type: string; example: unknown }>
  return types.find((row) => row.type === type)?.example
}

test('trigger TYPE --forward-to posts the documented example to the local receiver, signed with the secret given, under a new event id each time', async (t) => {
  // Catches: a body or signature the official package refuses, an example that is not the
  // catalogue's, one id for every trigger (a receiver deduplicating on webhook-id drops the second).
  const app = await server(t)
  const receiver = await startReceiver(t)
  const secret = newSecret()
  const args = ['trigger', 'order.created', '--forward-to', `http://127.0.0.1:${receiver.port}/hooks`, '--secret', secret, '--base-url', app.baseUrl]
  const io = memoryIo({ PETSTORE_API_KEY: app.keys.customer })
  assert.equal(await main(args, io), 0, io.errors.join('\n'))
  assert.equal(await main(args, io), 0, io.errors.join('\n'))

  const [first, second] = receiver.received
  const payloads = [first!, second!].map((request) => verified(request, secret))
  const example = await exampleOf(app.baseUrl, app.keys.customer, 'order.created')
  assert.ok(example !== undefined)
  for (const [i, payload] of payloads.entries()) {
    assert.deepEqual(Object.keys(payload), ['id', 'type', 'timestamp', 'data'], 'a delivery\'s fields, in its order')
    assert.deepEqual({ type: payload.type, data: payload.data }, { type: 'order.created', data: example })
    assert.match(payload.id, /^evt_[0-9a-f]{32}$/)
    assert.equal(receiver.received[i]!.headers['webhook-id'], payload.id)
    assert.match(io.lines[i]!, new RegExp(`^\\S+Z  order\\.created +${payload.id}  -> 204 \\(\\d+ ms\\)$`))
  }
  assert.notEqual(payloads[0]!.id, payloads[1]!.id)
})

test('trigger --forward-to refuses a type the key may not receive, and says so when the receiver does not answer 2xx', async (t) => {
  const app = await server(t)
  const receiver = await startReceiver(t, (_req, res) => { res.writeHead(500).end() })
  const local = ['--forward-to', `http://127.0.0.1:${receiver.port}/hooks`, '--secret', newSecret(), '--base-url', app.baseUrl]
  const hidden = memoryIo({ PETSTORE_API_KEY: app.keys.customer })
  assert.equal(await main(['trigger', 'pet.created', ...local], hidden), 2)
  assert.match(hidden.errors.join('\n'), /^pet\.created is not a type your key may receive \(GET \/v1\/event_types lists them\)$/)
  const failing = memoryIo({ PETSTORE_API_KEY: app.keys.customer })
  assert.equal(await main(['trigger', 'order.created', ...local], failing), 1)
  assert.match(failing.lines[0]!, / -> 500 \(\d+ ms\)$/)
  assert.equal(receiver.received.length, 1)
})

test('trigger TYPE has the server send the example to the key\'s enabled endpoints subscribed to the type, and to no other; the feed gets no fake event of the type', async (t) => {
  // Catches: a test sent to an endpoint not subscribed to the type (or another holder's), a test
  // delivery that is not the example, a fake order.created in the feed.
  const app = await server(t)
  const orders = await startReceiver(t)
  const categories = await startReceiver(t)
  const subscribe = async (port: number, types: string[]): Promise<{ id: string; secret: string }> => {
    const response = await fetch(`${app.baseUrl}/webhooks`, {
      method: 'POST',
      headers: { 'x-api-key': app.keys.staff, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook`, types })
    })
    assert.equal(response.status, 201)
    return await response.json() as { id: string; secret: string }
  }
  const orderHook = await subscribe(orders.port, ['order.*'])
  await subscribe(categories.port, ['category.*'])

  const io = memoryIo({ PETSTORE_API_KEY: app.keys.staff })
  assert.equal(await main(['trigger', 'order.completed', '--base-url', app.baseUrl], io), 0, io.errors.join('\n'))
  assert.equal(io.lines.length, 1)
  const eventId = /queued as (evt_[0-9a-f]{32})/.exec(io.lines[0]!)?.[1]
  assert.ok(eventId !== undefined, io.lines[0])
  assert.match(io.lines[0]!, new RegExp(`^order\\.completed -> ${orderHook.id} \\(http://127\\.0\\.0\\.1:${orders.port}/hook\\): queued as`))

  const [delivery] = await received(orders, 1)
  const payload = verified(delivery!, orderHook.secret)
  assert.deepEqual(payload.type, 'order.completed')
  assert.deepEqual(payload.data, await exampleOf(app.baseUrl, app.keys.staff, 'order.completed'))
  assert.equal(payload.id, eventId)
  await new Promise((resolve) => setTimeout(resolve, 300))
  assert.equal(categories.received.length, 0, 'the endpoint not subscribed to order.* got nothing')

  const feed = await (await fetch(`${app.baseUrl}/events?limit=100`, { headers: { 'x-api-key': app.keys.admin } })).json() as Array<{ type: string }>
  assert.deepEqual(feed.filter((event) => event.type.startsWith('order.')), [], 'no fake order event in the feed, not even an admin\'s')
})

test('trigger without an endpoint for the type says how to reach a local receiver (exit 1); an admin key must name its endpoint (exit 2)', async (t) => {
  const app = await server(t)
  const none = memoryIo({ PETSTORE_API_KEY: app.keys.customer })
  assert.equal(await main(['trigger', 'order.created', '--base-url', app.baseUrl], none), 1)
  assert.match(none.errors.join('\n'), /^No enabled endpoint of your key is subscribed to order\.created\. .*petstore trigger order\.created --forward-to URL --secret SECRET$/)
  const admin = memoryIo({ PETSTORE_API_KEY: app.keys.admin })
  assert.equal(await main(['trigger', 'order.created', '--base-url', app.baseUrl], admin), 2)
  assert.match(admin.errors.join('\n'), /--webhook ID/)
  for (const args of [[], ['order.created', '--forward-to', 'http://127.0.0.1:1/x'], ['a.b', 'c.d']]) {
    const io = memoryIo({ PETSTORE_API_KEY: app.keys.customer })
    assert.equal(await main(['trigger', ...args], io), 2, args.join(' '))
  }
})
