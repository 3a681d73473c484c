// petstore-client: a typed client of the Petstore API that keeps the rate-limit contract for its
// users (docs/product.md sections 4 and 9). It uses only `fetch`, so it runs on Node 18+, in
// browsers and bundlers, from the JavaScript that scripts/build.ts compiles into dist/ (and on
// Node 24 from this erasable TypeScript, in this repository); its types are generated from
// docs/openapi.json.
import type { components, operations, paths } from './openapi.ts'
import { PetstoreError, errorOf } from './errors.ts'
import { createGate, JITTER_MS } from './gate.ts'
import { deprecationDate, linksOf, rateLimitOf, secondsToReset, type RateLimitState } from './headers.ts'
import { listenToFeed, type EventListenOptions, type ListenResult } from './listen.ts'

export { PetstoreError }
export {
  verifyWebhook,
  WebhookVerificationError,
  type VerifyWebhookOptions,
  type WebhookHeaders,
  type WebhookPayload
} from './webhooks.ts'
export type { ErrorCode, ErrorDetail } from './errors.ts'
export type { EventListenOptions, ListenResult, ListenRetry } from './listen.ts'
export type { RateLimitState }
export type { components, operations, paths }

type Schemas = components['schemas']
export type Pet = Schemas['Pet']
export type NewPet = Schemas['NewPet']
export type PetPatch = Schemas['PetPatch']
export type PetStatus = Schemas['PetStatus']
export type Category = Schemas['Category']
export type NewCategory = Schemas['NewCategory']
export type Order = Schemas['Order']
export type NewOrder = Schemas['NewOrder']
export type InventoryItem = Schemas['InventoryItem']
export type RateLimitStatus = Schemas['RateLimitStatus']
export type ApiKey = Schemas['ApiKey']
export type CreatedApiKey = Schemas['CreatedApiKey']
export type KeyUsage = Schemas['KeyUsage']
export type KeyBans = Schemas['KeyBans']
export type PetQuery = NonNullable<operations['listPets']['parameters']['query']>
export type CategoryQuery = NonNullable<operations['listCategories']['parameters']['query']>
export type OrderQuery = NonNullable<operations['listOrders']['parameters']['query']>
export type Event = Schemas['Event']
export type EventQuery = NonNullable<operations['listEvents']['parameters']['query']>
/**
 * events.list(): the feed from `cursor`; with `follow`, it waits `pollMs` (default 1000) on an
 * empty page and reads on, until the loop stops or `signal` aborts.
 */
export type EventFeedOptions = EventQuery & { follow?: boolean; pollMs?: number; signal?: AbortSignal }

export interface DeprecationNotice {
  /** The operation, as the client called it: `GET` and the path template, e.g. `/pets/{petId}`. */
  method: string
  path: string
  /** When the operation was deprecated (`Deprecation`), when it stops working (`Sunset`). */
  deprecation: Date | null
  sunset: Date | null
  /** The operation to use instead (`Link: rel="successor-version"`), as the server names it. */
  successor: string | null
}

export interface PetstoreClientOptions {
  /** The API's base URL, ending in `/v1`, e.g. `http://127.0.0.1:3000/v1`. */
  baseUrl: string
  apiKey: string
  /** Retries of one call, 429s included (default 4). */
  maxRetries?: number
  /** Requests in flight at once (default 8). */
  maxConcurrency?: number
  /**
   * The longest rate-limit wait (a window's reset, a Retry-After) a call sits through, in ms
   * (default 60000). A longer one rejects the call at once with a PetstoreError `rate_limited`
   * whose retryAfter says when to come back, instead of holding its promise (a spent day quota
   * would hold it until the next UTC day). A 503's Retry-After past it rejects at once too, with
   * that 503.
   */
  maxWaitMs?: number
  /** Every request goes through it (default: the global fetch). */
  fetch?: typeof globalThis.fetch
  /** Called whenever a response leaves less than 10% of the window. What it throws is ignored. */
  onRateLimit?: (state: RateLimitState) => void
  /** Called once per operation whose responses say it is deprecated. What it throws is ignored. */
  onDeprecation?: (notice: DeprecationNotice) => void
  /** Clock and timer (milliseconds); tests inject a manual clock so waits take no real time. */
  now?: () => number
  sleep?: (ms: number) => Promise<void>
  /** Source of jitter in [0, 1) (default Math.random). */
  random?: () => number
}

