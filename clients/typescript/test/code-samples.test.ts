// The reference docs show every operation called with this client (x-codeSamples, added by
// src/openapi/code-samples.ts). Each sample must call something the client has: a resource method,
// or request() with a method and path of the document.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { createPetstoreClient } from '../src/index.ts'

type Sample = { lang: string; label: string; source: string }
type Doc = { paths: Record<string, Record<string, { operationId: string; 'x-codeSamples'?: Sample[] }>> }

test('every operation of docs/openapi.json has a petstore-client sample that calls an existing client method or operation', async () => {
  const doc = JSON.parse(await readFile(new URL('../../../docs/openapi.json', import.meta.url), 'utf8')) as Doc
  const client = createPetstoreClient({ baseUrl: 'http://127.0.0.1:3000/v1', apiKey: 'unused' }) as unknown as Record<string, Record<string, unknown>>
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const where = `${method.toUpperCase()} ${path} (${operation.operationId})`
      const samples = operation['x-codeSamples']
      assert.equal(samples?.length, 1, `${where}: one sample`)
      const { lang, label, source } = samples[0]!
      assert.deepEqual({ lang, label }, { lang: 'TypeScript', label: 'petstore-client' })
      assert.match(source, /^import \{ createPetstoreClient \} from 'petstore-client'\n/, where)
      const calls = [...source.matchAll(/petstore\.(\w+)(?:\.(\w+))?\(/g)]
      assert.ok(calls.length > 0, `${where}: calls the client`)
      for (const [, resource, name] of calls) {
        const target = name === undefined ? client[resource!] : client[resource!]?.[name]
        assert.equal(typeof target, 'function', `${where}: petstore.${resource}${name === undefined ? '' : '.' + name} is not a client method`)
      }
      for (const [, m, p] of source.matchAll(/petstore\.request\('(\w+)', '([^']+)'/g)) {
        assert.ok(doc.paths[p!]?.[m!] !== undefined, `${where}: request('${m}', '${p}') names no operation`)
      }
    }
  }
})
