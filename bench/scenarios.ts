// What a run loads: the catalogue it seeds, the key it uses, and the scenarios, each with the one
// request checked before its load so that a row measures what its title claims.
import { main as cli } from '../src/cli/main.ts'
import type { Stores } from '../src/storage/stores.ts'
import type { PetRecord } from '../src/pets/pets.store.ts'
import type { Load } from './load.ts'
import type { ScenarioId } from './options.ts'
import type { PeerPet } from './peers/json-server.ts'
import { BARE_BODY } from './server.ts'

const CATEGORIES = ['Dogs', 'Cats', 'Birds', 'Fish', 'Reptiles', 'Rabbits', 'Rodents', 'Horses', 'Amphibians', 'Insects']
/** An enterprise key's quotas (the most a key may have), far above anything a run sends. */
const HUGE_QUOTA = 1_000_000_000
/** The stock of the pet the orders buy (the most a stock may be). */
export const ORDER_STOCK = 1_000_000
/**
 * The refusal row's cap: the enterprise default, 1,000 open orders, the most an owner can hold
 * by default; the row's owner holds them all. Only enterprise keys take the quotas a run needs,
 * so that row's server runs with this cap (ORDER_LIMITS) and the others with it lifted.
 */
export const CAPPED_OPEN_ORDERS = 1000

export interface Seeded {
  apiKey: string
  /** Another enterprise key, for the refusal row alone: it fills its cap, then orders again. */
  cappedKey: string
  /** The catalogue, for the peers (--peers) to serve the same pets. */
  pets: PeerPet[]
  /** Every pet of the catalogue, for the reads to pick from. */
  petIds: number[]
  /** An available pet with ORDER_STOCK in stock, for POST /store/orders. */
  orderPetId: number
  /**
   * Another, for the webhooks scenario alone: the stock it loses during that scenario is the
   * number of orders placed, which the receiver must see as many order.created deliveries of.
   */
  webhookPetId: number
  /** Another, for the keyed orders alone, so that the orders of a fast run never empty one stock. */
  keyedPetId: number
}

/**
 * `pets` pets over 10 categories (interleaved, so a page spans categories), a tenth pending and a
 * tenth sold like a real shop, through the stores' own methods (no SQL here); then the key,
 * through `petstore keys create` as an operator makes one.
 */
export async function seed (stores: Stores, pets: number, databaseUrl: string): Promise<Seeded> {
  const categoryIds: number[] = []
  for (const name of CATEGORIES) {
    categoryIds.push((await stores.categories.createCategory({ name, description: `Benchmark ${name.toLowerCase()}.` }, Date.now())).id)
  }
  const catalogue: PeerPet[] = []
  const createPet = async (i: number): Promise<number> => {
    const status = i % 10 === 7 ? 'pending' : i % 10 === 9 ? 'sold' : 'available'
    const { record } = await stores.pets.createPet({
      name: `${CATEGORIES[i % CATEGORIES.length]!.slice(0, -1)} ${i + 1}`,
      categoryId: categoryIds[i % categoryIds.length]!,
      status
    }, null, Date.now())
    if (status !== 'available') await stores.inventory.setStock(record.id, 0, null, Date.now())
    catalogue.push({ id: record.id, name: record.name, categoryId: record.categoryId, status: record.status })
    return record.id
  }
  const petIds: number[] = []
  // Many at a time: PostgreSQL overlaps the round trips and commits them together; SQLite runs
  // them one by one anyway.
  for (let i = 0; i < pets - 1; i += 32) {
    petIds.push(...await Promise.all(Array.from({ length: Math.min(32, pets - 1 - i) }, (_, j) => createPet(i + j))))
  }
  // The pets the orders buy, each with a stock of its own (ORDER_STOCK).
  const stockedPet = async (name: string): Promise<PetRecord> => {
    const { record } = await stores.pets.createPet({ name, categoryId: categoryIds[3]!, status: 'available' }, null, Date.now())
    await stores.inventory.setStock(record.id, ORDER_STOCK, null, Date.now())
    return record
  }
  const stocked = await stockedPet('Bench goldfish')
  petIds.push(stocked.id)
  catalogue.push({ id: stocked.id, name: stocked.name, categoryId: stocked.categoryId, status: stocked.status })
  const hooked = await stockedPet('Bench guppy')
  const keyed = await stockedPet('Bench tetra')
  petIds.sort((a, b) => a - b)
  catalogue.sort((a, b) => a.id - b.id)

  const createKey = async (plan: string, name: string): Promise<string> => {
    const lines: string[] = []
    const errors: string[] = []
    const code = await cli(['keys', 'create', '--role', 'customer', '--plan', plan, '--name', name, '--per-minute', String(HUGE_QUOTA), '--per-day', String(HUGE_QUOTA), '--json'],
      { env: { DATABASE_URL: databaseUrl }, out: (l) => { lines.push(l) }, err: (l) => { errors.push(l) } })
    if (code !== 0) throw new Error(`petstore keys create exited ${code}: ${errors.join(' | ')}`)
    return (JSON.parse(lines.join('\n')) as { key: string }).key
  }
  return {
    apiKey: await createKey('enterprise', 'bench'),
    cappedKey: await createKey('enterprise', 'bench-capped'),
    pets: catalogue,
    petIds,
    orderPetId: stocked.id,
    webhookPetId: hooked.id,
    keyedPetId: keyed.id
  }
}