export interface CreateOptions {
  /** Sent as `Idempotency-Key`; a random one when absent. Every retry sends the same key. */
  idempotencyKey?: string
}

export interface WriteOptions {
  /** Sent as `If-Match`: the change applies only to that version (`ETag`) of the record. */
  ifMatch?: string
}

type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete'
type JsonBody<R> = R extends { content: { 'application/json': infer B } } ? B : undefined
/** The parsed body of an operation's success (2xx) response. */
export type SuccessBody<O> = O extends { responses: infer R }
  ? { [S in keyof R]: S extends 200 | 201 | 202 | 204 ? JsonBody<R[S]> : never }[keyof R]
  : never
type RequestBody<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never
type ParamsOf<O> = O extends { parameters: infer P } ? P : never
type OperationAt<P extends keyof paths, M extends HttpMethod> = paths[P][M]
/** The paths that have an operation for `M`. */
export type PathsOf<M extends HttpMethod> = {
  [P in keyof paths]: paths[P][M] extends { responses: unknown } ? P : never
}[keyof paths]

export interface OperationInit<O> {
  path?: ParamsOf<O> extends { path?: infer X } ? Exclude<X, undefined> : never
  query?: ParamsOf<O> extends { query?: infer X } ? Exclude<X, undefined> : never
  body?: RequestBody<O>
  headers?: Record<string, string>
}

const DEFAULT_MAX_RETRIES = 4
const DEFAULT_MAX_CONCURRENCY = 8
const DEFAULT_MAX_WAIT_MS = 60_000
/** Exponential backoff of 503s and network errors: full jitter, between 0 and min(cap, base * 2^n). */
const BACKOFF_BASE_MS = 500
const BACKOFF_CAP_MS = 20_000
/** Below this share of the window left, onRateLimit is called. */
const LOW_SHARE = 0.1

export type PetstoreClient = ReturnType<typeof createPetstoreClient>

