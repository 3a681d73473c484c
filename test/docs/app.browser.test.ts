// /docs of the real app, on its own generated document, in Debian's Chromium: the groups, the
// deprecated operation with its sunset date, a beta and an experimental badge, a try-it request
// that reaches the running server, and no try-it control on GET /store/orders.
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import { chromium } from 'playwright-core'
import { buildTestApp } from '../helpers/app.ts'
import { serviceGate } from '../helpers/services.ts'
import { keptDir } from '../helpers/temp.ts'
import { checkDocsPage } from './docs-page-checks.ts'

const CHROMIUM = '/usr/bin/chromium'
const chromiumGate = serviceGate(existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing; install it with apt-get install -y chromium`)

test('/docs of the real app: groups, deprecation with its sunset, badges, a working try-it and none on GET /store/orders', { skip: chromiumGate.skip, timeout: 120_000 }, async (t) => {
  chromiumGate.check()
  // The system clock: the browser's requests run through the real access hook.
  const { app, stores, keys } = await buildTestApp(t)
  const category = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())
  await stores.pets.createPet({ name: 'Rexford', categoryId: category.id, status: 'available' }, null, Date.now())
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 30_000
  })
  t.after(() => browser.close())
  const screenshotDir = keptDir('petstore-app-docs-')
  t.diagnostic(`screenshots in ${screenshotDir}`)
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
  page.setDefaultTimeout(15_000)
  await checkDocsPage(page, baseUrl, {
    groups: ['Pets', 'Store', 'Account'],
    deprecated: { operation: 'GET /pets/{petId}', sunset: '2027-05-21' },
    badges: [{ operation: 'GET /rate_limit', text: 'beta' }, { operation: 'DELETE /admin/keys/{keyId}/ban', text: 'experimental' }],
    tryIt: { operation: 'GET /pets', apiKey: keys.customer, status: 200, text: 'Rexford' },
    tryItHidden: { operation: 'GET /store/orders', neighbour: 'POST /store/orders' }
  }, { screenshotDir, timeoutMs: 15_000 })
  await page.close()
})
