// The partner portal's pages in a real browser (issue 50, sections 2 and 3): Debian's Chromium
// driven by playwright-core, against the real app on a real socket (SQLite, or PostgreSQL with
// PETSTORE_TEST_ENGINE=postgres: named .http.test.ts, npm test's PostgreSQL phase runs it too) and
// real receivers on 127.0.0.1. A partner with a customer key
// and a link answers, alone: what is left and when it resets; why request X was refused; what
// its endpoint answered; replay what failed; what event type Z looks like, and send one. Each
// step is asserted by what the API, the receiver or the database says too, not only the page.
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import type { Browser, ConsoleMessage, Page, Route } from 'playwright-core'
import { launchChromium, chromiumGate } from '../helpers/browser.ts'
import { keptDir } from '../helpers/temp.ts'
import { received, subscribe, verified } from '../webhooks/helpers.ts'
import { startReceiver } from '../webhooks/receiver.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { openTestLimiter } from '../helpers/limiter.ts'
import { BAN_REASON } from '../../src/ratelimit/limiter.ts'
import { systemClock } from '../../src/shared/clock.ts'

const TIMEOUT_MS = 10_000
/** Screenshots: docs/images/portal-*.png with PETSTORE_UPDATE_SCREENSHOT=1, else a temporary folder. */
const SHOTS = process.env.PETSTORE_UPDATE_SCREENSHOT === '1'
  ? new URL('../../docs/images/', import.meta.url).pathname
  : keptDir('petstore-portal-')
/** What a hostile receiver answers: markup and script that must stay text. */
const HOSTILE_BODY = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>' + 'x'.repeat(6000)
const HOSTILE_HEADER = '<b onmouseover="window.__pwned=3">bold</b>'
const XSS_NAME = '<img src=x onerror=alert(1)> hook'

interface Portal { page: Page; errors: string[] }

/** The page's globals, as the callbacks run in the browser see them (the project's types have no DOM). */
interface Dom {
  document: {
    querySelectorAll (selector: string): { length: number }
    querySelector (selector: string): { textContent: string } | null
    documentElement: { scrollWidth: number }
    activeElement: { textContent: string }
  }
  location: { hash: string }
  getComputedStyle (node: unknown): { outlineStyle: string }
  __pwned?: number
}

/** A link for `key` (POST /v1/keys/me/portal), on the test server's origin. */
async function linkFor (base: string, key: string): Promise<string> {
  const response = await fetch(`${base}/v1/keys/me/portal`, { method: 'POST', headers: { 'x-api-key': key } })
  assert.equal(response.status, 201, await response.clone().text())
  const { url } = await response.json() as { url: string }
  assert.match(url, /\/portal#link=/)
  return `${base}/portal${new URL(url).hash}`
}

async function newPortal (browser: Browser, width = 1280): Promise<Portal> {
  // A context of its own: its own cookies (a second partner, a second browser), and what AxeBuilder needs.
  const context = await browser.newContext({ viewport: { width, height: 900 } })
  const page = await context.newPage()
  page.setDefaultTimeout(TIMEOUT_MS)
  const errors: string[] = []
  page.on('console', (message: ConsoleMessage) => {
    // A refused request (the used link's 401, the session ended) is logged by Chromium as a failed
    // resource: the page's words are asserted instead.
    if (message.type() === 'error' && !/status of 40[13]/.test(message.text())) errors.push(message.text())
  })
  page.on('pageerror', (error) => { errors.push(String(error)) })
  page.on('dialog', (dialog) => { errors.push(`dialog: ${dialog.message()}`); void dialog.dismiss() })
  return { page, errors }
}

/** axe-core's browser build: evaluated in the page (as a debugger would), which its CSP does not govern. */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

interface AxeViolation { id: string; help: string; impact?: string | null; nodes: Array<{ target: string[] }> }

/** axe-core on the page as it is: no serious or critical violation. */
async function axe (page: Page, what: string): Promise<void> {
  await page.evaluate(AXE_SOURCE)
  const violations = await page.evaluate(async () => {
    const engine = (globalThis as unknown as { axe: { run (): Promise<{ violations: unknown[] }> } }).axe
    return (await engine.run()).violations
  }) as AxeViolation[]
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join('; ')})`), [], `axe on ${what}`)
}

async function shot (t: TestContext, page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true })
  const path = join(SHOTS, `portal-${name}.png`)
  await page.screenshot({ path, fullPage: true })
  t.diagnostic(`screenshot: ${path}`)
}

async function go (page: Page, hash: string, ready: string): Promise<void> {
  await page.evaluate((h) => { (globalThis as unknown as Dom).location.hash = h }, hash)
  await page.locator(ready).first().waitFor()
}

/** The elements that go past 360 px, for the message of a failure (run in the browser). */
function wider (): string {
  interface Box { tagName: string; id: string; className: string; getBoundingClientRect (): { right: number } }
  const dom = globalThis as unknown as { document: { querySelectorAll (s: string): Iterable<Box> } }
  const all = dom.document.querySelectorAll('body *')
  return [...all].filter((e) => e.getBoundingClientRect().right > 360).slice(-5)
    .map((e) => `${e.tagName}#${e.id}.${String(e.className)}`).join(', ')
}