export function createPetstoreClient (options: PetstoreClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '')
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES
  const fetchImpl = options.fetch ?? ((...args: Parameters<typeof globalThis.fetch>) => globalThis.fetch(...args))
  const now = options.now ?? (() => Date.now())
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  const random = options.random ?? Math.random
  const maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS
  const tooLong = (waitMs: number) => new PetstoreError({
    status: 429,
    code: 'rate_limited',
    message: `the rate limit allows the next request in ${Math.ceil(waitMs / 1000)} s, longer than maxWaitMs (${maxWaitMs} ms)`,
    requestId: null,
    retryAfter: Math.ceil(waitMs / 1000)
  })
  const gate = createGate({
    maxConcurrency: options.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
    now,
    sleep,
    random,
    maxWaitMs,
    tooLong
  })
  const deprecationsSeen = new Set<string>()
  let lastRateLimit: RateLimitState | null = null

  function backoffMs (retry: number): number {
    return Math.floor(random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (retry - 1)))
  }

  /** Rate-limit and lifecycle headers of any response, success or error. */
  function observe (method: string, template: string, response: Response): void {
    const state = rateLimitOf(response.headers)
    if (state === null) {
      gate.unmetered()
    } else {
      lastRateLimit = state
      const seconds = secondsToReset(response.headers, state.remaining)
      gate.observe(state.remaining, seconds !== null ? now() + seconds * 1000 : state.reset * 1000)
      if (state.remaining < state.limit * LOW_SHARE) notify(options.onRateLimit, { ...state })
    }
    const deprecation = response.headers.get('deprecation')
    const operation = `${method} ${template}`
    if (deprecation !== null && !deprecationsSeen.has(operation)) {
      deprecationsSeen.add(operation)
      const sunset = response.headers.get('sunset')
      const notice = {
        method,
        path: template,
        deprecation: deprecationDate(deprecation),
        sunset: sunset === null ? null : deprecationDate(sunset),
        successor: linksOf(response.headers.get('link')).get('successor-version') ?? null
      }
      notify(options.onDeprecation, notice)
    }
  }

  /**
   * Sends one call, retrying what the contract allows: a 429 `rate_limited` (after Retry-After,
   * holding every other request meanwhile), and a 503 or a network error of a safe method or of
   * a POST that carries an Idempotency-Key. Every retry counts against maxRetries.
   */
  async function send (
    method: string,
    template: string,
    url: string,
    body: unknown,
    headers: Record<string, string>
  ): Promise<{ data: unknown; response: Response }> {
    const retryable = method === 'GET' || (method === 'POST' && headers['idempotency-key'] !== undefined)
    const init: RequestInit = {
      method,
      headers: { accept: 'application/json', 'x-api-key': options.apiKey, ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
      ...(body !== undefined && { body: JSON.stringify(body) })
    }
    let lastError: PetstoreError | null = null
    let lastNetworkError: unknown = null
    for (let retry = 0; ; retry++) {
      if (retry > maxRetries) throw lastError ?? lastNetworkError
      await gate.acquire()
      let received:
        | { response: Response; text: string; error: PetstoreError | null; tooLong: boolean }
        | { failure: unknown }
      try {
        const response = await fetchImpl(url, init)
        const text = await response.text()
        observe(method, template, response)
        const error = response.ok ? null : errorOf(response, text)
        // Over quota: nobody of this client sends until Retry-After has passed (sending now
        // would only count towards a ban), held before this slot frees so no queued request
        // slips out. A 429 was not processed, so any method may retry, unless the wait is
        // longer than maxWaitMs: then this call rejects with the 429 (queued ones too, in the gate).
        let waitMs = 0
        if (error !== null && error.status === 429 && !isBan(error)) {
          waitMs = error.retryAfter !== null ? error.retryAfter * 1000 : backoffMs(retry + 1)
          gate.hold(now() + waitMs)
        }
        received = { response, text, error, tooLong: waitMs > maxWaitMs }
      } catch (failure) {
        received = { failure }
      } finally {
        // Whatever happened above, the slot is free again: a slot that leaked would, after
        // maxConcurrency leaks, leave every later call of this client waiting forever.
        gate.release()
      }
      if ('failure' in received) {
        if (!retryable) throw received.failure
        lastNetworkError = received.failure
        if (retry < maxRetries) await sleep(backoffMs(retry + 1))
        continue
      }
      const { response, text, error, tooLong: waitTooLong } = received
      if (error === null) return { data: text === '' ? undefined : JSON.parse(text), response }
      lastError = error
      if (response.status === 429 && !isBan(error) && !waitTooLong) continue
      if (response.status === 503 && retryable) {
        // A Retry-After past maxWaitMs rejects at once, as a 429's does: the 503 tells when to come back.
        const retryAfterMs = error.retryAfter !== null ? error.retryAfter * 1000 : null
        if (retryAfterMs !== null && retryAfterMs > maxWaitMs) throw error
        if (retry < maxRetries) {
          await sleep(retryAfterMs !== null ? retryAfterMs + Math.floor(random() * JITTER_MS) : backoffMs(retry + 1))
        }
        continue
      }
      throw error
    }
  }

  function urlOf (
    template: string,
    path: Record<string, unknown> | undefined,
    query: Record<string, unknown> | undefined | string
  ): string {
    const filled = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const value = path?.[name]
      if (value === undefined) throw new TypeError(`missing path parameter ${name} of ${template}`)
      return encodeURIComponent(String(value))
    })
    if (typeof query === 'string') return baseUrl + filled + query
    const search = new URLSearchParams()
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue
      for (const item of Array.isArray(value) ? value : [value]) search.append(name, String(item))
    }
    const text = search.toString()
    return baseUrl + filled + (text === '' ? '' : `?${text}`)
  }

  /** Any operation of the document, typed by its path and method: the escape hatch under the resource methods. */
  async function request<M extends HttpMethod, P extends PathsOf<M>> (
    method: M,
    path: P,
    init: OperationInit<OperationAt<P, M>> = {}
  ): Promise<SuccessBody<OperationAt<P, M>>> {
    const { data } = await send(
      method.toUpperCase(),
      path,
      urlOf(path, init.path as Record<string, unknown> | undefined, init.query as Record<string, unknown> | undefined),
      init.body,
      lowerCase(init.headers)
    )
    return data as SuccessBody<OperationAt<P, M>>
  }

  /** Every item of a list operation, page after page, following `Link: rel="next"`. */
  async function * every<T> (
    template: string,
    query: Record<string, unknown> | undefined
  ): AsyncGenerator<T, void, undefined> {
    let url = urlOf(template, undefined, query)
    for (;;) {
      const { data, response } = await send('GET', template, url, undefined, {})
      for (const item of data as T[]) yield item
      const next = linksOf(response.headers.get('link')).get('next')
      if (next === undefined) return
      // The server writes the link from the path it saw; behind a proxy that rewrites paths,
      // only the query (filters and cursor) is ours to reuse, on our own base URL.
      url = urlOf(template, undefined, new URL(next, baseUrl + '/').search)
    }
  }

  const idempotency = (options?: CreateOptions): Record<string, string> => ({
    'idempotency-key': options?.idempotencyKey ?? randomKey()
  })
  const ifMatch = (options?: WriteOptions): Record<string, string> => options?.ifMatch !== undefined
    ? { 'if-match': options.ifMatch }
    : {}

  const pets = {
    /** One page of pets. */
    list: (query?: PetQuery) => request('get', '/pets', query !== undefined ? { query } : {}),
    /** Every pet, in id order, across pages. */
    all: (query?: Omit<PetQuery, 'cursor'>) => every<Pet>('/pets', query),
    /** One pet, through `GET /pets?id=` (the successor of the deprecated `GET /pets/{petId}`). */
    async get (id: number): Promise<Pet> {
      const { data, response } = await send('GET', '/pets', urlOf('/pets', undefined, { id }), undefined, {})
      const found = (data as Pet[])[0]
      if (found !== undefined) return found
      throw new PetstoreError({ status: 404, code: 'not_found', message: `pet ${id} not found`, requestId: response.headers.get('request-id'), retryAfter: null })
    },
    create: (pet: NewPet, options?: CreateOptions) => request('post', '/pets', { body: pet, headers: idempotency(options) }),
    replace: (id: number, pet: NewPet, options?: WriteOptions) =>
      request('put', '/pets/{petId}', { path: { petId: id }, body: pet, headers: ifMatch(options) }),
    update: (id: number, patch: PetPatch, options?: WriteOptions) =>
      request('patch', '/pets/{petId}', { path: { petId: id }, body: patch, headers: ifMatch(options) }),
    delete: (id: number, options?: WriteOptions) => request('delete', '/pets/{petId}', { path: { petId: id }, headers: ifMatch(options) })
  }

  const categories = {
    list: (query?: CategoryQuery) => request('get', '/categories', query !== undefined ? { query } : {}),
    all: (query?: Omit<CategoryQuery, 'cursor'>) => every<Category>('/categories', query),
    get: (id: number) => request('get', '/categories/{categoryId}', { path: { categoryId: id } }),
    create: (category: NewCategory) => request('post', '/categories', { body: category }),
    replace: (id: number, category: NewCategory, options?: WriteOptions) =>
      request('put', '/categories/{categoryId}', { path: { categoryId: id }, body: category, headers: ifMatch(options) }),
    delete: (id: number, options?: WriteOptions) => request('delete', '/categories/{categoryId}', { path: { categoryId: id }, headers: ifMatch(options) })
  }

  const orders = {
    place: (order: NewOrder, options?: CreateOptions) => request('post', '/store/orders', { body: order, headers: idempotency(options) }),
    get: (id: number) => request('get', '/store/orders/{orderId}', { path: { orderId: id } }),
    list: (query?: OrderQuery) => request('get', '/store/orders', query !== undefined ? { query } : {}),
    all: (query?: Omit<OrderQuery, 'cursor'>) => every<Order>('/store/orders', query),
    /** Staff: marks the order complete, shipped now or at `shipDate`. */
    complete: (id: number, shipDate?: string, options?: WriteOptions) => request('patch', '/store/orders/{orderId}', {
      path: { orderId: id },
      body: { complete: true, ...(shipDate !== undefined && { shipDate }) },
      headers: ifMatch(options)
    }),
    /** Cancels an open order: its quantity returns to stock, and the order is gone. */
    cancel: (id: number, options?: WriteOptions) => request('delete', '/store/orders/{orderId}', { path: { orderId: id }, headers: ifMatch(options) })
  }

  /** One page of the feed and the cursor to read on from (every page has one, the empty ones too). */
  async function eventPage (url: string): Promise<{ events: Event[]; cursor: string; next: string }> {
    const { data, response } = await send('GET', '/events', url, undefined, {})
    const next = linksOf(response.headers.get('link')).get('next')
    if (next === undefined) throw new TypeError('GET /events answered without its next link')
    // Only the query (filters and cursor) is ours to reuse, on our own base URL (as in every()).
    const search = new URL(next, baseUrl + '/').search
    return { events: data as Event[], cursor: new URLSearchParams(search).get('cursor') ?? '', next: urlOf('/events', undefined, search) }
  }

  const events = {
    /** One page of the feed, oldest first, and the cursor to resume from (keep it to read on later). */
    async page (query?: EventQuery): Promise<{ events: Event[]; cursor: string }> {
      const { events: page, cursor } = await eventPage(urlOf('/events', undefined, query))
      return { events: page, cursor }
    },
    /**
     * Every event the caller may see, oldest first, following the cursor: from `cursor` (or the
     * oldest kept) to the first empty page, or, with `follow`, on and on, polling the feed.
     */
    async * list (options: EventFeedOptions = {}): AsyncGenerator<Event, void, undefined> {
      const { follow = false, pollMs = 1000, signal, ...query } = options
      let url = urlOf('/events', undefined, query)
      while (signal?.aborted !== true) {
        const { events: page, next } = await eventPage(url)
        for (const event of page) yield event
        url = next
        if (page.length > 0) continue
        if (!follow) return
        await sleep(pollMs)
      }
    },
    get: (id: string) => request('get', '/events/{eventId}', { path: { eventId: id } }),
    /**
     * Follows the feed from now on (or from `cursor`, or with the events since `since`), calling
     * `handler` with each event in feed order, one at a time (it awaits what the handler
     * returns). It outlives server restarts and rate limits, and hands no event twice; it
     * resolves with the cursor reached when `signal` aborts, and rejects with what the handler
     * throws or with an answer retrying cannot change (a 401, a 403, a bad filter). See listen.ts.
     */
    listen: (handler: (event: Event) => unknown, listenOptions: EventListenOptions = {}): Promise<ListenResult> =>
      listenToFeed({
        firstPage: (query) => urlOf('/events', undefined, query),
        page: eventPage,
        sleep: sleepUnlessAborted,
        random
      }, handler, listenOptions)
  }

  /**
   * Waits `ms`, or less when `signal` aborts. The default timer is cleared then, so a stopped
   * listen leaves nothing that holds the process; an injected sleep is raced.
   */
  function sleepUnlessAborted (ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (signal === undefined) return sleep(ms)
    if (signal.aborted) return Promise.resolve()
    return new Promise<void>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const done = (): void => {
        if (timer !== undefined) clearTimeout(timer)
        signal.removeEventListener('abort', done)
        resolve()
      }
      signal.addEventListener('abort', done)
      if (options.sleep === undefined) timer = setTimeout(done, ms)
      else options.sleep(ms).then(done, done)
    })
  }

  // The return types are written out: tsc's declaration of the inferred ones copied an unrelated
  // comment of this file into the middle of `components["schemas"]["PetStatus"]` (it reused the
  // type's node from openapi.ts with this file's comment positions), and dist/ did not compile.
  const inventory = {
    get: (petId: number): Promise<InventoryItem> => request('get', '/store/inventory/{petId}', { path: { petId } }),
    set: (petId: number, quantity: number, options?: WriteOptions): Promise<InventoryItem> =>
      request('put', '/store/inventory/{petId}', { path: { petId }, body: { quantity }, headers: ifMatch(options) })
  }

  /** Webhook endpoints (docs/api.md, "Receive events"): check deliveries with verifyWebhook. */
  const webhooks = {
    create: (webhook: Schemas['NewWebhook']) => request('post', '/webhooks', { body: webhook }),
    list: (query?: NonNullable<operations['listWebhooks']['parameters']['query']>) => request('get', '/webhooks', query !== undefined ? { query } : {}),
    get: (id: string) => request('get', '/webhooks/{webhookId}', { path: { webhookId: id } }),
    update: (id: string, patch: Schemas['WebhookPatch']) => request('patch', '/webhooks/{webhookId}', { path: { webhookId: id }, body: patch }),
    delete: (id: string) => request('delete', '/webhooks/{webhookId}', { path: { webhookId: id } }),
    rotateSecret: (id: string) => request('post', '/webhooks/{webhookId}/rotate_secret', { path: { webhookId: id } }),
    /**
     * Sends a test event to this endpoint alone: `webhook.test`, or with `type` that type's
     * documented example (`GET /event_types`), delivered as a real one.
     */
    test: (id: string, options?: { type?: string }) => request('post', '/webhooks/{webhookId}/test', {
      path: { webhookId: id },
      ...(options?.type !== undefined && { body: { type: options.type } })
    }),
    deliveries: (id: string, limit?: number) => request('get', '/webhooks/{webhookId}/deliveries', {
      path: { webhookId: id },
      ...(limit !== undefined && { query: { limit } })
    }),
    replay: (
      id: string,
      selection: NonNullable<operations['replayWebhook']['requestBody']>['content']['application/json']
    ) => request('post', '/webhooks/{webhookId}/replay', { path: { webhookId: id }, body: selection })
  }

  /**
   * The key this client sends, for every role (docs/api.md, "Your own key"). `get` and `bans`
   * answer even while the key is banned, charging nothing, so a client can learn why and until when.
   */
  const keys = {
    me: {
      get: () => request('get', '/keys/me'),
      /** Requests per UTC day over the last `days` days (1 to 90, default 30). */
      usage: (days?: number) => request('get', '/keys/me/usage', days !== undefined ? { query: { days } } : {}),
      bans: () => request('get', '/keys/me/bans'),
      /**
       * The key's successor, with its `key` shown once. This client goes on sending the old key,
       * which works until the grace period ends (`gracePeriodSeconds`, a day by default; 0 stops
       * it at once): make a new client with the new key.
       */
      rotate: (options?: { gracePeriodSeconds?: number }) => request(
        'post',
        '/keys/me/rotate',
        options?.gracePeriodSeconds !== undefined ? { body: { gracePeriodSeconds: options.gracePeriodSeconds } } : {}
      )
    }
  }

  return {
    pets,
    categories,
    orders,
    inventory,
    events,
    webhooks,
    keys,
    /** The caller's plan, both windows and ban state; costs no quota. */
    rateLimit: () => request('get', '/rate_limit'),
    request,
    /** `X-RateLimit-*` of the last response (the window that binds first); null before any. */
    get lastRateLimit (): RateLimitState | null {
      return lastRateLimit === null ? null : { ...lastRateLimit }
    }
  }
}

