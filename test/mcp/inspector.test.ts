// The MCP Inspector's command-line mode (@modelcontextprotocol/inspector --cli), a client we did
// not write, lists the tools of a running server and calls one, with a key in a header.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { listenTestApp } from '../helpers/app.ts'

const run = promisify(execFile)
const INSPECTOR = new URL('../../node_modules/.bin/mcp-inspector', import.meta.url).pathname

async function inspect (url: string, key: string, ...args: string[]): Promise<unknown> {
  const { stdout } = await run(INSPECTOR, ['--cli', url, '--transport', 'http', '--header', `X-API-Key: ${key}`, ...args], { timeout: 60_000 })
  return JSON.parse(stdout.slice(stdout.indexOf('{')))
}

test('the MCP Inspector CLI lists the tools a key may call and calls one', { timeout: 120_000 }, async (t) => {
  const api = await listenTestApp(t)
  const url = `${api.baseUrl.slice(0, -'/v1'.length)}/mcp`
  const listed = await inspect(url, api.keys.customer, '--method', 'tools/list') as { tools: Array<{ name: string }> }
  const names = listed.tools.map((tool) => tool.name)
  assert.ok(names.includes('listPets') && names.includes('placeOrder'), 'the customer operations are there')
  assert.ok(!names.includes('createPet'), 'a staff operation is not')
  const called = await inspect(url, api.keys.customer, '--method', 'tools/call', '--tool-name', 'listPets', '--tool-arg', 'limit=1') as { structuredContent: { status: number; data: unknown[] } }
  assert.equal(called.structuredContent.status, 200)
  assert.ok(Array.isArray(called.structuredContent.data))
})
