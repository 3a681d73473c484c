// The key page of the console shows a key's scopes and how many of its calls came through MCP
// (issue 33), in a real browser: Debian's Chromium driven by playwright-core, as
// console.browser.test.ts does, against the real app on a real socket. An agent calls tools with
// a restricted key through the official MCP client; the number the page shows is the usage API's.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { chromium, type ConsoleMessage } from 'playwright-core'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { listenTestApp } from '../helpers/app.ts'
import { serviceGate } from '../helpers/services.ts'

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run']

const chromiumGate = serviceGate(existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing; install it with apt-get install -y chromium`)

void test('the key page shows the key\'s scopes and its calls through MCP, the number the usage API gives', { skip: chromiumGate.skip, timeout: 60_000 }, async (t) => {
  chromiumGate.check()
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const { record, key } = await createKeyAdmin(api.stores.keys, api.clock).create({
    role: 'customer',
    plan: 'pro',
    name: 'Agent partner',
    scopes: ['catalog:read', 'orders:read']
  })
  const unrestricted = await api.makeKey('customer', 'pro')

  // Two REST calls and an agent's session: initialize, the list, four tool calls.
  for (let i = 0; i < 2; i++) assert.equal((await fetch(`${api.baseUrl}/pets?limit=1`, { headers: { 'x-api-key': key } })).status, 200)
  const agent = new Client({ name: 'petstore-test', version: '1.0.0' })
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${root}/mcp`), { requestInit: { headers: { 'x-api-key': key } } }))
  t.after(() => agent.close())
  await agent.listTools()
  for (let i = 0; i < 4; i++) {
    const result = await agent.callTool({ name: 'listPets', arguments: { limit: 1 } }) as { isError?: boolean }
    assert.notEqual(result.isError, true)
  }

  const usage = (await api.call({ method: 'GET', url: `/v1/admin/keys/${record.id}/usage?days=30` })).json() as { days: Array<{ date: string; mcp: number }> }
  const mcp = usage.days.reduce((sum, d) => sum + d.mcp, 0)
  assert.equal(mcp, 6, 'initialize, the list and four tool calls')

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 })
  t.after(() => browser.close())
  const page = await browser.newPage()
  page.setDefaultTimeout(10_000)
  const errors: string[] = []
  page.on('console', (message: ConsoleMessage) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (error) => { errors.push(String(error)) })

  await page.goto(`${root}/console#/keys/${record.id}`)
  await page.getByLabel('Admin API key').fill(api.keys.admin)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('#usage-mcp-count').waitFor()
  assert.equal(await page.locator('#usage-mcp-count').textContent(), String(mcp), 'the total the page shows is the usage API\'s')
  const today = usage.days.at(-1)!
  assert.equal(await page.locator(`#usage-table tr[data-date="${today.date}"] [data-mcp]`).textContent(), String(today.mcp))
  const scopes = page.locator('#key-details dt', { hasText: 'Scopes' }).locator('xpath=following-sibling::dd[1]')
  assert.equal(await scopes.textContent(), 'catalog:read, orders:read')

  // A key without scopes: everything its role allows, and no MCP calls.
  await page.goto(`${root}/console#/keys/${unrestricted.id}`)
  await page.locator('#key-title', { hasText: `key ${unrestricted.id}` }).waitFor()
  await page.locator('#usage-mcp-count').waitFor()
  assert.equal(await scopes.textContent(), 'all its role allows (customer)')
  assert.equal(await page.locator('#usage-mcp-count').textContent(), '0')
  assert.deepEqual(errors, [])
})
