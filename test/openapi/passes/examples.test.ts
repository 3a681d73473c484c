// examplesAsOpenApi30 (src/openapi/passes/examples.ts): JSON Schema `examples` arrays become
// OpenAPI 3.0 `example`.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { examplesAsOpenApi30 } from '../../../src/openapi/passes/examples.ts'

test('a schema\'s examples array becomes example, its first item, at any depth', () => {
  const response = (header: object, branch: object) => ({
    headers: { ETag: { schema: header } },
    content: { 'application/json': { schema: { oneOf: [branch] } } }
  })
  const input = {
    paths: {
      '/pets': {
        get: { responses: { 200: response({ type: 'string', examples: ['"3"', '"4"'] }, { type: 'object', examples: [{ id: 1 }] }) } }
      }
    }
  }
  assert.deepEqual(examplesAsOpenApi30(input), {
    paths: {
      '/pets': { get: { responses: { 200: response({ type: 'string', example: '"3"' }, { type: 'object', example: { id: 1 } }) } } }
    }
  })
})

test('an example already there wins over an examples array, which is dropped', () => {
  assert.deepEqual(examplesAsOpenApi30({ type: 'integer', example: 7, examples: [1, 2] }), { type: 'integer', example: 7 })
})

test('an empty examples array is dropped and adds no example', () => {
  assert.deepEqual(examplesAsOpenApi30({ type: 'integer', examples: [] }), { type: 'integer' })
})

test('an examples map (a Media Type\'s or a Parameter\'s) is left as it is', () => {
  const media = { schema: { type: 'object' }, examples: { rex: { summary: 'a dog', value: { name: 'Rex' } } } }
  assert.deepEqual(examplesAsOpenApi30(media), {
    schema: { type: 'object' },
    examples: { rex: { summary: 'a dog', value: { name: 'Rex' } } }
  })
})

test('an example value is data: an examples array inside it is copied as it is', () => {
  const schema = { type: 'object', example: { tags: { examples: ['a'] } } }
  assert.deepEqual(examplesAsOpenApi30(schema), { type: 'object', example: { tags: { examples: ['a'] } } })
})

test('the input is not changed: the pass returns a new document', () => {
  const input = { type: 'integer', examples: [1] }
  examplesAsOpenApi30(input)
  assert.deepEqual(input, { type: 'integer', examples: [1] })
})
