// petstore listen --forward-to URL [--types LIST] [--since TIME] [--cursor CURSOR] [--secret SECRET]
//   [--base-url URL] [--poll-ms MS]
// Webhooks on a laptop without a tunnel (issue 49 section 4): the key's event feed, followed from
// here, and each event posted to a local URL signed exactly as a delivery (the same body, the
// same Standard Webhooks headers, by the server's own signing code), so the receiver's
// verification code is the one it will run in production. A client of the API like any other: it
// needs an API key (PETSTORE_API_KEY) and no database, and sees what the key may see.
//
// The feed is followed by the typed client's events.listen (clients/typescript/src/listen.ts):
// one loop for the CLI and the client, with its restarts, Retry-After and cursor. It is imported
// from the client's sources, so this command runs from a checkout of the repository, not from the
// server's image (which holds src/ only).
import { parseArgs } from 'node:util'
import { createPetstoreClient, PetstoreError, type Event, type PetstoreClient } from '../../clients/typescript/src/index.ts'
import { newSecret, webhookHeaders } from '../webhooks/signature.ts'
import type { Io } from './io.ts'
import { printable } from './printable.ts'

/** Where `npm start` serves the API. */
export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000/v1'
/** A local answer that takes longer is a failed forward: WEBHOOK_TIMEOUT_MS's default (docs/product.md 13.4). */
export const FORWARD_TIMEOUT_MS = 10_000

export async function listen (args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args, strict: true,
    options: {
      'forward-to': { type: 'string' },
      types: { type: 'string', multiple: true },
      since: { type: 'string' },
      cursor: { type: 'string' },
      secret: { type: 'string' },
      'base-url': { type: 'string' },
      'poll-ms': { type: 'string' }
    }
  })
  const api = apiOf(values['base-url'], io)
  if (typeof api === 'string') return usage(io, api)
  const target = values['forward-to']
  if (target === undefined || !isHttpUrl(target)) return usage(io, '--forward-to takes the http(s) URL of your local receiver')
  const secret = values.secret ?? newSecret()
  if (!isSecret(secret)) return usage(io, '--secret is an endpoint secret: whsec_ followed by base64')
  const since = values.since
  if (since !== undefined && Number.isNaN(Date.parse(since))) return usage(io, '--since takes an ISO 8601 instant, e.g. 2026-11-29T08:00:00Z')
  const pollMs = values['poll-ms'] === undefined ? undefined : Number(values['poll-ms'])
  if (pollMs !== undefined && !(Number.isSafeInteger(pollMs) && pollMs >= 100)) return usage(io, '--poll-ms is a whole number of milliseconds, at least 100')
  const types = values.types?.join(',')

  const start = values.cursor !== undefined
    ? 'after the cursor given'
    : since !== undefined ? `with the events since ${since}` : 'from now on'
  io.err(`Forwarding the events of your key at ${api.baseUrl}${types === undefined ? '' : ` (types ${types})`} to ${target}, ${start}.`)
  io.err(values.secret === undefined
    ? `Signing secret of this run: ${secret} (your receiver verifies with it; --secret keeps one across runs)`
    : 'Signing with the secret given (--secret).')
  io.err(`Test events of any type: npx petstore trigger TYPE --forward-to ${target} --secret SECRET`)

  const stop = new AbortController()
  let stoppedBy = ''
  void io.stopSignal?.then((signal) => {
    stoppedBy = signal
    stop.abort()
  })
  try {
    const { cursor } = await api.client.events.listen(async (event) => {
      io.out(eventLine(event, await forward(target, secret, deliveryOf(event))))
    }, {
      ...(types !== undefined && { type: types }),
      ...(values.cursor !== undefined && { cursor: values.cursor }),
      ...(since !== undefined && { since }),
      ...(pollMs !== undefined && { pollMs }),
      signal: stop.signal,
      onReady: () => { io.err('Ready: each new event is forwarded as it comes (Ctrl-C stops).') },
      onRetry: ({ error, waitMs }) => {
        io.err(`listen: ${describeFailure(error)}; reading the feed again in ${(waitMs / 1000).toFixed(1)} s`)
      }
    })
    io.err(`${stoppedBy === '' ? 'Stopped' : `${stoppedBy}: stopped`}.${cursor === null ? '' : ` Resume with --cursor ${printable(cursor)}`}`)
    return 0
  } catch (error) {
    if (!(error instanceof PetstoreError)) throw error
    io.err(`listen: ${describeFailure(error)}`)
    // A filter or cursor the API refuses is a bad argument; a key it refuses is a failure.
    return error.code === 'validation_failed' ? 2 : 1
  }
}

