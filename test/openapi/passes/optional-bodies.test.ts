// markOptionalBodies (src/openapi/passes/optional-bodies.ts): the x-optional-body mark the
// onRoute hook leaves becomes requestBody.required false.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { markOptionalBodies } from '../../../src/openapi/passes/optional-bodies.ts'
import type { OpenApiDocument } from '../../../src/openapi/types.ts'

const body = () => ({ required: true, content: { 'application/json': { schema: { type: 'object' } } } })

test('an operation marked x-optional-body gets requestBody.required false and loses the mark', () => {
  const doc: OpenApiDocument = {
    paths: { '/orders/{orderId}': { patch: { 'x-optional-body': true, requestBody: body(), responses: {} } } },
    components: {}
  }
  markOptionalBodies(doc)
  assert.deepEqual(doc.paths, { '/orders/{orderId}': { patch: { requestBody: { ...body(), required: false }, responses: {} } } })
})

test('an operation without the mark keeps its required body', () => {
  const doc: OpenApiDocument = { paths: { '/pets': { post: { requestBody: body(), responses: {} } } }, components: {} }
  markOptionalBodies(doc)
  assert.deepEqual(doc.paths, { '/pets': { post: { requestBody: body(), responses: {} } } })
})

test('a mark on an operation without a body is removed and adds no body', () => {
  const doc: OpenApiDocument = { paths: { '/pets': { get: { 'x-optional-body': true, responses: {} } } }, components: {} }
  markOptionalBodies(doc)
  assert.deepEqual(doc.paths, { '/pets': { get: { responses: {} } } })
})
