// The spans of the MCP endpoint (issue 49 section 1), against the real OTLP/HTTP receiver: a
// `petstore serve` process traces each tool call as one SERVER span named for MCP (`tools/call
// listPets`) with the MCP semantic conventions' attributes, under the /mcp request's span (which
// keeps its own name), and the operation it ran as a child named like a server span (`GET
// /v1/pets`) with its real status and the access decision: a 429 given to the agent is refused
// there, consistent with its event, whose status is the one answered (never 0). An agent's own
// trace context in `params._meta` is the tool call's parent, the HTTP request a link.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { cleanupStack, pollUntil, startServerProcess } from '../helpers/server.ts'
import { TEST_ENGINE } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'
import { requireServices, schemaDatabaseUrl } from '../scale/helpers.ts'
import { startOtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts'

const INTERNAL = 1
const SERVER = 2
const ERROR = 2

test('a tool call is one MCP span with the conventions\' attributes, its operation a child with its real status and access decision; a 429 is refused there', { timeout: 120_000 }, async (t) => {
  if (TEST_ENGINE === 'postgres' && !await requireServices(t, ['postgres'])) return
  const cleanup = cleanupStack(t)
  const dir = tempDir(t)
  const receiver = await startOtlpReceiver(t)
  const databaseUrl = TEST_ENGINE === 'postgres' ? (await schemaDatabaseUrl(t)).url() : `sqlite:${join(dir, 'p.db')}`
  const keysFile = join(dir, 'keys.txt')
  const server = await startServerProcess(cleanup, {
    DATABASE_URL: databaseUrl,
    MCP_REPEAT_LIMIT: '1000',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100'
  }, ['--sample-data', '--keys-file', keysFile])
  const customer = /^\s+customer\s+(psk_\S+)$/m.exec(await readFile(keysFile, 'utf8'))![1]!

  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { 'x-api-key': customer } } })
  const agent = new Client({ name: 'petstore-spans-test', version: '1.0.0' })
  await agent.connect(transport)
  t.after(() => agent.close())

  const listed = await agent.callTool({ name: 'listPets', arguments: { limit: 1 } })
  assert.equal(listed.isError, undefined)
  // An agent that sends its own trace context in params._meta.
  const agentTrace = randomBytes(16).toString('hex')
  const agentSpan = randomBytes(8).toString('hex')
  await agent.callTool({ name: 'getRateLimit', arguments: {}, _meta: { traceparent: `00-${agentTrace}-${agentSpan}-01` } })
  // The customer key is on the free plan (60 a minute): call until the minute window refuses.
  let refused: { isError?: boolean; structuredContent?: { status?: number } } = {}
  for (let i = 0; i < 130 && refused.structuredContent?.status !== 429; i++) {
    refused = await agent.callTool({ name: 'listPets', arguments: { limit: 1, name: `x${i}` } }) as typeof refused
  }
  assert.equal(refused.structuredContent?.status, 429)

  const calls = (all: ReceivedSpan[]) => all.filter((s) => s.name === 'tools/call listPets')
  const { value: spans } = await pollUntil(async () => {
    const all = receiver.spans
    const done = calls(all).some((s) => s.status.code === ERROR) && all.some((s) => s.traceId === agentTrace)
      && all.filter((s) => s.name === 'GET /v1/pets').some((s) => s.attributes['http.response.status_code'] === 429)
    return done ? all : undefined
  }, { timeoutMs: 15_000, intervalMs: 100, message: `spans missing; received: ${receiver.spans.map((s) => s.name).join(', ')}` })
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  const childrenOf = (span: ReceivedSpan) => spans.filter((s) => s.parentSpanId === span.spanId)

  // The first call: the MCP span, under the /mcp request's, with the conventions' attributes.
  const first = calls(spans).find((s) => s.status.code !== ERROR)!
  assert.equal(first.kind, SERVER)
  const ancestors: ReceivedSpan[] = []
  for (let s = byId.get(first.parentSpanId); s !== undefined; s = byId.get(s.parentSpanId)) ancestors.push(s)
  const http = ancestors.find((s) => s.kind === SERVER)!
  assert.equal(http.name, 'POST /mcp', 'the /mcp request keeps its own name')
  assert.equal(http.attributes['http.route'], '/mcp')
  assert.equal(http.attributes['http.response.status_code'], 200)
  assert.equal(http.attributes['petstore.operation_id'], undefined, 'the operation is not told on the /mcp request')
  assert.deepEqual(pick(first.attributes, ['mcp.method.name', 'gen_ai.tool.name', 'gen_ai.operation.name', 'mcp.session.id', 'network.transport', 'network.protocol.name', 'client.address']), {
    'mcp.method.name': 'tools/call',
    'gen_ai.tool.name': 'listPets',
    'gen_ai.operation.name': 'execute_tool',
    'mcp.session.id': transport.sessionId,
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
    'client.address': '127.0.0.1'
  })
  assert.match(String(first.attributes['jsonrpc.request.id']), /^\d+$/)
  assert.equal(typeof first.attributes['mcp.protocol.version'], 'string')
  assert.equal(first.attributes['error.type'], undefined)

  // Its operation: one child named like a server span, with its status and the access decision.
  const [operation, ...others] = childrenOf(first).filter((s) => s.kind === INTERNAL && s.name.startsWith('GET '))
  assert.equal(others.length, 0)
  assert.equal(operation!.name, 'GET /v1/pets')
  assert.deepEqual(pick(operation!.attributes, ['http.route', 'http.response.status_code', 'petstore.operation_id', 'petstore.access.refused', 'petstore.key.role', 'petstore.plan']), {
    'http.route': '/v1/pets',
    'http.response.status_code': 200,
    'petstore.operation_id': 'listPets',
    'petstore.access.refused': false,
    'petstore.key.role': 'customer',
    'petstore.plan': 'free'
  })
  assert.deepEqual(operation!.events, [])

  // The refused call: a tool error on the MCP span; the refusal, with its event, on the operation.
  const last = calls(spans).find((s) => s.status.code === ERROR)!
  assert.equal(last.attributes['error.type'], 'tool_error')
  assert.equal(last.status.message, 'rate_limited')
  const refusal = childrenOf(last).find((s) => s.name === 'GET /v1/pets')!
  assert.deepEqual(pick(refusal.attributes, ['http.response.status_code', 'petstore.access.refused', 'petstore.access.code', 'petstore.ratelimit.remaining.minute']), {
    'http.response.status_code': 429,
    'petstore.access.refused': true,
    'petstore.access.code': 'rate_limited',
    'petstore.ratelimit.remaining.minute': 0
  })
  assert.deepEqual(refusal.events.map((e) => [e.name, e.attributes['petstore.access.code'], e.attributes['http.response.status_code']]), [['petstore.access.refused', 'rate_limited', 429]])

  // An agent's own trace context: the tool call's parent; the HTTP request is a link.
  const continued = spans.find((s) => s.name === 'tools/call getRateLimit')!
  assert.equal(continued.traceId, agentTrace)
  assert.equal(continued.parentSpanId, agentSpan)
  assert.equal(continued.links.length, 1)
  assert.notEqual(continued.links[0]!.traceId, agentTrace)
  assert.ok(childrenOf(continued).some((s) => s.name === 'GET /v1/rate_limit'))

  // No refusal event anywhere says status 0, and each tool call made one MCP span.
  assert.deepEqual(spans.flatMap((s) => s.events).filter((e) => e.attributes['http.response.status_code'] === 0), [])
  assert.equal(new Set(calls(spans).map((s) => s.spanId)).size, calls(spans).length)
  assert.equal(await server.stop(), 0)
})

function pick (attributes: Record<string, unknown>, names: string[]): Record<string, unknown> {
  return Object.fromEntries(names.map((name) => [name, attributes[name]]))
}
