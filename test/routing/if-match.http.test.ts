// If-Match is a declared parameter of every operation that answers 412, so a client generated
// from the document (openapi-typescript: clients/typescript/src/openapi.ts) sends it through
// its typed parameters, without a cast. The type checks below fail `npm run typecheck` when an
// operation loses the header; the test sends the typed headers for real.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { operations } from '../../clients/typescript/src/openapi.ts'
import { openApiDocument } from '../../src/cli/openapi.ts'
import { buildTestApp } from '../helpers/app.ts'

/** The operations that document 412 precondition_failed. */
const IF_MATCH_OPERATIONS = ['replacePet', 'updatePet', 'deletePet', 'replaceCategory', 'deleteCategory', 'updateOrder', 'cancelOrder', 'setInventory', 'updateApiKey', 'revokeApiKey'] as const
type IfMatchOperation = typeof IF_MATCH_OPERATIONS[number]

/** The typed header parameters of an operation, as openapi-typescript generates them. */
type HeaderOf<O extends keyof operations> = NonNullable<operations[O]['parameters']['header']>

// Compile-time: each of them takes `if-match` as a string, and nothing else takes a number.
type WithIfMatch = {
  [O in keyof operations]: [HeaderOf<O>] extends [never]
    ? never
    : HeaderOf<O> extends { 'if-match'?: string } ? ('if-match' extends keyof HeaderOf<O> ? O : never) : never
}[keyof operations]
const everyOneDeclaresIt: [Exclude<IfMatchOperation, WithIfMatch>] extends [never] ? true : false = true
// @ts-expect-error an ETag is a string
const wrongType: HeaderOf<'replacePet'> = { 'if-match': 3 }
void [everyOneDeclaresIt, wrongType]

test('every operation that documents 412 declares the If-Match header, and only those', async () => {
  const doc = JSON.parse(await openApiDocument()) as {
    paths: Record<string, Record<string, {
      operationId: string
      parameters?: { in: string; name: string }[]
      responses: Record<string, unknown>
    }>>
  }
  const withHeader: string[] = []
  const with412: string[] = []
  for (const operations of Object.values(doc.paths)) {
    for (const op of Object.values(operations)) {
      if (op.parameters?.some((p) => p.in === 'header' && p.name.toLowerCase() === 'if-match') === true) withHeader.push(op.operationId)
      if (op.responses['412'] !== undefined) with412.push(op.operationId)
    }
  }
  assert.deepEqual(withHeader.sort(), [...IF_MATCH_OPERATIONS].sort())
  assert.deepEqual(with412.sort(), [...IF_MATCH_OPERATIONS].sort())
})

test('PUT /v1/pets/{petId} with a typed If-Match answers 412 precondition_failed when stale and 200 when current', async (t) => {
  const { call } = await buildTestApp(t)
  const category = (await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })).json().id
  const created = await call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: category } })
  const stale: HeaderOf<'replacePet'> = { 'if-match': '"7"' }
  const refused = await call({ method: 'PUT', url: '/v1/pets/1', headers: stale, payload: { name: 'Max', categoryId: category } })
  assert.equal(refused.statusCode, 412)
  assert.equal(refused.json().code, 'precondition_failed')
  const current: HeaderOf<'replacePet'> = { 'if-match': String(created.headers.etag) }
  const replaced = await call({ method: 'PUT', url: '/v1/pets/1', headers: current, payload: { name: 'Max', categoryId: category } })
  assert.equal(replaced.statusCode, 200)
  assert.deepEqual(replaced.json(), { id: 1, name: 'Max', categoryId: category, status: 'available' })
})