// ---------------------------------------------------------------------------------------------

export interface Probe {
  method: 'GET' | 'POST'
  path: string
  body?: string
  /** Sent besides the scenario's own. */
  headers?: Record<string, string>
  expectStatus: number
  /** Null when the answer is what the scenario means to load, else what is wrong with it. */
  check (response: Response, body: unknown): string | null
}

export interface Scenario {
  id: ScenarioId
  title: string
  load: Load
  probe: Probe
  /** Whether the limiter charges its requests (GET /v1/rate_limit costs nothing). */
  charged: boolean
  /** The webhooks scenario: the orders of this pet are counted against the receiver's order.created deliveries. */
  webhookPetId?: number
  /**
   * The keyed orders: every order the load completed took a unit of this pet's stock, none was
   * answered as a replay (a key sent twice would be), or the row fails.
   */
  stockPetId?: number
  /** The environment this scenario's server runs with besides the setup's (it gets one of its own). */
  serverEnv?: Record<string, string>
  /**
   * A row of two servers (the request log's cost): the same load against the setup's server and
   * against a second one started with this environment besides, in the same rounds; the row tells
   * the second's CPU µs/req apart from the first's (report.ts toggleRow).
   */
  versusEnv?: Record<string, string>
  /** Run before the probe (the refusal row: fill the owner's cap); a text when it failed. */
  prepare?: (base: string) => Promise<string | null>
  note?: string
}

const headerCheck = (response: Response, names: string[]): string | null => {
  const missing = names.filter((name) => !response.headers.has(name))
  return missing.length === 0 ? null : `response lacks ${missing.join(', ')}`
}
const LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']

export const BARE_LOAD: Load = { kind: 'static', method: 'GET', path: '/', headers: {} }
export const BARE_PROBE: Probe = {
  method: 'GET', path: '/', expectStatus: 200,
  check: (_response, body) => JSON.stringify(body) === BARE_BODY.toString() ? null : 'unexpected body'
}

