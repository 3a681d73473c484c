// The console's key forms and marks (issues 32 and 33), in a real browser: Debian's Chromium
// driven by playwright-core, as console.browser.test.ts does, against the real app on a real
// socket. A key created with a scope checked is read back through the API and used: it reads the
// catalogue and is refused an order. A scope outside the role shows the API's message and creates
// nothing. A live legacy-format key carries the "rotate it" badge, a checksummed one none; a
// revoked key says why (leaked or requested). Faults caught: scopes not sent, or sent empty when
// none is checked; an error hidden or made from markup; the badge on every key or none; the
// reason of key.revoked not shown.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import { chromium, type ConsoleMessage, type Page } from 'playwright-core'
import { hashKey } from '../../src/accounts/keys.rules.ts'
import { listenTestApp, type TestApp } from '../helpers/app.ts'
import { serviceGate } from '../helpers/services.ts'

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run']

const chromiumGate = serviceGate(existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing; install it with apt-get install -y chromium`)

interface KeyView { id: number; name: string | null; scopes: string[] | null; format: string; revokedAt: string | null }

async function keyCount (api: TestApp): Promise<number> {
  const response = await api.call({ method: 'GET', url: '/v1/admin/keys?limit=100' })
  assert.equal(response.statusCode, 200)
  return (response.json() as KeyView[]).length
}

/** Fills and sends the console's "Create a key" form; returns nothing: the caller waits for the outcome it expects. */
async function createThroughConsole (page: Page, name: string, role: string, scopes: string[]): Promise<void> {
  await page.goto(page.url().replace(/#.*$/, '#/keys'))
  await page.locator('#keys-table tbody tr').first().waitFor()
  if (await page.locator('#create').getAttribute('open') === null) await page.locator('#create summary').click()
  await page.fill('#create-name', name)
  await page.selectOption('#create-role', role)
  for (const scope of scopes) await page.locator(`#create-scopes input[value="${scope}"]`).check()
  await page.getByRole('button', { name: 'Create', exact: true }).click()
}