const pwned = (page: Page) => page.evaluate(() => (globalThis as unknown as Dom).__pwned ?? null)

async function setUp (t: TestContext): Promise<{ h: TestApp; base: string }> {
  // One retry a second after the first attempt: a failing delivery fails for good within seconds.
  // The system clock for the limiter too (webhookApp gives it the test app's manual clock), so that
  // the windows' resets and today's usage are the browser's now.
  const h = await buildTestApp(t, {
    env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50', WEBHOOK_RETRY_SCHEDULE: '1s' },
    deps: { clock: systemClock },
    limiter: () => openTestLimiter(t, () => Date.now())
  })
  const base = await h.app.listen({ host: '127.0.0.1', port: 0 })
  return { h, base }
}

void test('the partner portal in Chromium: link, windows, usage, a refusal by its Request-Id, attempts, recover, a test event, sign-out', { skip: chromiumGate.skip, timeout: 180_000 }, async (t) => {
  const browser = await launchChromium(t)
  const { h, base } = await setUp(t)
  const good = await startReceiver(t)
  const bad = await startReceiver(t, (_req, res) => {
    res.writeHead(500, { 'content-type': 'text/html', 'x-evil': HOSTILE_HEADER }).end(HOSTILE_BODY)
  })
  const partner = await h.makeKey('customer', 'enterprise', { perMinute: 5000, perDay: 100_000 })

  // A failing endpoint of the partner's, named like markup, on its order events.
  const failing = await subscribe(h, bad, ['order.*'], partner.key)
  const named = await h.call({ method: 'PATCH', url: `/v1/webhooks/${failing.id}`, key: partner.key, payload: { description: XSS_NAME } })
  assert.equal(named.statusCode, 200)

  const { page, errors } = await newPortal(browser)
  const link = await linkFor(base, partner.key)

  await t.test('the link opens the dashboard, leaves the address bar, and is refused a second time with words', async () => {
    const response = await page.goto(link)
    assert.ok(response !== null)
    assert.doesNotMatch(response.headers()['content-security-policy'] ?? '', /unsafe/)
    await page.locator('#windows-table tbody tr[data-window="minute"]').waitFor()
    assert.doesNotMatch(page.url(), /link=/, 'the one-time token is gone from the address bar')
    assert.equal(new URL(page.url()).hash, '#/now')
    const cookies = await page.context().cookies()
    assert.equal(cookies.length, 1)
    assert.equal(cookies[0]!.httpOnly, true)
    assert.equal(cookies[0]!.sameSite, 'Strict')
    assert.equal(cookies[0]!.path, '/portal')
    assert.ok(!cookies[0]!.value.includes(partner.key), 'the key is not in the cookie')

    const other = await newPortal(browser)
    await other.page.goto(link)
    await other.page.locator('#gate-title', { hasText: 'This link cannot open the dashboard' }).waitFor()
    assert.match(await other.page.locator('#gate-text').innerText(), /used/i)
    assert.equal(await other.page.locator('#nav').isHidden(), true)
    await axe(other.page, 'a refused link')
    await other.page.context().close()
  })

  await t.test('Now: the windows with what is left and a live countdown, the key and its chain', async () => {
    const minute = page.locator('#windows-table tr[data-window="minute"]')
    assert.equal(await minute.locator('td').nth(1).innerText(), '5000')
    const left = Number(await minute.locator('[data-remaining]').innerText())
    assert.ok(left > 4900 && left <= 5000, String(left))
    const countdown = minute.locator('[data-until]')
    // "now" when the page was drawn at the very end of the minute.
    assert.match(await countdown.innerText(), /^in \d+ s$|^in 1 min$|^now$/)
    // Once the reset has come the window is fresh: the countdown says "now", never "0 s ago".
    // (A copy of the cell's countdown, set 1.5 s past, so that the page reading the windows
    // again at a real reset cannot replace it.)
    await countdown.evaluate((span) => {
      const copy = span.cloneNode(true) as typeof span
      copy.id = 'passed-countdown'
      copy.setAttribute('data-until', new Date(Date.now() - 1500).toISOString())
      span.ownerDocument.body.append(copy)
    })
    await page.waitForFunction(() => (globalThis as unknown as Dom).document.querySelector('#passed-countdown')?.textContent === 'now')
    await page.locator('#passed-countdown').evaluate((span) => { span.remove() })
    // Times are the viewer's, with UTC on hover.
    assert.match(await minute.locator('time').getAttribute('title') ?? '', / UTC$/)
    assert.equal(await page.locator('#now-key [data-status]').getAttribute('data-status'), 'active')
    assert.equal(await page.locator('#ban').isHidden(), true)
    await axe(page, 'Now')
    await shot(t, page, 'now')
  })

  // Traffic: an order (so that an order.created fails at the endpoint), and a refusal.
  const category = await h.call({ method: 'POST', url: '/v1/categories', role: 'staff', payload: { name: 'Fish' } })
  const pet = await h.call({ method: 'POST', url: '/v1/pets', role: 'staff', payload: { name: 'Goldie', categoryId: category.json().id } })
  assert.equal(pet.statusCode, 201, pet.body)
  const order = await fetch(`${base}/v1/store/orders`, {
    method: 'POST',
    headers: { 'x-api-key': partner.key, 'content-type': 'application/json' },
    body: JSON.stringify({ petId: pet.json().id, quantity: 1 })
  })
  assert.equal(order.status, 201, await order.clone().text())
  const refused = await fetch(`${base}/v1/categories`, {
    method: 'POST',
    headers: { 'x-api-key': partner.key, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Not mine to make' })
  })
  assert.equal(refused.status, 403)
  const refusedId = refused.headers.get('request-id')
  assert.ok(refusedId !== null)

  await t.test('Usage: the day\'s requests by outcome, and its table', async () => {
    await go(page, '#/usage', '#usage-chart svg')
    await page.locator('#usage-range input[value="7"]').check()
    await page.waitForFunction(() => (globalThis as unknown as Dom).document.querySelectorAll('#usage-chart svg g').length === 7)
    const usage = (await h.call({ method: 'GET', url: '/v1/keys/me/usage?days=7', key: partner.key }))
      .json() as { days: { date: string; allowed: number }[] }
    const today = usage.days.at(-1)!
    const bar = page.locator(`#usage-chart g[data-date="${today.date}"]`)
    assert.ok(Number(await bar.getAttribute('data-allowed')) >= 1)
    // The 403 above is in the other 4xx series (its bar and column), not in the allowed one.
    assert.ok(Number(await bar.getAttribute('data-other4xx')) >= 1)
    assert.equal(await bar.locator('rect.other4xx').count(), 1)
    assert.equal(await page.locator('#usage-table th[data-other4xx]').isVisible(), true)
    assert.equal(await page.locator(`#usage-table tr[data-date="${today.date}"]`).count(), 1)
    await axe(page, 'Usage')
    await shot(t, page, 'usage')
  })

  await t.test('Requests: a refused request found by its Request-Id says which rule refused it', async () => {
    await go(page, '#/requests', '#requests-table tbody tr')
    await page.getByLabel('Find by Request-Id').fill(refusedId)
    await page.getByRole('button', { name: 'Find' }).click()
    const row = page.locator(`#requests-table tr[data-request-id="${refusedId}"]`)
    // The unfiltered list holds that row too: wait for the found one alone, drawn from the answer to Find.
    await page.waitForFunction(() => (globalThis as unknown as Dom).document.querySelectorAll('#requests-table tbody tr').length === 1)
    assert.equal(await page.locator('#requests-table tbody tr').count(), 1)
    await row.waitFor()
    assert.equal(await row.locator('[data-rule]').getAttribute('data-rule'), 'role')
    assert.match(await row.innerText(), /POST \/v1\/categories \(createCategory\)/)
    assert.match(await row.innerText(), /403/)
    assert.match(await row.locator('[data-rule]').innerText(), /needs the staff role/)
    await axe(page, 'Requests')
    await shot(t, page, 'requests')
  })

  await t.test('Requests: the whole list answering late does not overwrite the request found', async () => {
    // The unfiltered list is held while the partner finds its request; let through afterwards, it
    // must not replace the one row found.
    const held: Route[] = []
    const isList = (url: URL) => url.pathname.endsWith('/keys/me/requests') && !url.searchParams.has('requestId')
    await page.route(isList, (route) => { held.push(route) })
    await go(page, '#/usage', '#usage-chart svg')
    await page.evaluate((h) => { (globalThis as unknown as Dom).location.hash = h }, '#/requests')
    for (let waited = 0; held.length === 0 && waited < 10_000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(held.length, 1, 'the list was asked for and held')
    await page.getByLabel('Find by Request-Id').fill(refusedId)
    await page.getByRole('button', { name: 'Find' }).click()
    await page.waitForFunction(() => (globalThis as unknown as Dom).document.querySelectorAll('#requests-table tbody tr').length === 1)
    const finished = page.waitForEvent('requestfinished', (request) => request === held[0]!.request())
    await held[0]!.continue()
    await page.unroute(isList)
    await finished
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 100)))
    assert.equal(await page.locator('#requests-table tbody tr').count(), 1)
    assert.equal(await page.locator(`#requests-table tr[data-request-id="${refusedId}"]`).count(), 1)
  })

  // The order's event fails at the hostile receiver, retried once a second later: failed for good.
  await received(bad, 2, 10_000)
  const eventId = bad.received[0]!.headers['webhook-id'] as string

  await t.test('Webhooks: the failing endpoint\'s attempt shows what we sent and what it answered, as text', async () => {
    await go(page, '#/webhooks', `#webhooks-table tr[data-webhook-id="${failing.id}"]`)
    assert.equal(await page.locator(`#webhooks-table tr[data-webhook-id="${failing.id}"] a`).textContent(), XSS_NAME)
    await axe(page, 'Webhooks')
    await go(page, `#/webhooks/${failing.id}`, `#deliveries-table tr[data-event-id="${eventId}"][data-kind="retry"]`)
    const first = page.locator(`#deliveries-table tr[data-event-id="${eventId}"][data-kind="first"]`)
    assert.match(await first.innerText(), /1, first try/)
    assert.match(await first.innerText(), /HTTP 500/)
    await first.getByRole('button', { name: 'Show' }).click()
    const panel = page.locator('#deliveries-table .attempt').first()
    await panel.waitFor()
    const answer = panel.locator('pre.body').nth(1)
    const text = await answer.textContent() ?? ''
    assert.ok(text.startsWith(HOSTILE_BODY.slice(0, 80)), 'the receiver\'s body, as text')
    assert.ok(text.length <= 4096, 'the first 4 KiB')
    assert.match(await panel.innerText(), /first 4 KiB/)
    assert.ok((await panel.innerText()).includes(HOSTILE_HEADER), 'the receiver\'s header, as text')
    // What we sent: the signed body of the event, with its signature headers.
    assert.equal(await panel.locator('pre.body').first().textContent(), bad.received[0]!.body, 'the exact body signed')
    assert.match(await panel.innerText(), /webhook-signature/)
    assert.equal(await page.locator('main img, main script, main b').count(), 0, 'no element made from the receiver\'s answer')
    assert.equal(await pwned(page), null)
    // Long bodies scroll inside their box.
    const box = await answer.evaluate((node) => {
      const n = node as unknown as { scrollHeight: number; clientHeight: number }
      return [n.scrollHeight, n.clientHeight]
    })
    assert.ok(box[0]! >= box[1]!)
    await axe(page, 'an endpoint with an attempt open')
    await shot(t, page, 'attempt')
  })

  await t.test('Recover: every event that failed for good since a time is delivered again', async () => {
    const before = bad.received.length
    const since = new Date(Date.now() - 3_600_000)
    const local = new Date(since.getTime() - since.getTimezoneOffset() * 60_000).toISOString().slice(0, 19)
    await page.getByLabel('Failed since (your time)').fill(local)
    await page.getByRole('button', { name: 'Recover' }).click()
    await page.locator('#webhook-result', { hasText: '1 failed event is queued again.' }).waitFor()
    const again = await received(bad, before + 1, 10_000)
    assert.equal(again[before]!.headers['webhook-id'], eventId, 'the same event, delivered again')
    await page.getByRole('button', { name: 'Refresh the deliveries' }).click()
    await page.locator(`#deliveries-table tr[data-event-id="${eventId}"][data-kind="replay"]`).first().waitFor()
  })

  let secret = ''
  await t.test('an endpoint added in the page shows its secret once', async () => {
    await go(page, '#/webhooks', '#create-webhook')
    await page.getByLabel('URL (https)').fill(`http://127.0.0.1:${good.port}/hook`)
    await page.getByLabel('Types, separated by commas (order.*, key.rotated)').fill('order.*')
    await page.locator('#new-description').fill('Shop front')
    await page.getByRole('button', { name: 'Add' }).click()
    await page.locator('#secret:not([hidden])').waitFor()
    secret = await page.locator('#secret-value').innerText()
    assert.match(secret, /^whsec_/)
    await page.getByRole('button', { name: 'I have stored it' }).click()
    assert.equal(await page.locator('#secret-value').textContent(), '')
    await page.locator('#webhooks-table a', { hasText: 'Shop front' }).waitFor()
  })

  await t.test('Events: the catalogue, and a test of a chosen type that the receiver verifies', async () => {
    await go(page, '#/events', '#catalogue details[data-type="order.created"]')
    const entry = page.locator('#catalogue details[data-type="order.created"]')
    await entry.locator('summary').click()
    assert.match(await entry.innerText(), /Example of data/)
    await page.selectOption('#test-type', 'order.expired')
    const hook = (await h.call({ method: 'GET', url: '/v1/webhooks', key: partner.key })).json() as { id: string; description?: string }[]
    const shop = hook.find((w) => w.description === 'Shop front')!
    await page.selectOption('#test-webhook', shop.id)
    const before = good.received.length
    await page.getByRole('button', { name: 'Send a test' }).click()
    const got = await received(good, before + 1, 10_000)
    const payload = verified(got[before]!, secret)
    assert.equal(payload.type, 'order.expired')
    await page.locator('#test-result', { hasText: 'was delivered: HTTP 204' }).waitFor()
    await axe(page, 'Events')
    await shot(t, page, 'events')
  })

  await t.test('Webhooks: change, disable, rotate the secret and delete an endpoint, each through the API', async () => {
    const hooks = (await h.call({ method: 'GET', url: '/v1/webhooks', key: partner.key })).json() as { id: string; description?: string }[]
    const shop = hooks.find((w) => w.description === 'Shop front')!
    const read = async () => (await h.call({ method: 'GET', url: `/v1/webhooks/${shop.id}`, key: partner.key }))
    await go(page, `#/webhooks/${shop.id}`, '#webhook-details [data-status="enabled"]')
    await page.locator('#edit summary').click()
    await page.locator('#edit-description').fill('Shop front, orders')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.locator('#webhook-result', { hasText: 'The endpoint is changed.' }).waitFor()
    assert.equal((await read()).json().description, 'Shop front, orders')
    await page.getByRole('button', { name: 'Disable' }).click()
    await page.locator('#webhook-details [data-status="disabled"]').waitFor()
    assert.equal((await read()).json().status, 'disabled')
    await page.getByRole('button', { name: 'Rotate the signing secret' }).click()
    await page.locator('#secret:not([hidden])').waitFor()
    const rotated = await page.locator('#secret-value').innerText()
    assert.match(rotated, /^whsec_/)
    assert.notEqual(rotated, secret)
    await page.getByRole('button', { name: 'I have stored it' }).click()
    await page.getByRole('button', { name: 'Delete…' }).click()
    await page.getByRole('button', { name: 'Delete the endpoint' }).click()
    await page.locator('#webhooks-view:not([hidden])').waitFor()
    assert.equal((await read()).statusCode, 404)
  })

  await t.test('Key: rotate with a grace period shows the new key once and names the successor', async () => {
    await go(page, '#/key', '#key-details [data-status]')
    assert.equal(await page.locator('#key-details [data-status]').getAttribute('data-status'), 'active')
    await axe(page, 'Key')
    await page.getByLabel('Grace period in hours (0 to 168): this key keeps working that long').fill('1')
    await page.getByRole('button', { name: 'Rotate' }).click()
    await page.locator('#new-key:not([hidden])').waitFor()
    const fresh = await page.locator('#new-key-value').innerText()
    // The new key works; the page names it as the successor, and the session goes on (the grace period).
    const me = await fetch(`${base}/v1/keys/me`, { headers: { 'x-api-key': fresh } })
    assert.equal(me.status, 200)
    const successor = (await me.json() as { id: number }).id
    await page.locator(`#key-details [data-successor="${successor}"]`).waitFor()
    assert.equal(await page.locator('#key-details [data-status]').getAttribute('data-status'), 'rotated')
    await page.getByRole('button', { name: 'I have stored it' }).click()
    assert.equal(await page.locator('#new-key-value').textContent(), '')
  })

  await t.test('readable at 360 px: no page is wider than the screen', async () => {
    await page.setViewportSize({ width: 360, height: 800 })
    for (const [hash, ready] of [['#/now', '#windows-table tbody tr'], ['#/usage', '#usage-chart svg'], ['#/requests', '#requests-table tbody tr'],
      ['#/webhooks', '#webhooks-table tbody tr'], [`#/webhooks/${failing.id}`, '#deliveries-table tbody tr'], ['#/events', '#catalogue details'], ['#/key', '#key-details dt']] as const) {
      await go(page, hash, ready)
      const width = await page.evaluate(() => (globalThis as unknown as Dom).document.documentElement.scrollWidth)
      assert.ok(width <= 360, `${hash} is ${width} px wide: ${await page.evaluate(wider)}`)
    }
    await go(page, '#/now', '#windows-table tbody tr')
    await shot(t, page, 'narrow')
    await page.setViewportSize({ width: 1280, height: 900 })
  })

  await t.test('the keyboard alone reaches the pages and their buttons, with a visible focus', async () => {
    await go(page, '#/now', '#windows-table tbody tr')
    // From the top of the page: the skip link first, then the navigation in order.
    await page.locator('.skip').focus()
    assert.equal(await page.locator('.skip').isVisible(), true, 'the skip link shows when focused')
    const seen: string[] = []
    for (let i = 0; i < 8; i++) {
      await page.keyboard.press('Tab')
      seen.push(await page.evaluate(() => (globalThis as unknown as Dom).document.activeElement.textContent))
    }
    assert.deepEqual(seen.slice(0, 7), ['Now', 'Usage', 'Requests', 'Webhooks', 'Events', 'Key', 'Sign out'])
    // The focused link is outlined.
    await page.keyboard.press('Shift+Tab')
    const outline = await page.evaluate(() => {
      const g = globalThis as unknown as Dom
      return g.getComputedStyle(g.document.activeElement).outlineStyle
    })
    assert.notEqual(outline, 'none')
    // Enter on a nav link opens its page.
    await page.keyboard.press('Shift+Tab')
    await page.keyboard.press('Enter')
    await page.locator('#key-view:not([hidden])').waitFor()
  })

  await t.test('"Sign out" ends the session: the page says so, and the API door refuses it', async () => {
    await page.getByRole('button', { name: 'Sign out', exact: true }).click()
    await page.locator('#gate-title', { hasText: 'You are signed out' }).waitFor()
    const status = await page.evaluate(async () => (await fetch('/portal/session')).status)
    assert.equal(status, 401)
    await page.reload()
    await page.locator('#gate-title', { hasText: 'Open your dashboard with a link' }).waitFor()
    await axe(page, 'signed out')
  })

  assert.deepEqual(errors, [], 'no console error, page error or dialog')
})