/** Every /v1 scenario on a seeded catalogue, in the order they run. */
export function scenarios (seeded: Seeded, only: ReadonlySet<ScenarioId>, connections: number): Scenario[] {
  const headers = { 'x-api-key': seeded.apiKey }
  const cappedHeaders = { 'x-api-key': seeded.cappedKey }
  const probeId = seeded.petIds[Math.floor(seeded.petIds.length / 2)]!
  const count = seeded.petIds.length.toLocaleString('en-US')
  const orderBody = JSON.stringify({ petId: seeded.orderPetId, quantity: 1 })
  const hookedBody = JSON.stringify({ petId: seeded.webhookPetId, quantity: 1 })
  const keyedBody = JSON.stringify({ petId: seeded.keyedPetId, quantity: 1 })
  const idPaths = seeded.petIds.map((id) => `/v1/pets?id=${id}`)
  // Issue 20's mixed run: 45 connections reading while 5 order (a tenth, at least one).
  const orderers = Math.max(1, Math.round(connections / 10))
  const byIdLoad: Load = { kind: 'paths', paths: seeded.petIds.map((id) => `/v1/pets/${id}`), headers }
  const byIdProbe: Probe = {
    method: 'GET', path: `/v1/pets/${probeId}`, expectStatus: 200,
    check: (response, body) => (body as { id?: number } | null)?.id === probeId
      ? headerCheck(response, ['etag', 'deprecation', 'sunset', 'warning', 'link', ...LIMIT_HEADERS])
      : 'expected the pet'
  }
  const all: Scenario[] = [
    {
      id: 'get', title: 'GET /v1/pets/{id}', charged: true,
      load: byIdLoad,
      probe: byIdProbe,
      note: `a random pet of ${count} per request; the deprecated operation, so Deprecation, Sunset, Warning and Link too`
    },
    {
      // Issue 50 (2.3) and 51 (5): the key's request log costs at most 5% of a read's CPU.
      id: 'log', title: 'GET /v1/pets/{id}, request log on vs off', charged: true,
      load: byIdLoad,
      probe: byIdProbe,
      versusEnv: { REQUEST_LOG: 'off' },
      note: 'the by-id read against this setup\'s server (request log on, the default) and a second one on the same '
        + 'database started with REQUEST_LOG=off, in the same rounds (ABBA); the row\'s figures are the log-on '
        + 'server\'s. "log" is the CPU µs/req it spends beyond the log-off one, as a share of its own, measured '
        + 'in rounds of their own with both servers loaded at once (side by side, sharing their core)'
    },
    {
      id: 'id', title: 'GET /v1/pets?id={id}', charged: true,
      load: { kind: 'paths', paths: idPaths, headers },
      probe: {
        method: 'GET', path: `/v1/pets?id=${probeId}`, expectStatus: 200,
        check: (response, body) =>
          Array.isArray(body) && body.length === 1 && (body[0] as { id?: number }).id === probeId
            ? headerCheck(response, LIMIT_HEADERS)
            : 'expected a page holding the pet'
      },
      note: `a random pet of ${count} per request`
    },
    {
      id: 'list', title: 'GET /v1/pets?limit=20', charged: true,
      load: { kind: 'static', method: 'GET', path: '/v1/pets?limit=20', headers },
      probe: {
        method: 'GET', path: '/v1/pets?limit=20', expectStatus: 200,
        check: (response, body) => Array.isArray(body) && body.length === 20
          ? headerCheck(response, ['link', ...LIMIT_HEADERS])
          : 'expected a page of 20 pets'
      },
      note: `the first page of ${count}`
    },
    {
      id: 'rate_limit', title: 'GET /v1/rate_limit', charged: false,
      load: { kind: 'static', method: 'GET', path: '/v1/rate_limit', headers },
      probe: { method: 'GET', path: '/v1/rate_limit', expectStatus: 200, check: (response) => headerCheck(response, LIMIT_HEADERS) },
      note: 'key, limiter and headers, no database'
    },
    {
      id: 'orders', title: 'POST /v1/store/orders', charged: true,
      load: { kind: 'static', method: 'POST', path: '/v1/store/orders', body: orderBody, headers },
      probe: {
        method: 'POST', path: '/v1/store/orders', body: orderBody, expectStatus: 201,
        check: (response) => headerCheck(response, ['location', ...LIMIT_HEADERS])
      },
      note: 'one unit of one pet per order, each acknowledged only once durable'
    },
    {
      id: 'keyed', title: 'POST /v1/store/orders, a new Idempotency-Key each', charged: true, stockPetId: seeded.keyedPetId,
      load: { kind: 'static', method: 'POST', path: '/v1/store/orders', body: keyedBody, headers, freshIdempotencyKeys: true },
      probe: {
        method: 'POST', path: '/v1/store/orders', body: keyedBody, expectStatus: 201,
        headers: { 'idempotency-key': `bench-probe-${Date.now()}` },
        check: (response) => headerCheck(response, ['location', ...LIMIT_HEADERS])
      },
      note: 'the orders row as our TypeScript client and the MCP door send it: each order with an Idempotency-Key of its own, claimed and answered in the order\'s transaction (never a replay)'
    },
    {
      id: 'refused', title: 'POST /v1/store/orders refused at the owner\'s cap (409)', charged: true,
      load: { kind: 'static', method: 'POST', path: '/v1/store/orders', body: orderBody, headers: cappedHeaders, expectStatus: 409 },
      prepare: (base) => fillCap(base, cappedHeaders, orderBody),
      serverEnv: { ORDER_LIMITS: `enterprise=${CAPPED_OPEN_ORDERS}/10000` },
      probe: {
        method: 'POST', path: '/v1/store/orders', body: orderBody, expectStatus: 409,
        check: (_response, body) => (body as { code?: string } | null)?.code === 'order_limit_reached'
          ? null
          : `expected order_limit_reached, got ${JSON.stringify(body)}`
      },
      note: `a key holding ${CAPPED_OPEN_ORDERS.toLocaleString('en-US')} open orders, its cap, orders again (a server of its own, ORDER_LIMITS=enterprise=${CAPPED_OPEN_ORDERS}/10000): every answer 409 order_limit_reached, counted by the load script`
    },
    {
      id: 'mixed', title: `mixed: GET /v1/pets?id= on ${connections - orderers} connections, orders on ${orderers}`, charged: true,
      load: { kind: 'mixed', paths: idPaths, orderers, order: { path: '/v1/store/orders', body: orderBody }, headers },
      probe: { method: 'POST', path: '/v1/store/orders', body: orderBody, expectStatus: 201, check: (response) => headerCheck(response, ['location']) },
      note: `${connections - orderers} connections read a random pet of ${count} each, while ${orderers} order one unit at a time; p50 and p99 are the reads'`
    },
    {
      id: 'webhooks', title: 'POST /v1/store/orders, one webhook on order.*', charged: true, webhookPetId: seeded.webhookPetId,
      load: { kind: 'static', method: 'POST', path: '/v1/store/orders', body: hookedBody, headers },
      probe: {
        method: 'POST', path: '/v1/store/orders', body: hookedBody, expectStatus: 201,
        check: (response) => headerCheck(response, ['location', ...LIMIT_HEADERS])
      },
      note: 'the orders row with one endpoint subscribed to order.* at a receiver on 127.0.0.1 (a child process on the load generator\'s core) that answers 204; every order.created must reach it before the run ends'
    }
  ]
  return all.filter((s) => only.has(s.id))
}

