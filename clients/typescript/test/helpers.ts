// The real server, in process, for the client's tests: the app the server's own tests build,
// listening on a free port (listenTestApp of test/helpers/app.ts: real storage, the memory or
// Redis limiter, a manual clock), so the client talks HTTP to it through fetch exactly as it
// would in production. What this file adds is the client's side: a client whose waits move the
// server's clock, a fetch that records the exchanges, seeded pets.
import type { TestContext } from 'node:test'
import { listenTestApp, type TestApp, type TestAppOptions } from '../../../test/helpers/app.ts'
import { createPetstoreClient, type PetstoreClientOptions } from '../src/index.ts'

export interface ClientTestServer extends TestApp {
  baseUrl: string
  /** A client on this server: a manual-clock timer, so waits take no real time. */
  client (options?: Partial<PetstoreClientOptions>): ReturnType<typeof createPetstoreClient>
}

/** The test app listening, with a client factory on it. */
export async function serveForClient (t: TestContext, options: TestAppOptions = {}): Promise<ClientTestServer> {
  const testApp = await listenTestApp(t, options)
  const { baseUrl } = testApp
  const client: ClientTestServer['client'] = (overrides = {}) => createPetstoreClient({
    baseUrl,
    apiKey: testApp.keys.staff,
    now: testApp.clock.now,
    // Waiting moves the server's clock: a window reset or a Retry-After passes at once.
    sleep: async (ms) => { testApp.clock.advance(ms) },
    ...overrides
  })
  return { ...testApp, client }
}

export interface Exchange {
  method: string
  url: string
  status: number | null
  code: string | null
  requestId: string | null
  idempotencyKey: string | null
}

/**
 * A fetch that records every exchange (what the server received and answered) and the most
 * requests it had in flight at once.
 */
export function recordingFetch (
  inner: typeof fetch = (...args) => fetch(...args)
): { fetch: typeof fetch; exchanges: Exchange[]; maxInFlight: () => number } {
  const exchanges: Exchange[] = []
  let inFlight = 0
  let maxInFlight = 0
  const recording: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers)
    const exchange: Exchange = {
      method: init?.method ?? 'GET',
      url: String(input),
      status: null,
      code: null,
      requestId: null,
      idempotencyKey: headers.get('idempotency-key')
    }
    exchanges.push(exchange)
    maxInFlight = Math.max(maxInFlight, ++inFlight)
    let response: Response
    try {
      // The client reads the body before it lets another request go: count until then.
      response = await inner(input, init)
      await response.clone().arrayBuffer()
    } finally {
      inFlight--
    }
    exchange.status = response.status
    exchange.requestId = response.headers.get('request-id')
    if (!response.ok) {
      const body = await response.clone().json().catch(() => null) as { code?: string } | null
      exchange.code = body?.code ?? null
    }
    return response
  }
  return { fetch: recording, exchanges, maxInFlight: () => maxInFlight }
}

/** Makes a category and `count` pets (staff), returning the pets in id order. */
export async function seedPets (server: ClientTestServer, count: number): Promise<{ id: number; name: string }[]> {
  const staff = server.client()
  const category = await staff.categories.create({ name: 'Dogs' })
  const pets = []
  for (let i = 1; i <= count; i++) pets.push(await staff.pets.create({ name: `Pet ${i}`, categoryId: category.id }))
  return pets
}
