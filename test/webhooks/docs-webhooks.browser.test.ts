// The webhooks of the document (x-webhooks in OpenAPI 3.0.3) on the real app's /docs page, in
// Debian's Chromium: Scalar upgrades the document to 3.1 and lists each delivery by event type.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { chromium } from 'playwright-core'
import { buildTestApp } from '../helpers/app.ts'
import { serviceGate } from '../helpers/services.ts'
import { keptDir } from '../helpers/temp.ts'

const CHROMIUM = '/usr/bin/chromium'
const chromiumGate = serviceGate(existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing; install it with apt-get install -y chromium`)

test('/docs shows the webhooks: a section per event type with its payload', { skip: chromiumGate.skip, timeout: 120_000 }, async (t) => {
  chromiumGate.check()
  const { app } = await buildTestApp(t)
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 30_000
  })
  t.after(() => browser.close())
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
  page.setDefaultTimeout(20_000)
  await page.goto(`${baseUrl}/docs`)
  const text = (): Promise<string> => page.locator('body').innerText()
  const deadline = Date.now() + 30_000
  while (!(await text()).includes('order.created') && Date.now() < deadline) await page.waitForTimeout(200)
  assert.match(await text(), /order\.created/, 'the first webhook is listed')
  // Scalar lists the webhooks under their tag; opening it shows every event type.
  await page.getByRole('button', { name: /^Webhooks/ }).first().click().catch(() => {})
  await page.waitForTimeout(1000)
  const shown = await text()
  const missing = ['order.created', 'inventory.low', 'key.banned', 'webhook.disabled'].filter((type) => !shown.includes(type))
  assert.deepEqual(missing, [], 'every event type is on the page')
  await page.screenshot({ path: join(keptDir('petstore-webhook-docs-'), 'docs.png'), fullPage: false })
  await page.close()
})