export interface Api {
  client: PetstoreClient
  baseUrl: string
}

/** The client of the key in PETSTORE_API_KEY at --base-url (or PETSTORE_BASE_URL); or what is wrong. */
export function apiOf (baseUrlArg: string | undefined, io: Io): Api | string {
  const apiKey = io.env.PETSTORE_API_KEY
  if (apiKey === undefined || apiKey === '') return 'set PETSTORE_API_KEY to your API key (never on the command line, where other users of the machine see it)'
  const baseUrl = (baseUrlArg ?? io.env.PETSTORE_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, '')
  if (!isHttpUrl(baseUrl)) return '--base-url (or PETSTORE_BASE_URL) is the http(s) URL of the API, ending in /v1'
  return { client: createPetstoreClient({ baseUrl, apiKey }), baseUrl }
}

export function usage (io: Io, problem: string): number {
  io.err(problem)
  return 2
}

/** What a delivery of the event carries: its id, type, instant and data, in the dispatcher's order. */
export interface Delivery {
  id: string
  type: string
  timestamp: string
  data: unknown
}

/**
 * The event as src/webhooks/dispatcher.ts delivers it. The feed's data is the delivery's (both
 * render the stored event with events/render.ts); test/cli/listen.test.ts compares the bytes a
 * receiver gets from both.
 */
export function deliveryOf (event: Event): Delivery {
  return { id: event.id, type: event.type, timestamp: new Date(event.createdAt).toISOString(), data: event.data }
}

/**
 * Posts one delivery to the local URL, signed with the secret now, as one attempt of the server
 * would (no redirect followed, the same timeout); never throws. The answer as a line shows it:
 * `204 (3 ms)`, or why there was none.
 */
export async function forward (url: string, secret: string, delivery: Delivery): Promise<string> {
  const body = JSON.stringify(delivery)
  const headers = webhookHeaders({ id: delivery.id, timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] })
  const started = performance.now()
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS)
    })
    await response.body?.cancel()
    return `${response.status} (${Math.round(performance.now() - started)} ms)`
  } catch (error) {
    const timedOut = (error as { name?: string }).name === 'TimeoutError'
    return `no answer: ${timedOut ? `none within ${FORWARD_TIMEOUT_MS / 1000} s` : networkReason(error)}`
  }
}

/** One line per event: when it happened, its type and id, and the local answer. */
export function eventLine (event: { id: string; type: string; createdAt: string }, answer: string): string {
  return printable(`${event.createdAt}  ${event.type.padEnd(20)} ${event.id}  -> ${answer}`)
}

export function describeFailure (error: unknown): string {
  if (error instanceof PetstoreError) {
    const wait = error.retryAfter === null ? '' : ` (Retry-After ${error.retryAfter} s)`
    return printable(`${error.status} ${error.code}: ${error.message}${wait}`)
  }
  return `the API did not answer: ${networkReason(error)}`
}

/** fetch's "fetch failed" says nothing: the cause's code (ECONNREFUSED) or message does. */
function networkReason (error: unknown): string {
  const e = error as { message?: string; cause?: { code?: string; message?: string } }
  return printable(e.cause?.code ?? e.cause?.message ?? e.message ?? String(error))
}

export function isHttpUrl (text: string): boolean {
  try {
    const url = new URL(text)
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}

/** The signing code refuses a malformed secret: asked once here, it says so before anything is sent. */
export function isSecret (secret: string): boolean {
  try {
    webhookHeaders({ id: 'evt_check', timestamp: 0, body: '', secrets: [secret] })
    return true
  } catch {
    return false
  }
}
