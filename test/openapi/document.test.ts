// The OpenAPI document: committed copy up to date, extensions present, every operation complete.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { main } from '../../src/cli/main.ts'
import { openApiDocument } from '../../src/cli/openapi.ts'
import { CONTACT, TAGS, TAG_GROUPS } from '../../src/openapi/openapi.ts'
import { checkResponse, gateStats } from '../helpers/contract.ts'
import { buildTestApp } from '../helpers/app.ts'
import { memoryIo } from '../helpers/io.ts'

type Operation = {
  operationId?: string
  tags?: string[]
  responses: Record<string, { description: string }>
  deprecated?: boolean
  description?: string
  [k: string]: unknown
}
type Doc = {
  openapi: string
  info: { version: string }
  paths: Record<string, Record<string, Operation>>
  tags: { name: string }[]
  'x-tagGroups': { name: string; tags: string[] }[]
}

test('docs/openapi.json is the document the code generates (run `npm run openapi` after changing a route)', async () => {
  const committed = await readFile(new URL('../../docs/openapi.json', import.meta.url), 'utf8')
  assert.equal(committed, await openApiDocument(), 'docs/openapi.json has drifted from the code: run npm run openapi')
})

test('the document is OpenAPI 3.0.3, version 1.0.0, and every operation has an id, a tag in a group and its responses', async () => {
  const doc = JSON.parse(await openApiDocument()) as Doc
  assert.equal(doc.openapi, '3.0.3')
  assert.equal(doc.info.version, '1.0.0')
  const grouped = new Set(doc['x-tagGroups'].flatMap((g) => g.tags))
  const groupNames = new Set(doc['x-tagGroups'].map((g) => g.name))
  assert.ok(groupNames.has('Pets') && groupNames.has('Store'))
  for (const tag of doc.tags) assert.ok(grouped.has(tag.name), `tag ${tag.name} sits in no group`)
  const ids = new Set<string>()
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const where = `${method.toUpperCase()} ${path}`
      assert.ok(op.operationId !== undefined && !ids.has(op.operationId), `${where}: missing or duplicate operationId`)
      ids.add(op.operationId)
      assert.ok(op.tags !== undefined && op.tags.length > 0, `${where}: no tag`)
      for (const tag of op.tags) {
        assert.ok(grouped.has(tag), `${where}: tag ${tag} is in no group`)
        assert.ok(!groupNames.has(tag), `${where}: tagged with the group name ${tag}`)
      }
      // An operation that needs no key (`security: []`, POST /keys/leaked) never answers 401.
      const needsKey = !(Array.isArray(op.security) && op.security.length === 0)
      for (const status of needsKey ? ['401', '429', '500', '503'] : ['429', '500', '503']) assert.ok(op.responses[status] !== undefined, `${where}: ${status} undocumented`)
      if (!needsKey) assert.equal(op.responses['401'], undefined, `${where}: needs no key, yet documents 401`)
    }
  }
  assert.deepEqual(doc['x-tagGroups'], TAG_GROUPS)
})

test('GET /pets/{petId} is deprecated in the document, with its sunset date in the description and a badge', async () => {
  const doc = JSON.parse(await openApiDocument()) as Doc
  const op = doc.paths['/pets/{petId}']!.get!
  assert.equal(op.deprecated, true)
  assert.match(op.description!, /2027-05-21/)
  assert.deepEqual(op['x-badges'], [{ name: 'Sunset 2027-05-21', label: 'Sunset 2027-05-21', color: '#b58105', position: 'after' }])
  assert.ok(op.responses['410'] !== undefined, '410 operation_sunset is documented')
  assert.equal(
    Object.values(doc.paths).flatMap((ops) => Object.values(ops)).filter((o) => o.deprecated === true).length,
    1
  )
})

test('the served /openapi.json and /openapi.yaml are the same document', async (t) => {
  const { app } = await buildTestApp(t)
  const json = await app.inject({ method: 'GET', url: '/openapi.json' })
  assert.equal(json.statusCode, 200)
  assert.match(String(json.headers['content-type']), /application\/json/)
  assert.deepEqual(json.json(), JSON.parse(await openApiDocument()))
  const yaml = await app.inject({ method: 'GET', url: '/openapi.yaml' })
  assert.equal(yaml.statusCode, 200)
  assert.match(yaml.body, /^openapi: 3\.0\.3/m)
})

