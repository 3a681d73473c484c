// /docs in a real browser: Debian's Chromium driven by playwright-core, against the fixture
// document. The main suite runs the same checkDocsPage against the app's own document.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { chromium } from 'playwright-core'
import { serviceGate } from '../helpers/services.ts'
import { keptDir } from '../helpers/temp.ts'
import { checkDocsPage, operationSection } from './docs-page-checks.ts'
import { buildFixtureApp, FIXTURE_API_KEY } from './fixture-app.ts'
import { SUNSET_DATE } from './fixture-openapi.ts'

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run']
const TIMEOUT_MS = 15_000

const chromiumGate = serviceGate(existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing; install it with apt-get install -y chromium`)

void test('/docs renders the fixture document with Scalar in Chromium', { skip: chromiumGate.skip, timeout: 120_000 }, async (t) => {
  chromiumGate.check()

  const { app, apiCalls } = await buildFixtureApp()
  t.after(() => app.close())
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 })
  t.after(() => browser.close())
  const screenshotDir = keptDir('petstore-docs-')
  t.diagnostic(`screenshots in ${screenshotDir}`)

  await t.test('shows tag groups, the deprecation, badges, a working try-it panel, and none on GET /store/orders', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
    page.setDefaultTimeout(TIMEOUT_MS)
    await checkDocsPage(page, baseUrl, {
      groups: ['Pets', 'Store'],
      deprecated: { operation: 'GET /pets/{petId}', sunset: SUNSET_DATE },
      badges: [{ operation: 'POST /pets', text: 'beta' }, { operation: 'POST /categories', text: 'experimental' }],
      tryIt: { operation: 'GET /pets', apiKey: FIXTURE_API_KEY, status: 200, text: 'Rex' },
      tryItHidden: { operation: 'GET /store/orders', neighbour: 'POST /store/orders' }
    }, { screenshotDir, timeoutMs: TIMEOUT_MS })
    assert.equal(apiCalls.length, 1, 'one try-it request reached the server')
    assert.match(apiCalls[0] ?? '', /^GET \/v1\/pets(\?|$)/)
    await page.close()
  })

  await t.test('the API client will not send GET /store/orders, even when the search takes it there', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
    page.setDefaultTimeout(TIMEOUT_MS)
    apiCalls.length = 0
    await page.goto(`${baseUrl}/docs`)
    const neighbour = await operationSection(page, 'POST /store/orders', TIMEOUT_MS)
    await neighbour.getByRole('button', { name: /test request/i }).click()
    const client = page.getByRole('dialog', { name: 'API Client' })
    await client.waitFor({ state: 'visible' })

    // The client's own sidebar lists the neighbour but not the switched-off operation.
    await page.keyboard.press('Control+b')
    const entries = client.locator('[data-sidebar-id*="/tag/orders/"]')
    await entries.filter({ hasText: 'Place an order' }).first().waitFor({ state: 'visible' })
    await entries.filter({ hasText: 'List orders' }).first().waitFor({ state: 'attached' })
    assert.equal(await entries.filter({ hasText: 'List orders' }).visible().count(), 0, 'no client sidebar entry for GET /store/orders')

    // The page's search (Ctrl+K) stays open over the client, and picking an operation there
    // switches the client to it: the client shows GET /store/orders but refuses to send it.
    await page.keyboard.press('Control+k')
    const search = page.getByRole('dialog', { name: 'Search' })
    await search.locator('input').first().fill('List orders')
    await search.getByText('List orders').first().click()
    await client.getByText('/store/orders', { exact: true }).first().waitFor({ state: 'visible' })
    await client.getByRole('button', { name: /^send\b/i }).visible().first().click()
    await page.getByText(/switched off for GET \/store\/orders/i).first().waitFor({ state: 'visible' })
    await page.screenshot({ path: join(screenshotDir, 'try-it-refused.png') })
    assert.deepEqual(apiCalls, [], 'nothing reached the server')
    await page.close()
  })
})
