// The MCP Inspector's command-line mode (@modelcontextprotocol/inspector --cli), a client we did
// not write, lists the tools of a running server and calls one, with a key in a header. It needs
// Node 22 or later, so it is not in the project's npm ci: the test installs it in tools/inspector
// on first use (scripts/tools.ts), with npm on the pinned Node.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { before, test } from 'node:test'
import { promisify } from 'node:util'
import { installTool, pinnedNodePath } from '../../scripts/tools.ts'
import { listenTestApp } from '../helpers/app.ts'

const run = promisify(execFile)
let inspector = ''

before(() => { inspector = join(installTool('inspector'), 'mcp-inspector') }, { timeout: 300_000 })

async function inspect (url: string, key: string, ...args: string[]): Promise<unknown> {
  // Its bin starts with `#!/usr/bin/env node`: the pinned Node goes first on PATH.
  const { stdout } = await run(
    inspector,
    ['--cli', url, '--transport', 'http', '--header', `X-API-Key: ${key}`, ...args],
    { timeout: 60_000, env: { ...process.env, PATH: pinnedNodePath() } }
  )
  return JSON.parse(stdout.slice(stdout.indexOf('{')))
}

test('the MCP Inspector CLI lists the tools a key may call and calls one', { timeout: 120_000 }, async (t) => {
  const api = await listenTestApp(t)
  const url = `${api.baseUrl.slice(0, -'/v1'.length)}/mcp`
  const listed = await inspect(url, api.keys.customer, '--method', 'tools/list') as { tools: Array<{ name: string }> }
  const names = listed.tools.map((tool) => tool.name)
  assert.ok(names.includes('listPets') && names.includes('placeOrder'), 'the customer operations are there')
  assert.ok(!names.includes('createPet'), 'a staff operation is not')
  const called = await inspect(
    url, api.keys.customer, '--method', 'tools/call', '--tool-name', 'listPets', '--tool-arg', 'limit=1'
  ) as { structuredContent: { status: number; data: unknown[] } }
  assert.equal(called.structuredContent.status, 200)
  assert.ok(Array.isArray(called.structuredContent.data))
})
