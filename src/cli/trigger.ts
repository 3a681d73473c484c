// petstore trigger TYPE [--webhook ID] [--base-url URL]
// petstore trigger TYPE --forward-to URL --secret SECRET [--base-url URL]
// A test event of any type, with its documented example as data (GET /v1/event_types), to see a
// receiver handle it before the shop makes a real one.
//
// To the key's endpoints, the server sends it: POST /v1/webhooks/{id}/test { type } for each
// enabled endpoint subscribed to the type (or the one --webhook names), signed and delivered as
// any delivery. The feed never shows a fake event of that type (docs/product.md 13.6): only a
// `webhook.test` that the key's own feed holds. So `petstore listen`, which reads the feed, cannot
// carry such a test to a laptop; there, --forward-to posts the example straight to the local
// receiver, signed as listen signs (the same body and headers, with the secret listen printed),
// without asking the server to send anything.
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { PetstoreError } from '../../clients/typescript/src/index.ts'
import type { Io } from './io.ts'
import { apiOf, describeFailure, eventLine, forward, isHttpUrl, isSecret, usage, type Api } from './listen.ts'
import { printable } from './printable.ts'

export const TRIGGER_USAGE = `usage:
  petstore trigger TYPE [--webhook ID] [--base-url URL]
      the server sends a test event of TYPE, with its documented example, to your key's endpoints
      subscribed to it (or to endpoint ID)
  petstore trigger TYPE --forward-to URL --secret SECRET [--base-url URL]
      posts the example to your local receiver, signed with the secret petstore listen printed
The key is PETSTORE_API_KEY; GET /v1/event_types lists the types it may receive.`

export async function trigger (args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args, strict: true, allowPositionals: true,
    options: {
      webhook: { type: 'string' },
      'forward-to': { type: 'string' },
      secret: { type: 'string' },
      'base-url': { type: 'string' }
    }
  })
  const [type, ...extra] = positionals
  if (type === undefined || extra.length > 0) return usage(io, TRIGGER_USAGE)
  const local = values['forward-to']
  if ((local === undefined) !== (values.secret === undefined)) return usage(io, '--forward-to and --secret go together')
  if (local !== undefined && values.webhook !== undefined) return usage(io, '--webhook names an endpoint the server sends to; --forward-to sends nothing through the server')
  if (local !== undefined && !isHttpUrl(local)) return usage(io, '--forward-to takes the http(s) URL of your local receiver')
  if (values.secret !== undefined && !isSecret(values.secret)) return usage(io, '--secret is an endpoint secret: whsec_ followed by base64')
  const api = apiOf(values['base-url'], io)
  if (typeof api === 'string') return usage(io, api)
  try {
    return local === undefined
      ? await sendThroughServer(api, type, values.webhook, io)
      : await sendLocally(api, type, local, values.secret!, io)
  } catch (error) {
    if (!(error instanceof PetstoreError)) throw error
    io.err(`trigger: ${describeFailure(error)}`)
    return error.code === 'validation_failed' ? 2 : 1
  }
}

async function sendThroughServer (api: Api, type: string, webhookId: string | undefined, io: Io): Promise<number> {
  const { client } = api
  let endpoints: Array<{ id: string; url: string }>
  if (webhookId !== undefined) {
    endpoints = [await client.webhooks.get(webhookId)]
  } else {
    // An admin's list holds every key holder's endpoints: a test is not to be sent to a customer.
    if ((await client.keys.me.get()).role === 'admin') {
      return usage(io, 'an admin key sees every key holder\'s endpoints: name yours with --webhook ID')
    }
    const own = await client.webhooks.list({ limit: 100 })
    endpoints = own.filter((endpoint) => endpoint.status === 'enabled'
      && endpoint.types.some((pattern) => matches(pattern, type)))
  }
  if (endpoints.length === 0) {
    io.err(`No enabled endpoint of your key is subscribed to ${printable(type)}. Subscribe one (docs/api.md, "Receive events"), `
      + `or post the example to a local receiver: petstore trigger ${printable(type)} --forward-to URL --secret SECRET`)
    return 1
  }
  for (const endpoint of endpoints) {
    const { eventId } = await client.webhooks.test(endpoint.id, { type })
    io.out(printable(`${type} -> ${endpoint.id} (${endpoint.url}): queued as ${eventId}; `
      + `its attempts: GET /v1/webhooks/${endpoint.id}/deliveries`))
  }
  return 0
}

async function sendLocally (api: Api, type: string, url: string, secret: string, io: Io): Promise<number> {
  const row = (await api.client.request('get', '/event_types')).find((candidate) => candidate.type === type)
  if (row === undefined) {
    io.err(`${printable(type)} is not a type your key may receive (GET /v1/event_types lists them)`)
    return 2
  }
  // A fresh id each time: a receiver that deduplicates on webhook-id (as it should) handles every trigger.
  const delivery = { id: `evt_${randomBytes(16).toString('hex')}`, type, timestamp: new Date().toISOString(), data: row.example }
  const answer = await forward(url, secret, delivery)
  io.out(eventLine({ id: delivery.id, type, createdAt: delivery.timestamp }, answer))
  return /^2\d\d /.test(answer) ? 0 : 1
}

/** A subscription pattern (a name, or `family.*`) that takes the type. */
function matches (pattern: string, type: string): boolean {
  return pattern === type || (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1)))
}
