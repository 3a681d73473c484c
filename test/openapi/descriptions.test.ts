// The Markdown files of src/openapi/descriptions/ reach the document: api.md is the introduction and
// every other file is the description of the operation it names, so none is silently unused.
import assert from 'node:assert/strict'
import { readdir, readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { openApiDocument } from '../../src/cli/openapi.ts'

const DIR = new URL('../../src/openapi/descriptions/', import.meta.url)

type Doc = {
  info: { description: string }
  paths: Record<string, Record<string, { operationId: string; description?: string }>>
}

test('every file of src/openapi/descriptions/ is the API introduction or the description of an operation of the document', async () => {
  const doc = JSON.parse(await openApiDocument()) as Doc
  const operations = new Map(Object.values(doc.paths)
    .flatMap((ops) => Object.values(ops))
    .map((op) => [op.operationId, op]))
  const files = (await readdir(DIR)).sort()
  assert.ok(files.includes('api.md'))
  for (const file of files) {
    assert.match(file, /^[A-Za-z]+\.md$/)
    const text = (await readFile(new URL(file, DIR), 'utf8')).trimEnd()
    const name = file.slice(0, -'.md'.length)
    if (name === 'api') {
      assert.ok(doc.info.description.startsWith(text + '\n\n## Errors'), 'api.md opens info.description, before the error catalogue')
      continue
    }
    const operation = operations.get(name)
    assert.ok(operation, `${file} names no operation of the document`)
    // A lifecycle note (beta, experimental, deprecated) may come first; the file's text ends it.
    assert.ok(operation.description?.endsWith(text), `${file} is not the description of ${name}`)
  }
})
