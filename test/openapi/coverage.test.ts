// Route x status coverage: every operation of the document is sent every failure the error
// handler can turn into a status without knowing the operation's business rules: a malformed
// query, body or URL (400), no key or a bad one (401), a lesser role (403), a missing record
// (404), a stale If-Match (412), an oversized or non-JSON body (413, 415), an exhausted quota
// (429), a sunset (410), a failing or unreachable database (500, 503). Every answer goes through
// the response gate (test/helpers/contract.ts), which fails when its status is not among that
// operation's documented responses, or its body or headers do not match. The business statuses
// (409, 422) are provoked by each resource's own tests, through the same gate.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { ServiceUnavailableError } from '../../src/errors.ts'
import { loadSampleData, loadSampleKeysAndOrders } from '../../src/sample-data.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { PORTS, type Stores } from '../../src/storage/stores.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'
import { openTestStores } from '../helpers/stores.ts'
import { exampleRequest, loadDoc, operations, type ExampleRequest } from './requests.ts'

async function sampleApp (
  t: TestContext,
  options: { env?: Record<string, string>; stores?: (stores: Stores) => Stores } = {}
): Promise<TestApp> {
  const stores = await openTestStores(t)
  assert.equal(await loadSampleData(stores), true)
  await loadSampleKeysAndOrders(stores, manualClock(T0))
  // The app gets the (possibly failing) stores; the helper makes its keys on the real ones.
  return buildTestApp(t, {
    stores,
    ...(options.stores !== undefined && { deps: { stores: options.stores(stores) } }),
    ...(options.env !== undefined && { env: options.env })
  })
}

const withQuery = (url: string, extra: string) => url + (url.includes('?') ? '&' : '?') + extra

/** Each failure, as a change to the operation's example request, with the status it must get. */
const FAILURES: {
  name: string
  status: number
  applies: (r: ExampleRequest) => boolean
  change: (r: ExampleRequest) => ExampleRequest & { key?: null | string }
}[] = [
  { name: 'an unknown query parameter', status: 400, applies: () => true, change: (r) => ({ ...r, url: withQuery(r.url, 'colour=brown') }) },
  { name: 'malformed percent-encoding in the query', status: 400, applies: () => true, change: (r) => ({ ...r, url: withQuery(r.url, 'limit=%zz') }) },
  { name: 'a body where none is taken, or malformed JSON where one is', status: 400, applies: () => true, change: (r) => ({ ...r, headers: { ...r.headers, 'content-type': 'application/json' }, payload: '{"unclosed":' }) },
  { name: 'no API key', status: 401, applies: () => true, change: (r) => ({ ...r, key: null }) },
  { name: 'an unknown API key', status: 401, applies: () => true, change: (r) => ({ ...r, key: 'psk_unknown' }) },
  {
    name: 'a body larger than 64 KiB',
    status: 413,
    applies: (r) => r.payload !== undefined,
    change: (r) => ({ ...r, payload: JSON.stringify({ name: 'x'.repeat(70_000) }) })
  },
  {
    name: 'a body that is not JSON',
    status: 415,
    applies: (r) => r.payload !== undefined,
    change: (r) => ({ ...r, headers: { ...r.headers, 'content-type': 'text/plain' }, payload: 'hello' })
  },
  {
    name: 'a stale If-Match',
    status: 412,
    applies: (r) => r.headers['if-match'] !== undefined,
    change: (r) => ({ ...r, headers: { ...r.headers, 'if-match': '"999"' } })
  },
  { name: 'an id that names no record', status: 404, applies: (r) => /\/v1\/[a-z/_]+\/\d+/.test(r.url), change: (r) => ({ ...r, url: r.url.replace(/(\/v1\/[a-z/_]+\/)\d+/, '$1999999') }) }
]

test('every operation answers every request-level failure with a status its responses document', async (t) => {
  const doc = await loadDoc()
  const h = await sampleApp(t)
  const missed: string[] = []
  for (const { path, method, op } of operations(doc)) {
    const base = exampleRequest(doc, path, method, op)
    // A fresh minute per operation: the anonymous requests of every operation share one client
    // address, whose minute quota the whole loop would otherwise exhaust.
    h.clock.advance(60_000)
    // An operation that needs no key (`security: []`, POST /keys/leaked) serves a request without one.
    const needsKey = !(Array.isArray(op.security) && op.security.length === 0)
    for (const failure of FAILURES.filter((f) => f.applies(base) && (needsKey || f.status !== 401))) {
      const { key, ...request } = failure.change(base)
      // call() runs the gate: an undocumented status, body or header fails right here.
      const res = await h.call({ ...request, ...(key !== undefined ? { key } : { role: 'admin' }) })
      if (res.statusCode !== failure.status) {
        missed.push(`${op.operationId} with ${failure.name}: expected ${failure.status}, got ${res.statusCode} ${res.body.slice(0, 120)}`)
      }
    }
    // A role below the operation's: the customer key gets 403 exactly where a role above customer is required.
    const asCustomer = await h.call({ ...base, role: 'customer' })
    assert.ok(asCustomer.statusCode !== 403 || doc.paths[path]![method]!.responses['403'] !== undefined, `${op.operationId}: 403 undocumented`)
  }
  assert.deepEqual(missed, [], 'failures that did not produce their status')
})

