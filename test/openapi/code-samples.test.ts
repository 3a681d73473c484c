// addCodeSamples (src/openapi/code-samples.ts): every operation gets a petstore-client sample.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { addCodeSamples, CLIENT_CALLS, CLIENT_SETUP } from '../../src/openapi/code-samples.ts'

type Doc = Parameters<typeof addCodeSamples>[0]

const sample = (call: string) => [{ lang: 'TypeScript', label: 'petstore-client', source: `${CLIENT_SETUP}\n\n${call}\n` }]

/** The operation after the pass ran on a document made of it alone. */
function withSamples (method: string, path: string, operation: object): Record<string, unknown> {
  const doc = { paths: { [path]: { [method]: structuredClone(operation) } } } as Doc
  addCodeSamples(doc)
  return doc.paths[path]![method]!
}

test('an operation with a call of its own gets that call after the client setup', () => {
  assert.deepEqual(withSamples('get', '/pets', { operationId: 'listPets' }), { operationId: 'listPets', 'x-codeSamples': sample(CLIENT_CALLS.listPets!) })
})

test('any other operation gets the typed request() with its path parameters and its body example', () => {
  const operation = {
    operationId: 'banKey',
    parameters: [{ in: 'path', name: 'keyId' }, { in: 'query', name: 'dryRun' }],
    requestBody: { content: { 'application/json': { schema: { type: 'object', examples: [{ minutes: 5 }] } } } }
  }
  assert.deepEqual(withSamples('post', '/admin/keys/{keyId}/bans', operation), {
    ...operation,
    'x-codeSamples': sample('const result = await petstore.request(\'post\', \'/admin/keys/{keyId}/bans\', { path: { keyId: 1 }, body: {"minutes":5} })')
  })
})

test('the body example is the media type\'s example, else the first of its examples map, else the schema\'s', () => {
  const call = (media: object) => {
    const samples = withSamples('put', '/x', { requestBody: { content: { 'application/json': media } } })['x-codeSamples'] as { source: string }[]
    return samples[0]!.source.slice(CLIENT_SETUP.length + 2)
  }
  assert.equal(call({ example: { a: 1 }, examples: { e: { value: { a: 2 } } }, schema: { example: { a: 3 } } }), 'const result = await petstore.request(\'put\', \'/x\', { body: {"a":1} })\n')
  assert.equal(call({ examples: { e: { value: { a: 2 } } }, schema: { example: { a: 3 } } }), 'const result = await petstore.request(\'put\', \'/x\', { body: {"a":2} })\n')
  assert.equal(call({ schema: { example: { a: 3 }, examples: [{ a: 4 }] } }), 'const result = await petstore.request(\'put\', \'/x\', { body: {"a":3} })\n')
  assert.equal(call({ schema: { examples: [{ a: 4 }] } }), 'const result = await petstore.request(\'put\', \'/x\', { body: {"a":4} })\n')
  assert.equal(call({ schema: { type: 'object' } }), 'const result = await petstore.request(\'put\', \'/x\', { body: {} })\n', 'no example: an empty body')
})

test('an operation without parameters or body gets a bare request()', () => {
  assert.deepEqual(withSamples('get', '/admin/ping', {}), { 'x-codeSamples': sample('const result = await petstore.request(\'get\', \'/admin/ping\')') })
})
