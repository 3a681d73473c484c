// The fuzzer: requests for every operation of the OpenAPI document (test/fuzz/arbitraries.ts)
// sent to the real app on real storage, each answer held to the contract:
// - never a 5xx;
// - the status documented for the operation, the body valid against it, the documented required
//   headers and the rate-limit headers present (the response gate, test/helpers/contract.ts);
// - the error object on every 4xx;
// - every header the answer carries is one the document declares for that status.
// `npm test` runs it with a fixed seed and a bounded count; `npm run fuzz -- --seed S --runs N`
// runs it longer (test/fuzz/main.ts) and prints the seed of any failure.
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { openPostgresTestStores } from '../helpers/stores.ts'
import { operationsOf, ruleBreakersOf, type Doc, type FuzzRequest } from './arbitraries.ts'

export interface FuzzOptions {
  seed: number
  runs: number
  /** The storage engine; absent: the one PETSTORE_TEST_ENGINE names (SQLite by default). */
  engine?: 'sqlite' | 'postgres'
}
export interface FuzzReport {
  operations: number
  requests: number
  byStatus: Record<string, number>
  serverErrors: number
  /**
   * Requests that broke a documented rule on purpose (a non-decimal integer, a control
   * character), each answered 400.
   */
  ruleBreakers: number
}

/** Headers of the transport (and CORS) that the document does not describe per operation. */
const TRANSPORT_HEADERS = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding', 'vary',
  'access-control-allow-origin', 'access-control-expose-headers'])

type Responses = Record<string, { headers?: Record<string, unknown> }>

/** Seeds a few records of every kind so that fitting requests reach real rows (ids 1 to 6). */
async function seed (test: TestApp): Promise<void> {
  const json = { 'content-type': 'application/json' }
  for (const name of ['Dogs', 'Cats', 'Birds']) {
    await test.call({ method: 'POST', url: '/v1/categories', headers: json, payload: JSON.stringify({ name }), role: 'staff' })
  }
  for (let i = 1; i <= 6; i++) {
    await test.call({
      method: 'POST',
      url: '/v1/pets',
      headers: json,
      payload: JSON.stringify({ name: `Pet ${i}`, categoryId: 1 + (i % 3) }),
      role: 'staff'
    })
    await test.call({ method: 'PUT', url: `/v1/store/inventory/${i}`, headers: json, payload: JSON.stringify({ quantity: 50 }), role: 'staff' })
  }
  for (let i = 1; i <= 3; i++) {
    await test.call({ method: 'POST', url: '/v1/store/orders', headers: json, payload: JSON.stringify({ petId: i, quantity: 1 }), role: 'customer' })
  }
  // Keys 4 to 6 are there for the admin operations to work on.
  for (let i = 0; i < 3; i++) await test.makeKey('customer', 'pro')
}

const REQUEST_DEADLINE_MS = 10_000