test('the response gate fails a response the document does not allow', async (t) => {
  const { app, call } = await buildTestApp(t)
  const good = await call({ method: 'GET', url: '/v1/pets' })
  assert.equal(good.statusCode, 200)
  const forged = (status: number, body: string, drop?: string) => {
    const headers = { ...good.headers }
    if (drop !== undefined) delete headers[drop]
    return { ...good, statusCode: status, body, headers } as typeof good
  }
  const request = { method: 'GET' as const, url: '/v1/pets' }
  assert.doesNotThrow(() => checkResponse(app, request, good))
  assert.throws(() => checkResponse(app, request, forged(418, good.body)), /not documented/)
  assert.throws(() => checkResponse(app, request, forged(200, '[{"id":"1"}]')), /does not match/)
  assert.throws(() => checkResponse(app, request, forged(200, good.body, 'x-ratelimit-reset')), /x-ratelimit-reset/)
  assert.ok(gateStats.checked > 0)
})

test('the document names its contact, lists its tags in the order of their groups, and declares both key schemes as alternatives', async () => {
  const doc = JSON.parse(await openApiDocument()) as Doc & {
    info: { contact: unknown }
    security: unknown
    components: { securitySchemes: Record<string, unknown> }
  }
  assert.deepEqual(doc.info.contact, CONTACT)
  assert.ok(CONTACT.name !== '' && CONTACT.url.startsWith('https://') && CONTACT.email.includes('@'))
  assert.deepEqual(doc.tags.map((t) => t.name), TAG_GROUPS.flatMap((g) => g.tags))
  assert.deepEqual(doc.tags, TAGS)
  assert.deepEqual(doc.security, [{ ApiKeyAuth: [] }, { BearerAuth: [] }])
  assert.deepEqual(Object.keys(doc.components.securitySchemes), ['ApiKeyAuth', 'BearerAuth'])
})

test('the enterprise rule is a oneOf on plan with a discriminator mapping generators understand', async () => {
  const doc = JSON.parse(await openApiDocument()) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>
  }
  assert.deepEqual(doc.paths['/admin/keys']!.post!.requestBody!.content['application/json']!.schema, {
    type: 'object',
    oneOf: [{ $ref: '#/components/schemas/NewPlanApiKey' }, { $ref: '#/components/schemas/NewEnterpriseApiKey' }],
    discriminator: {
      propertyName: 'plan',
      mapping: { free: '#/components/schemas/NewPlanApiKey', pro: '#/components/schemas/NewPlanApiKey', business: '#/components/schemas/NewPlanApiKey', enterprise: '#/components/schemas/NewEnterpriseApiKey' }
    },
    description: 'perMinute and perDay are required for the enterprise plan and refused for the others; perMinute may not exceed perDay.'
  })
})

test('every id parameter is an int64 from 1 to 2^53-1', async () => {
  const doc = JSON.parse(await openApiDocument()) as {
    paths: Record<string, Record<string, {
      parameters?: { name: string; in: string; schema: Record<string, unknown> }[]
    }>>
  }
  let seen = 0
  for (const operations of Object.values(doc.paths)) {
    for (const op of Object.values(operations)) {
      for (const p of op.parameters ?? []) {
        // Event, webhook and attempt ids are opaque strings (evt_…, wh_…, att_…), not row ids; so
        // is the audit log's targetId, which names a key, a pet … or a webhook; and the request
        // log's filters name an operation (operationId) and a Request-Id (any visible text).
        const named = ['eventId', 'webhookId', 'attemptId', 'targetId', 'operationId', 'requestId']
        if (!/(^id$|Id$)/.test(p.name) || named.includes(p.name)) continue
        seen++
        const schema = (p.schema.type === 'array' ? p.schema.items : p.schema) as Record<string, unknown>
        assert.deepEqual(
          { type: schema.type, format: schema.format, minimum: schema.minimum, maximum: schema.maximum },
          { type: 'integer', format: 'int64', minimum: 1, maximum: 9007199254740991 },
          p.name
        )
      }
    }
  }
  assert.ok(seen > 10)
})

test('petstore openapi --server URL prints the document with that absolute server; a relative URL is refused', async () => {
  const io = memoryIo({})
  const { lines, errors } = io
  assert.equal(await main(['openapi', '--server', 'http://127.0.0.1:3000'], io), 0)
  assert.deepEqual(JSON.parse(lines.join('\n')).servers, [{ url: 'http://127.0.0.1:3000/v1', description: 'The API' }])
  lines.length = 0
  assert.equal(await main(['openapi', '--server', 'https://api.example/v1/'], io), 0)
  assert.deepEqual(JSON.parse(lines.join('\n')).servers, [{ url: 'https://api.example/v1', description: 'The API' }])
  assert.equal(await main(['openapi', '--server', '/v1'], io), 2)
  assert.deepEqual(errors, ['petstore openapi: --server must be an absolute http(s) URL such as http://127.0.0.1:3000, not "/v1"'])
})
