// The console's webhook views in a real browser (issue 31: "each endpoint's status, its recent
// deliveries, replay and test"): Debian's Chromium driven by playwright-core, as
// console.browser.test.ts does, against the real app on a real socket and real receivers on
// 127.0.0.1. Each action is asserted by what the receiver got, not only by what the page says.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { chromium, type ConsoleMessage, type Page, type Route } from 'playwright-core'
import { buildTestApp } from '../helpers/app.ts'
import { serviceGate } from '../helpers/services.ts'
import { keptDir } from '../helpers/temp.ts'
import { received, subscribe } from '../webhooks/helpers.ts'
import { startReceiver, type Received } from '../webhooks/receiver.ts'

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run']
const TIMEOUT_MS = 10_000
const XSS_NAME = '<img src=x onerror=alert(1)> partner hook'
const DAY = 86_400_000

const chromiumGate = serviceGate(existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing; install it with apt-get install -y chromium`)

const typeOf = (delivery: Received): string => (JSON.parse(delivery.body) as { type: string }).type

void test('the console\'s webhook views in Chromium: status and why, deliveries, send a test, replay, enable again', { skip: chromiumGate.skip, timeout: 60_000 }, async (t) => {
  chromiumGate.check()

  // The test app's manual clock: the failing endpoint's second attempt is made 6 days after its
  // first, which disables it as 5 days of failures do.
  const h = await buildTestApp(t, { env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50' } })
  const base = await h.app.listen({ host: '127.0.0.1', port: 0 })
  const good = await startReceiver(t)
  const bad = await startReceiver(t, (_req, res) => { res.writeHead(503).end() })

  // A: staff's, on pet events, named like markup; B: a customer's, failing; C: staff's, disabled by hand.
  const a = await subscribe(h, good, ['pet.*'], h.keys.staff)
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/webhooks/${a.id}`, role: 'staff', payload: { description: XSS_NAME } })).statusCode, 200)
  const b = await subscribe(h, bad, ['order.*'], h.keys.customer)
  const c = await subscribe(h, good, ['inventory.low'], h.keys.staff)
  assert.equal((await h.call({ method: 'PATCH', url: `/v1/webhooks/${c.id}`, role: 'staff', payload: { status: 'disabled' } })).statusCode, 200)

  // An event for A: a new pet.
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Goldie', categoryId: category.json().id } })
  assert.equal(pet.statusCode, 201)
  const [created] = await received(good, 1)
  assert.equal(typeOf(created!), 'pet.created')
  const petEventId = created!.headers['webhook-id'] as string

  // B fails its test event, then again 6 days later: disabled for failing.
  assert.equal((await h.call({ method: 'POST', url: `/v1/webhooks/${b.id}/test`, role: 'customer' })).statusCode, 202)
  await received(bad, 1)
  const attempts = async (id: string, count: number) => {
    const deadline = Date.now() + 3000
    for (;;) {
      const list = (await h.call({ method: 'GET', url: `/v1/webhooks/${id}/deliveries` })).json() as { outcome: string }[]
      if (list.filter((d) => d.outcome !== 'pending').length >= count) return
      assert.ok(Date.now() < deadline, `${id}: ${count} attempts recorded`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  await attempts(b.id, 1)
  h.clock.advance(6 * DAY)
  await received(bad, 2)
  const deadline = Date.now() + 3000
  while ((await h.call({ method: 'GET', url: `/v1/webhooks/${b.id}` })).json().status !== 'disabled') {
    assert.ok(Date.now() < deadline, 'B is disabled after its failures')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 })
  t.after(() => browser.close())
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } })
  page.setDefaultTimeout(TIMEOUT_MS)
  const errors: string[] = []
  page.on('console', (message: ConsoleMessage) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (error) => { errors.push(String(error)) })
  page.on('dialog', (dialog) => { errors.push(`dialog: ${dialog.message()}`); void dialog.dismiss() })

  await page.goto(`${base}/console#/webhooks`)
  await signIn(page, h.keys.admin)
  const row = (id: string) => page.locator(`#webhooks-table tbody tr[data-webhook-id="${id}"]`)
  await row(a.id).waitFor()

  await t.test('the list shows every endpoint with its status, why it is disabled, and its latest attempt', async () => {
    assert.equal(await page.locator('#webhooks-table tbody tr').count(), 3)
    assert.equal(await row(a.id).locator('[data-status]').getAttribute('data-status'), 'enabled')
    assert.match(await row(a.id).innerText(), /succeeded, HTTP 204/)
    const failing = row(b.id).locator('[data-status]')
    assert.equal(await failing.getAttribute('data-status'), 'disabled')
    assert.equal(await failing.getAttribute('data-reason'), 'failing')
    assert.match(await row(b.id).innerText(), /disabled after 5 days in which every attempt failed/)
    assert.match(await row(b.id).innerText(), /failed, HTTP 503/)
    assert.equal(await row(c.id).locator('[data-status]').getAttribute('data-reason'), 'manual')
    assert.match(await row(c.id).innerText(), /disabled by hand/)
  })

  await t.test('a description written like markup is shown as text', async () => {
    assert.equal(await row(a.id).getByRole('link').first().textContent(), XSS_NAME)
    assert.equal(await page.locator('main img').count(), 0, 'no element was made from the description')
  })

  await t.test('an endpoint\'s page lists its deliveries', async () => {
    await row(a.id).getByRole('link').first().click()
    const delivery = page.locator(`#deliveries-table tr[data-event-id="${petEventId}"]`)
    await delivery.waitFor()
    assert.equal(await delivery.getAttribute('data-state'), 'succeeded')
    assert.match(await delivery.innerText(), /pet\.created\tdelivered\t1\tHTTP 204/)
    assert.equal(await page.locator('#webhook-title').textContent(), `${XSS_NAME} (${a.id})`)
    assert.equal(await page.locator('main img').count(), 0)
  })

  await t.test('"Send a test event" makes the receiver get a webhook.test, and says it was delivered', async () => {
    const before = good.received.length
    await page.getByRole('button', { name: 'Send a test event' }).click()
    const got = await received(good, before + 1)
    assert.equal(typeOf(got[before]!), 'webhook.test')
    assert.equal(got[before]!.url, '/hook')
    const testId = got[before]!.headers['webhook-id'] as string
    await page.locator('#webhook-result', { hasText: `Test event ${testId} was delivered: HTTP 204` }).waitFor()
    await page.locator(`#deliveries-table tr[data-event-id="${testId}"][data-state="succeeded"]`).waitFor()
  })

  await t.test('"Replay" makes the receiver get the same event again', async () => {
    const before = good.received.length
    await page.getByRole('button', { name: `Replay ${petEventId}` }).click()
    const got = await received(good, before + 1)
    const again = got[before]!
    assert.equal(again.headers['webhook-id'], petEventId, 'the same event id, so a receiver can deduplicate')
    assert.equal(again.body, created!.body, 'the same payload')
    await page.locator('#webhook-result', { hasText: `The replay of ${petEventId} was delivered: HTTP 204` }).waitFor()
    assert.match(await page.locator(`#deliveries-table tr[data-event-id="${petEventId}"]`).innerText(), /pet\.created\tdelivered\t2\tHTTP 204/)
    const screenshot = join(keptDir('petstore-console-webhooks-'), 'webhook.png')
    await page.screenshot({ path: screenshot, fullPage: true })
    t.diagnostic(`screenshot: ${screenshot}`)
  })

  await t.test('the failing endpoint\'s page shows its attempts and why it is disabled', async () => {
    await page.goto(`${base}/console#/webhooks/${b.id}`)
    await page.locator('#webhook-details [data-reason="failing"]').waitFor()
    const delivery = page.locator('#deliveries-table tbody tr').first()
    assert.match(await delivery.innerText(), /webhook\.test\twaiting: the endpoint is disabled\t2\tHTTP 503/)
    assert.match(await delivery.innerText(), /when enabled again/)
    assert.match(await delivery.innerText(), /not replayed: send another test/)
  })

  await t.test('"Enable again" enables the endpoint through the API', async () => {
    await page.goto(`${base}/console#/webhooks/${c.id}`)
    await page.locator('#webhook-details [data-reason="manual"]').waitFor()
    await page.getByRole('button', { name: 'Enable again' }).click()
    await page.locator('#webhook-details [data-status="enabled"]').waitFor()
    assert.equal((await h.call({ method: 'GET', url: `/v1/webhooks/${c.id}` })).json().status, 'enabled')
    await page.locator('#webhook-result', { hasText: 'enabled again' }).waitFor()
  })

  await t.test('the endpoint just left, answering late, is not the one shown nor the one the buttons act on', async () => {
    // B's page is asked for and held; the operator moves on to A, whose page is drawn; then B's
    // answers come. The page must still be A's, and "Send a test event" must reach A's receiver.
    const held: Route[] = []
    const isB = (url: URL) => url.pathname.startsWith(`/v1/webhooks/${b.id}`)
    await page.route(isB, (route) => { held.push(route) })
    await page.goto(`${base}/console#/webhooks/${b.id}`)
    for (let waited = 0; held.length < 2 && waited < TIMEOUT_MS; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(held.length, 2, 'B\'s endpoint and deliveries were asked for and held')
    await page.goto(`${base}/console#/webhooks/${a.id}`)
    await page.locator('#webhook-title', { hasText: a.id }).waitFor()
    await page.locator(`#deliveries-table tr[data-event-id="${petEventId}"]`).waitFor()
    const finished = held.map((route) => page.waitForEvent('requestfinished', (request) => request === route.request()))
    for (const route of held) await route.continue()
    await page.unroute(isB)
    await Promise.all(finished)
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 100)))
    assert.equal(await page.locator('#webhook-title').textContent(), `${XSS_NAME} (${a.id})`)
    const [goodBefore, badBefore] = [good.received.length, bad.received.length]
    await page.getByRole('button', { name: 'Send a test event' }).click()
    const got = await received(good, goodBefore + 1)
    assert.equal(typeOf(got[goodBefore]!), 'webhook.test')
    await page.locator('#webhook-result', { hasText: 'was delivered' }).waitFor()
    assert.equal(bad.received.length, badBefore, 'B\'s receiver got nothing')
  })

  assert.deepEqual(errors, [], 'no console error, page error or dialog')
})

async function signIn (page: Page, key: string): Promise<void> {
  await page.getByLabel('Admin API key').fill(key)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('#nav:not([hidden])').waitFor()
}
