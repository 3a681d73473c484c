// Traces carry no key (issue 48 finding 8), against the real OTLP/HTTP receiver: a `petstore serve`
// process is sent keys where a careless or hostile client puts them (the query string, a path
// segment spelt with escapes, a secret-looking parameter, a filter's value, an MCP tool's
// argument), and not one reaches the receiver: the URL attributes are redacted as the log lines
// are, and so is every other text.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { cleanupStack, pollUntil, startServerProcess } from '../helpers/server.ts'
import { TEST_ENGINE } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'
import { requireServices, schemaDatabaseUrl } from '../scale/helpers.ts'
import { startOtlpReceiver } from './otlp-receiver.ts'

const SERVER = 2

test('a key sent in the URL, escaped in the path or as a tool\'s argument never reaches the trace exporter; URL attributes are redacted like the logs', { timeout: 90_000 }, async (t) => {
  if (TEST_ENGINE === 'postgres' && !await requireServices(t, ['postgres'])) return
  const cleanup = cleanupStack(t)
  const dir = tempDir(t)
  const receiver = await startOtlpReceiver(t)
  const databaseUrl = TEST_ENGINE === 'postgres' ? (await schemaDatabaseUrl(t)).url() : `sqlite:${join(dir, 'p.db')}`
  const keysFile = join(dir, 'keys.txt')
  const server = await startServerProcess(cleanup, {
    DATABASE_URL: databaseUrl,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100'
  }, ['--sample-data', '--keys-file', keysFile])
  const keys = Object.fromEntries([...(await readFile(keysFile, 'utf8')).matchAll(/^\s+(customer|staff|admin)\s+(psk_\S+)$/gm)].map((m) => [m[1]!, m[2]!]))
  const key = keys.customer!
  const escaped = `%70${key.slice(1)}`
  const get = async (path: string) => { await (await fetch(`${server.url}${path}`, { headers: { 'x-api-key': key } })).arrayBuffer() }

  await get(`/v1/pets?api_key=${key}`) // refused with 400, but a request with that URL all the same
  await get(`/v1/pets/${escaped}`)
  await get(`/v1/pets?limit=1&token=s3cret-token`)
  await get(`/v1/pets?name=${key}`)
  const agent = new Client({ name: 'petstore-redaction-test', version: '1.0.0' })
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { 'x-api-key': key } } }))
  t.after(() => agent.close())
  await agent.callTool({ name: 'listPets', arguments: { name: key } })

  const serverSpan = (query: RegExp) => receiver.spans.find((s) => s.kind === SERVER
    && query.test(String(s.attributes['url.query'] ?? s.attributes['url.path'])))
  const { value: spans } = await pollUntil(async () => {
    const done = receiver.spans.some((s) => s.name === 'tools/call listPets') && serverSpan(/^name=/) !== undefined
      && serverSpan(/^api_key=/) !== undefined && serverSpan(/^\/v1\/pets\/\[redacted\]$/) !== undefined
    return done ? receiver.spans : undefined
  }, { timeoutMs: 10_000, intervalMs: 100, message: `spans missing; received: ${receiver.spans.map((s) => s.name).join(', ')}` })

  assert.equal(serverSpan(/^api_key=/)!.attributes['url.query'], 'api_key=[redacted]')
  assert.equal(serverSpan(/^\/v1\/pets\/\[redacted\]$/)!.attributes['url.path'], '/v1/pets/[redacted]')
  assert.equal(serverSpan(/token=/)!.attributes['url.query'], 'limit=1&token=[redacted]')
  assert.equal(serverSpan(/^name=/)!.attributes['url.query'], 'name=[redacted]')
  // The tool call's own request (app.inject) too: @fastify/otel's span of it names its URL.
  const inner = spans.filter((s) => String(s.attributes['url.path'] ?? '').startsWith('/v1/pets?name='))
  assert.ok(inner.length > 0, 'the operation of the tool call is traced with its URL')
  assert.deepEqual(inner.map((s) => s.attributes['url.path']), inner.map(() => '/v1/pets?name=[redacted]'))

  const text = JSON.stringify(spans)
  assert.doesNotMatch(text, /psk_/i)
  assert.doesNotMatch(text, /%70sk|s3cret-token/i)
  assert.equal(await server.stop(), 0)
})
