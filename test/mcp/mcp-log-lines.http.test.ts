// A tool call is one line in the log (issue 49 section 1): the `POST /mcp` that carried it. The
// operation the tool made inside (through the MCP channel) writes no second "request completed"
// line; before, a session of five tool calls wrote ten, and the operator counted every call twice.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/server.ts'
import { listenTestApp } from '../helpers/app.ts'

type Line = Record<string, unknown> & { msg?: string; url?: string; via?: string }

test('each tool call writes one "request completed" line, that of POST /mcp; its inner operation none', async (t) => {
  const chunks: string[] = []
  const logger = createLogger(loadConfig({ LOG_LEVEL: 'info' }), { write: (chunk: string) => { chunks.push(chunk) } })
  const lines = (): Line[] => chunks.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line)
  const api = await listenTestApp(t, { deps: { logger } })
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const client = new Client({ name: 'log-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${root}/mcp`), {
    requestInit: { headers: { 'x-api-key': api.keys.customer } }
  }))
  t.after(() => client.close())
  await client.listTools()
  const before = lines().filter((l) => l.msg === 'request completed').length

  const calls = 3
  for (let i = 0; i < calls; i++) await client.callTool({ name: 'listPets', arguments: { limit: 1 } })

  const completed = lines().filter((l) => l.msg === 'request completed').slice(before)
  assert.deepEqual(completed.map((l) => l.url), Array.from({ length: calls }, () => '/mcp'),
    'one line per call, none for the inner GET /v1/pets')
  assert.equal(completed.filter((l) => l.via === 'mcp').length, 0)
})