void test('the portal: a key revoked while its session is open ends the session, in words', { skip: chromiumGate.skip, timeout: 60_000 }, async (t) => {
  const browser = await launchChromium(t)
  const { h, base } = await setUp(t)
  const partner = await h.makeKey('customer')
  const { page, errors } = await newPortal(browser)
  await page.goto(await linkFor(base, partner.key))
  await page.locator('#windows-table tbody tr').first().waitFor()
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/admin/keys/${partner.id}` })).statusCode, 204)
  await go(page, '#/usage', '#gate-title')
  await page.locator('#gate-title', { hasText: 'Your session ended' }).waitFor()
  assert.match(await page.locator('#gate-text').innerText(), /revoked/i)
  assert.equal(await page.locator('#nav').isHidden(), true)
  await axe(page, 'session ended')
  assert.deepEqual(errors, [])
})

void test('the portal: a banned key sees on Now until when, a countdown and why, and its pages still open', { skip: chromiumGate.skip, timeout: 60_000 }, async (t) => {
  const browser = await launchChromium(t)
  const { h, base } = await setUp(t)
  const partner = await h.makeKey('customer', 'free')
  const link = await linkFor(base, partner.key)
  // A real ban: the free plan's 60 a minute, then 21 calls while limited; the 21st refusal bans it.
  for (let i = 0; i < 60 + 21; i++) await h.call({ method: 'GET', url: '/v1/pets?limit=1', key: partner.key })
  const refused = await h.call({ method: 'GET', url: '/v1/pets?limit=1', key: partner.key })
  assert.equal(refused.json().code, 'api_key_banned')

  const { page, errors } = await newPortal(browser)
  // The page's clock, so that it can be moved past the ban's end (the server's is not).
  await page.clock.install()
  await page.goto(link)
  await page.locator('#ban h3', { hasText: 'Your key is banned' }).waitFor()
  assert.equal(await page.locator('#now-key [data-status]').getAttribute('data-status'), 'banned')
  assert.equal(await page.locator('#ban [data-ban-reason]').innerText(), BAN_REASON)
  // A first ban is 15 minutes.
  assert.match(await page.locator('#ban [data-until]').innerText(), /^in 1[45] min$/)
  assert.match(await page.locator('#ban time').getAttribute('title') ?? '', / UTC$/)
  await axe(page, 'Now, banned')
  // Once the ban's end has come, its countdown says so, never "N s ago" beside "is refused until".
  await page.clock.fastForward('15:30')
  await page.waitForFunction(() => (globalThis as unknown as Dom).document.querySelector('#ban [data-until]')?.textContent === 'ended')
  // The dashboard's reads are free for a banned key: another page opens too.
  await go(page, '#/usage', '#usage-chart svg')
  assert.deepEqual(errors, [])
})