test('every operation answers 429 with Retry-After once its caller\'s quota is used up', async (t) => {
  const doc = await loadDoc()
  const h = await sampleApp(t)
  for (const { path, method, op } of operations(doc)) {
    // Cost no quota by design: the windows, and the key's own request log.
    if (op.operationId === 'getRateLimit' || op.operationId === 'listMyApiKeyRequests') continue
    const { key } = await h.makeKey('admin', 'enterprise', { perMinute: 1, perDay: 1000 })
    const request = exampleRequest(doc, path, method, op)
    await h.call({ ...request, key })
    const limited = await h.call({ ...request, key })
    assert.equal(limited.statusCode, 429, op.operationId)
    assert.equal(limited.json().code, 'rate_limited')
  }
})

/** Stores whose resource methods all throw `make()`; the key lookups of authentication still work. */
function failingStores (stores: Stores, make: () => Error, keep: Set<string>): Stores {
  const failing = <T extends object>(store: T, name: string): T => new Proxy(store, {
    get (target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown
      if (typeof value !== 'function' || keep.has(`${name}.${String(property)}`)) return value
      return () => Promise.reject(make())
    }
  })
  // Every port of the engines' list, so a new port fails here too without naming it.
  const ports = Object.keys(PORTS).map((name) => [name, failing(stores[name as keyof typeof PORTS], name)])
  return Object.assign(Object.create(stores) as Stores, Object.fromEntries(ports))
}

/** The key store methods a request calls before its handler (authentication, usage). */
async function accessMethods (t: TestContext): Promise<Set<string>> {
  const used = new Set<string>()
  const h = await sampleApp(t, {
    stores: (stores) => Object.assign(Object.create(stores) as Stores, {
      keys: new Proxy(stores.keys, {
        get (target, property, receiver) {
          const value = Reflect.get(target, property, receiver) as unknown
          if (typeof value !== 'function') return value
          return (...args: unknown[]) => {
            used.add(`keys.${String(property)}`)
            return (value as (...a: unknown[]) => unknown).apply(target, args)
          }
        }
      })
    })
  })
  used.clear()
  assert.equal((await h.call({ method: 'GET', url: '/v1/rate_limit' })).statusCode, 200)
  return used
}

for (const [status, make] of [[500, () => new Error('disk I/O error')], [503, () => new ServiceUnavailableError('the database is unreachable')]] as const) {
  test(`every operation that reads or writes the database answers ${status} with a documented body when the database fails`, async (t) => {
    const doc = await loadDoc()
    const keep = await accessMethods(t)
    const h = await sampleApp(t, { stores: (stores) => failingStores(stores, make, keep) })
    for (const { path, method, op } of operations(doc)) {
      // Read no store: the access decision, and the event catalogue (code).
      if (op.operationId === 'getRateLimit' || op.operationId === 'listEventTypes') continue
      // Reads only what authentication reads (findKeyByHash), kept working here;
      // test/keys/leaked-keys.http.test.ts fails it.
      if (op.operationId === 'reportLeakedKeys') continue
      const res = await h.call(exampleRequest(doc, path, method, op))
      assert.equal(res.statusCode, status, `${op.operationId}: ${res.body.slice(0, 200)}`)
    }
  })
}

test('the deprecated GET /v1/pets/{petId} answers 410 operation_sunset after its sunset, as documented', async (t) => {
  const doc = await loadDoc()
  const h = await sampleApp(t, { env: { PETSTORE_GET_PET_SUNSET: '2026-01-01T00:00:00Z' } })
  const getPet = operations(doc).find((o) => o.op.operationId === 'getPet')!
  const res = await h.call(exampleRequest(doc, getPet.path, getPet.method, getPet.op))
  assert.equal(res.statusCode, 410)
  assert.equal(res.json().code, 'operation_sunset')
})
