// The client's types are generated from docs/openapi.json (which test/openapi/document.test.ts keeps equal
// to what the code serves): regenerating them must give the committed src/openapi.ts.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { generateTypes, readDocument, TYPES_URL } from '../scripts/generate.ts'

test('clients/typescript/src/openapi.ts is what docs/openapi.json generates (run `npm run openapi` after changing a route)', async () => {
  const committed = await readFile(TYPES_URL, 'utf8')
  assert.ok(committed === await generateTypes(await readDocument()), 'the client types have drifted from docs/openapi.json: run npm run openapi and commit clients/typescript/src/openapi.ts')
})