/**
 * Calls a user's notification callback. What it throws, or the promise it rejects, is ignored:
 * a notice cannot fail or stall the call that produced it (and a client that counted on its
 * callbacks never throwing would leak concurrency slots when one did).
 */
function notify<T> (callback: ((value: T) => unknown) | undefined, value: T): void {
  if (callback === undefined) return
  try {
    const result = callback(value)
    // Any thenable, not only this realm's Promise: one made in a vm context or another frame
    // fails `instanceof Promise`, and its rejection would go unhandled.
    if (typeof (result as PromiseLike<unknown> | null | undefined)?.then === 'function') Promise.resolve(result).catch(() => {})
  } catch {
    // ignored, as documented in the README (Options)
  }
}

/**
 * A random UUID (v4) for an Idempotency-Key. Node 18 has no global `crypto` without a flag, so
 * the Web Crypto API is used where it is, and Math.random only where it is not: a key only has
 * to differ from the caller's other keys of the same day.
 */
/**
 * A ban (of the key, or of the client's address when it sends no key): never retried, since it
 * lasts minutes and a retry is refused too; the call rejects at once with retryAfter.
 */
function isBan (error: PetstoreError): boolean {
  return error.code === 'api_key_banned' || error.code === 'address_banned'
}

function randomKey (): string {
  const webCrypto = (globalThis as {
    crypto?: { randomUUID?: () => string; getRandomValues?: (bytes: Uint8Array) => Uint8Array }
  }).crypto
  if (typeof webCrypto?.randomUUID === 'function') return webCrypto.randomUUID()
  const bytes = new Uint8Array(16)
  if (typeof webCrypto?.getRandomValues === 'function') webCrypto.getRandomValues(bytes)
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256)
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

function lowerCase (headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]))
}
