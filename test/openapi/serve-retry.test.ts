// serveOpenApi (src/openapi/serve.ts) builds the served document once, on the first request, and
// keeps it; a failed build is not kept (issue 18 item 5). Compression in the thread pool cannot be
// made to fail on demand, so the test injects an entity builder that fails once.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { registerOpenApi } from '../../src/openapi/openapi.ts'
import { serveOpenApi } from '../../src/openapi/serve.ts'
import { staticEntity } from '../../src/transport/static.ts'

test('GET /openapi.json and /openapi.yaml: a failed build answers 500 once, the next request builds again and answers 200; a success is built only once', async (t) => {
  // Fault caught: the rejected promise of the first build was kept, so one failure was served
  // for the life of the process.
  const builds: string[] = []
  let failNext = 2
  const app = Fastify()
  t.after(() => app.close())
  await registerOpenApi(app)
  serveOpenApi(app, {
    entity: async (content, contentType) => {
      builds.push(contentType.split(';')[0]!)
      if (failNext-- > 0) throw new Error('zlib: insufficient memory')
      return staticEntity(content, contentType)
    }
  })
  await app.ready()
  const get = async (url: string) => (await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'identity' } }))

  assert.equal((await get('/openapi.json')).statusCode, 500)
  assert.equal((await get('/openapi.yaml')).statusCode, 500)
  const json = await get('/openapi.json')
  assert.equal(json.statusCode, 200)
  assert.equal(json.json().info.title, 'Petstore API')
  const yaml = await get('/openapi.yaml')
  assert.equal(yaml.statusCode, 200)
  assert.match(yaml.body, /^openapi: 3\.0\.3$/m)
  assert.equal((await get('/openapi.json')).statusCode, 200)
  assert.equal((await get('/openapi.yaml')).statusCode, 200)
  assert.deepEqual(builds, ['application/json', 'application/yaml', 'application/json', 'application/yaml'], 'built again after each failure, then kept')
})