/**
 * Places orders as the capped key until it is refused at its cap (its open orders stay open for
 * the hold time, 30 minutes: the whole scenario). Many at a time, so the run waits seconds.
 */
async function fillCap (base: string, headers: Record<string, string>, body: string): Promise<string | null> {
  const place = async (): Promise<number> => (await fetch(`${base}/v1/store/orders`, {
    method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body
  }).then(async (r) => { await r.arrayBuffer(); return r.status }))
  for (let placed = 0; placed <= CAPPED_OPEN_ORDERS; placed += 20) {
    const statuses = await Promise.all(Array.from({ length: 20 }, place))
    if (statuses.includes(409)) return null
    const wrong = statuses.find((s) => s !== 201)
    if (wrong !== undefined) return `filling the cap: an order answered ${wrong}`
  }
  return `filling the cap: ${CAPPED_OPEN_ORDERS} orders placed and none refused`
}

/** Sends the probe and checks its answer, so the load measures what the row claims. */
export async function probe (base: string, headers: Record<string, string>, p: Probe): Promise<string | null> {
  const response = await fetch(base + p.path, {
    method: p.method,
    headers: { ...headers, ...p.headers, ...(p.body !== undefined && { 'content-type': 'application/json' }) },
    ...(p.body !== undefined && { body: p.body })
  })
  const text = await response.text()
  let body: unknown = null
  try { body = JSON.parse(text) } catch { /* the check reports it */ }
  return response.status !== p.expectStatus
    ? `the probe ${p.method} ${p.path} answered ${response.status}, expected ${p.expectStatus}: ${text.slice(0, 200)}`
    : p.check(response, body)
}
