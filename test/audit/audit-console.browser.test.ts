// The console's audit trail and a key's history, in a real browser (Debian's Chromium driven by
// playwright-core, as test/console/*.browser.test.ts do), against the real app on a real socket.
// What the page shows is compared with the API's entries; a name written like markup stays text.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ConsoleMessage } from 'playwright-core'
import { buildTestApp } from '../helpers/app.ts'
import { chromiumGate, launchChromium } from '../helpers/browser.ts'

const XSS_NAME = '<img src=x onerror=alert(1)> partner'

void test('the console shows the audit trail with its filters, and each key\'s history on its page', { skip: chromiumGate.skip, timeout: 60_000 }, async (t) => {
  const browser = await launchChromium(t)
  const h = await buildTestApp(t)
  const base = await h.app.listen({ host: '127.0.0.1', port: 0 })
  const made = await h.call({ method: 'POST', url: '/v1/admin/keys', payload: { name: XSS_NAME, role: 'customer', plan: 'pro' } })
  const id = made.json().id as number
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/admin/keys/${id}`, payload: { plan: 'business' } })).statusCode, 200)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/admin/keys/${id}` })).statusCode, 204)
  assert.equal((await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })).statusCode, 201)
  const all = (await h.call({ method: 'GET', url: '/v1/admin/audit?limit=100' })).json() as Array<{ id: number; action: string }>

  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } })
  page.setDefaultTimeout(10_000)
  const errors: string[] = []
  page.on('console', (message: ConsoleMessage) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (error) => { errors.push(String(error)) })
  page.on('dialog', (dialog) => { errors.push(`dialog: ${dialog.message()}`); void dialog.dismiss() })

  await page.goto(`${base}/console#/audit`)
  await page.getByLabel('Admin API key').fill(h.keys.admin)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('#nav:not([hidden])').waitFor()
  const rows = page.locator('#audit-table tbody tr[data-entry]')
  await rows.first().waitFor()
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-entry')))), all.map((e) => e.id), 'every entry, newest first')
  assert.match(await page.locator('#audit-head').innerText(), new RegExp(`^${all.length} entries; last hash [0-9a-f]{64}$`))
  const revoke = rows.filter({ hasText: 'key.revoke' })
  assert.match(await revoke.innerText(), new RegExp(`key ${id}`))
  assert.match(await revoke.innerText(), /revokedAt/)

  await page.getByLabel('Action (key.revoke, or key.*)').fill('category.*')
  await page.getByRole('button', { name: 'Show' }).click()
  await page.locator('#audit-table tbody tr[data-entry]', { hasText: 'category.create' }).waitFor()
  // The category row was there before the filter too: wait for a row the filter drops to go.
  await revoke.waitFor({ state: 'detached' })
  assert.equal(await rows.count(), 1)

  await page.goto(`${base}/console#/keys/${id}`)
  const history = page.locator('#key-history-table tbody tr[data-entry]')
  await history.first().waitFor()
  assert.deepEqual(await history.locator('td:nth-child(2) code').allInnerTexts(), ['key.revoke', 'key.update', 'key.create'])
  assert.match(await history.first().innerText(), /key \d+ \(admin\)/)
  assert.equal(await page.locator('main img').count(), 0, 'no element was made from a recorded name')
  assert.deepEqual(errors, [])
})