void test('the console creates a key with scopes, shows a refused scope\'s message, marks legacy keys, and says why a key was revoked', { skip: chromiumGate.skip, timeout: 60_000 }, async (t) => {
  chromiumGate.check()
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)

  // A pet with 5 in stock, to order.
  assert.equal((await api.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Dogs' } })).statusCode, 201)
  const pet = await api.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Rex', categoryId: 1 } })
  assert.equal(pet.statusCode, 201)
  const petId = (pet.json() as { id: number }).id
  assert.equal((await api.call({ method: 'PUT', url: `/v1/store/inventory/${petId}`, role: 'staff', payload: { quantity: 5 } })).statusCode, 200)

  // A key made before checksums (its row holds a 12-character prefix), as
  // test/keys/legacy-keys-list.test.ts makes it, and a checksummed one.
  const legacyKey = 'psk_' + randomBytes(32).toString('base64url')
  const legacy = await api.stores.keys.createKey({
    name: 'Old partner',
    role: 'customer',
    plan: 'pro',
    perMinute: null,
    perDay: null,
    hash: hashKey(legacyKey),
    prefix: legacyKey.slice(0, 12),
    now: api.clock.now()
  })
  const checksummed = await api.makeKey('customer', 'pro')
  const views = await Promise.all([legacy.id, checksummed.id].map(
    async (id) => (await api.call({ method: 'GET', url: `/v1/admin/keys/${id}` })).json() as KeyView
  ))
  assert.deepEqual(views.map((v) => v.format), ['legacy', 'checksummed'])

  // Two revoked keys: one by an admin's DELETE (requested), one reported leaked.
  const requested = await api.makeKey('customer', 'pro')
  assert.equal((await api.call({ method: 'DELETE', url: `/v1/admin/keys/${requested.id}` })).statusCode, 204)
  const leaked = await api.makeKey('customer', 'pro')
  assert.equal((await api.call({ method: 'POST', url: '/v1/keys/leaked', key: null, payload: { keys: [leaked.key] } })).statusCode, 202)
  assert.notEqual(((await api.call({ method: 'GET', url: `/v1/admin/keys/${leaked.id}` })).json() as KeyView).revokedAt, null)

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 })
  t.after(() => browser.close())
  const page = await browser.newPage()
  // Short waits: a broken page fails each step well within the test's timeout.
  page.setDefaultTimeout(5_000)
  const errors: string[] = []
  page.on('console', (message: ConsoleMessage) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (error) => { errors.push(String(error)) })

  await page.goto(`${root}/console#/keys`)
  await page.getByLabel('Admin API key').fill(api.keys.admin)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator(`#keys-table tbody tr[data-key-id="${legacy.id}"]`).waitFor()

  await t.test('a key created with catalog:read checked holds that scope: it reads pets and is refused an order', async () => {
    await createThroughConsole(page, 'Catalog reader', 'customer', ['catalog:read'])
    await page.locator('#new-key:not([hidden])').waitFor()
    const status = (await page.locator('#status').textContent())!
    const id = Number(/^Key (\d+) created/.exec(status)?.[1])
    const key = (await page.locator('#new-key-value').textContent())!
    const view = (await api.call({ method: 'GET', url: `/v1/admin/keys/${id}` })).json() as KeyView
    assert.equal(view.name, 'Catalog reader')
    assert.deepEqual(view.scopes, ['catalog:read'])
    assert.equal((await api.call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
    const order = await api.call({ method: 'POST', url: '/v1/store/orders', key, payload: { petId, quantity: 2 } })
    assert.equal(order.statusCode, 403)
    assert.equal((order.json() as { code: string }).code, 'insufficient_scope')
    assert.equal(((await api.call({ method: 'GET', url: `/v1/store/inventory/${petId}`, role: 'staff' })).json() as { quantity: number }).quantity, 5, 'no stock taken')
    assert.equal(await page.locator('#create-scopes input:checked').count(), 0, 'the form is cleared for the next key')
  })

  await t.test('with no scope checked, none is sent: the key may do everything its role allows', async () => {
    await page.locator('#dismiss-key').click()
    await createThroughConsole(page, 'Full customer', 'customer', [])
    await page.locator('#new-key:not([hidden])').waitFor()
    const id = Number(/^Key (\d+) created/.exec((await page.locator('#status').textContent())!)?.[1])
    assert.equal(((await api.call({ method: 'GET', url: `/v1/admin/keys/${id}` })).json() as KeyView).scopes, null)
    await page.locator('#dismiss-key').click()
  })

  await t.test('keys:admin checked for a customer shows the API\'s 400 message and creates nothing', async () => {
    const before = await keyCount(api)
    await createThroughConsole(page, 'Too much', 'customer', ['keys:admin'])
    await page.locator('#create-error', { hasText: 'validation_failed' }).waitFor()
    assert.equal(await page.locator('#create-error').textContent(), 'the keys:admin scope is outside the customer role: a scope can only narrow a role (validation_failed)')
    assert.equal(await page.locator('#new-key').isHidden(), true)
    assert.equal(await keyCount(api), before, 'no key was created')
  })

  await t.test('a live legacy-format key carries the "rotate it" badge in the list and on its page; a checksummed one does not', async () => {
    await page.goto(`${root}/console#/keys`)
    const legacyRow = page.locator(`#keys-table tbody tr[data-key-id="${legacy.id}"]`)
    await legacyRow.waitFor()
    assert.equal(await legacyRow.locator('[data-format="legacy"]').textContent(), 'legacy format: rotate it')
    assert.equal(await page.locator(`#keys-table tbody tr[data-key-id="${checksummed.id}"] [data-format]`).count(), 0)
    assert.equal(await page.locator('#keys-table tbody [data-format="legacy"]').count(), 1, 'only the legacy key is marked')

    await page.goto(`${root}/console#/keys/${legacy.id}`)
    await page.locator('#key-title', { hasText: `key ${legacy.id}` }).waitFor()
    assert.equal(await page.locator('#key-details [data-format="legacy"]').textContent(), 'legacy format: rotate it')
    await page.goto(`${root}/console#/keys/${checksummed.id}`)
    await page.locator('#key-title', { hasText: `key ${checksummed.id}` }).waitFor()
    const format = page.locator('#key-details dt', { hasText: 'Format' }).locator('xpath=following-sibling::dd[1]')
    assert.equal(await format.textContent(), 'checksummed')
    assert.equal(await page.locator('#key-details [data-format]').count(), 0)
  })

  await t.test('a revoked key says why, on its page and in its history: leaked or requested', async () => {
    for (const [id, reason] of [[leaked.id, 'leaked'], [requested.id, 'requested']] as const) {
      await page.goto(`${root}/console#/keys/${id}`)
      await page.locator('#key-title', { hasText: `key ${id}` }).waitFor()
      await page.locator('#key-details [data-reason]').waitFor()
      assert.equal(await page.locator('#key-details [data-reason]').getAttribute('data-reason'), reason)
      const revokeRow = page.locator('#key-history-table tbody tr', { hasText: 'key.revoke' })
      assert.equal(await revokeRow.locator('[data-reason]').getAttribute('data-reason'), reason)
      assert.match((await revokeRow.textContent())!, reason === 'leaked' ? /leaked \(reported through POST \/v1\/keys\/leaked\)/ : /requested \(by an admin or the command line\)/)
    }
  })

  assert.deepEqual(errors.filter((e) => !e.includes('400')), [], 'no script error (the refused POST is logged by the browser as a 400)')
})