export async function runFuzz (t: TestContext, options: FuzzOptions): Promise<FuzzReport> {
  const test = options.engine === 'postgres'
    ? await buildTestApp(t, { stores: await openPostgresTestStores(t) })
    : await buildTestApp(t)
  await seed(test)
  // The fuzzer's own keys come last, so that the generated key ids (mostly 1 to 6) do not
  // revoke it or take away its role halfway through.
  const fuzzer = await test.makeKey('admin')
  const customer = await test.makeKey('customer')
  const doc = structuredClone(test.app.swagger()) as unknown as Doc
  const operations = operationsOf(doc)
  const breakers = ruleBreakersOf(doc)
  const report: FuzzReport = {
    operations: operations.length,
    requests: 0,
    byStatus: {},
    serverErrors: 0,
    ruleBreakers: 0
  }
  const documentedPaths = Object.keys(doc.paths).map((path) => ({ path, pattern: new RegExp('^/v1' + path.replace(/\{[^}]+\}/g, '[^/]+') + '$') }))

  // About one request in five breaks a documented rule on purpose (ruleBreakersOf).
  const anyRequest = fc.oneof(
    { weight: 4, arbitrary: fc.oneof(...operations.map((o) => o.arbitrary)) },
    { weight: 1, arbitrary: fc.oneof(...breakers.map((o) => o.arbitrary)) })
  const property = fc.asyncProperty(anyRequest, async (request: FuzzRequest) => {
    // Time passes (a second a request), so that windows reset and anonymous callers get served too.
    test.clock.advance(1000)
    const key = request.caller === 'admin' ? fuzzer.key : request.caller === 'customer' ? customer.key : null
    // A request that never ends is worse than a 5xx: each has a deadline, and the one that passes it is named.
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const what = `${request.method} ${request.url.slice(0, 200)} ${JSON.stringify(request.headers).slice(0, 300)}`
        reject(new Error(`${what} ${String(request.payload).slice(0, 300)}: no answer within ${REQUEST_DEADLINE_MS} ms`))
      }, REQUEST_DEADLINE_MS)
    })
    const response = await Promise.race([test.call({
      method: request.method as 'GET',
      url: request.url,
      headers: request.headers,
      key,
      ...(request.payload !== undefined && { payload: request.payload })
    }), deadline]).finally(() => { clearTimeout(timer) })
    report.requests++
    // A self-rotation may stop the key that asked at once (gracePeriodSeconds 0): go on with its successor.
    if (request.operationId === 'rotateMyApiKey' && response.statusCode === 201) {
      const successor = (response.json() as { key: string }).key
      if (request.caller === 'admin') fuzzer.key = successor
      else if (request.caller === 'customer') customer.key = successor
    }
    report.byStatus[response.statusCode] = (report.byStatus[response.statusCode] ?? 0) + 1
    const where = `${request.method} ${request.url.slice(0, 200)} -> ${response.statusCode}`
    if (response.statusCode >= 500) report.serverErrors++
    assert.ok(response.statusCode < 500, `${where}: a client's request caused ${response.body.slice(0, 300)}`)
    if (response.statusCode >= 400) {
      const body = response.json() as { code?: unknown; message?: unknown; status?: unknown }
      assert.equal(typeof body.code, 'string', `${where}: no error code`)
      assert.equal(typeof body.message, 'string', `${where}: no error message`)
      assert.equal(body.status, response.statusCode, `${where}: the error's status differs`)
    }
    if (request.expect !== undefined) {
      report.ruleBreakers++
      const body = response.json() as { code?: unknown; details?: { path: string }[] }
      // A sunset operation answers 410 before it validates anything (docs/product.md section 6).
      if (body.code !== 'operation_sunset') {
        assert.equal(response.statusCode, request.expect.status, `${where}: ${request.expect.path} breaks a rule: ${response.body.slice(0, 300)}`)
        assert.equal(body.code, 'validation_failed', where)
        assert.ok(
          body.details?.some((d) => d.path === request.expect!.path),
          `${where}: the details do not name ${request.expect.path}: ${response.body.slice(0, 300)}`
        )
      }
    }
    checkHeadersDocumented(doc, documentedPaths, request, response, where)
  })
  await fc.assert(property, { seed: options.seed, numRuns: options.runs, endOnFailure: true })
  return report
}

export function checkHeadersDocumented (
  doc: Doc,
  paths: { path: string; pattern: RegExp }[],
  request: FuzzRequest,
  response: LightMyRequestResponse,
  where: string
): void {
  const path = request.url.split('?', 1)[0] ?? ''
  const match = paths.find((p) => p.pattern.test(path))
  const operation = match === undefined
    ? undefined
    : (doc.paths[match.path]?.[request.method.toLowerCase()] as { responses?: Responses } | undefined)
  if (operation?.responses === undefined) return // 404/405 of unknown paths: the gate checks their body
  const declared = operation.responses[String(response.statusCode)]?.headers ?? {}
  const names = new Set(Object.keys(declared).map((name) => name.toLowerCase()))
  for (const header of Object.keys(response.headers)) {
    const name = header.toLowerCase()
    if (TRANSPORT_HEADERS.has(name)) continue
    assert.ok(names.has(name), `${where}: the ${name} header is sent but not documented for ${request.method} ${match!.path} ${response.statusCode}`)
  }
}
