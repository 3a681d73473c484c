// Browser checks of the /docs page (Scalar's API reference), shared by the docs tests (fixture
// document) and the main suite (the app's own document). Everything is asserted through what a
// reader sees or does: navigation text, badges, the "Test Request" button, the API client.
//
// Locating an operation: Scalar gives each operation's element an id ending in
// `/<METHOD><path>` (its deep link; src/openapi/docs/docs-init.js pins it) and renders operations
// only when they come near the viewport, so we scroll the placeholder into view first.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import type { Locator, Page, Response } from 'playwright-core'

/** An operation as `METHOD /path`, with the path as written in the document: `GET /pets/{petId}`. */
export type OperationRef = `${string} /${string}`

export interface DocsPageExpectations {
  /** Names of the `x-tagGroups`, shown as headings in the navigation. */
  groups: string[]
  /** The deprecated operation and the sunset text it must show, e.g. `2027-05-21`. */
  deprecated: { operation: OperationRef; sunset: string }
  /** Badges (from `x-badges`) that must be visible on the given operations. */
  badges: Array<{ operation: OperationRef; text: string }>
  /** An operation whose try-it panel must work with this API key, answering `status` with `text` in the body. */
  tryIt: { operation: OperationRef; apiKey: string; status: number; text: string }
  /** An operation with `x-hideTryItPanel: true`, and a neighbour that must still have its try-it button. */
  tryItHidden: { operation: OperationRef; neighbour: OperationRef }
}

export interface DocsPageCheckOptions {
  /** Where to save screenshots (overview, deprecated, try-it, try-it-hidden); none when absent. */
  screenshotDir?: string
  /** Upper bound for each wait, in milliseconds. */
  timeoutMs?: number
}

const TEST_REQUEST = /test request/i
// Scalar's badge class: descriptions often repeat a badge's word ("**Beta**: …"), so match badges only.
const BADGE = '.badge'

export function parseOperation (operation: OperationRef): { method: string; path: string } {
  const space = operation.indexOf(' ')
  return { method: operation.slice(0, space).toUpperCase(), path: operation.slice(space + 1) }
}

/** The operation's rendered element, scrolled into view. */
export async function operationSection (page: Page, operation: OperationRef, timeoutMs = 15_000): Promise<Locator> {
  const { method, path } = parseOperation(operation)
  const idSuffix = JSON.stringify(`/${method}${path}`)
  const placeholder = page.locator(`[id$=${idSuffix}]`).first()
  await placeholder.waitFor({ state: 'attached', timeout: timeoutMs })
  await placeholder.scrollIntoViewIfNeeded({ timeout: timeoutMs })
  const section = page.locator(`section[id$=${idSuffix}]`).first()
  await section.waitFor({ state: 'visible', timeout: timeoutMs })
  await section.scrollIntoViewIfNeeded({ timeout: timeoutMs })
  return section
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const exactly = (text: string): RegExp => new RegExp(`^\\s*${escapeRegExp(text)}\\s*$`, 'i')

export async function checkDocsPage (
  page: Page,
  baseUrl: string,
  expectations: DocsPageExpectations,
  options: DocsPageCheckOptions = {}
): Promise<void> {
  const timeout = options.timeoutMs ?? 15_000
  const origin = new URL(baseUrl).origin
  const shot = async (name: string): Promise<void> => {
    if (options.screenshotDir !== undefined) await page.screenshot({ path: join(options.screenshotDir, `${name}.png`) })
  }

  // Offline and CSP-clean: every request stays on the API's origin, nothing is refused.
  const foreignRequests: string[] = []
  const cspViolations: string[] = []
  const pageErrors: string[] = []
  const onRequest = (request: { url: () => string }): void => {
    const url = new URL(request.url())
    if (url.protocol.startsWith('http') && url.origin !== origin) foreignRequests.push(url.href)
  }
  const onConsole = (message: { text: () => string }): void => {
    if (message.text().includes('Content Security Policy')) cspViolations.push(message.text())
  }
  const onPageError = (error: Error): void => { pageErrors.push(error.message) }
  page.on('request', onRequest)
  page.on('console', onConsole)
  page.on('pageerror', onPageError)

  try {
    const response = await page.goto(new URL('/docs', baseUrl).href, { waitUntil: 'load', timeout })
    assert.equal(response?.status(), 200, 'GET /docs answers 200')

    // Tag groups head the navigation.
    const sidebar = page.locator('aside').first()
    await sidebar.waitFor({ state: 'visible', timeout })
    for (const group of expectations.groups) {
      await sidebar.getByText(exactly(group)).first().waitFor({ state: 'visible', timeout })
    }
    await shot('overview')

    // The deprecated operation is marked as such and shows its sunset date.
    const deprecated = await operationSection(page, expectations.deprecated.operation, timeout)
    await deprecated.locator(BADGE).filter({ hasText: exactly('deprecated') }).first().waitFor({ state: 'visible', timeout })
    await deprecated.getByText(expectations.deprecated.sunset).first().waitFor({ state: 'visible', timeout })
    await shot('deprecated')

    // Stability badges.
    for (const badge of expectations.badges) {
      const section = await operationSection(page, badge.operation, timeout)
      await section.locator(BADGE).filter({ hasText: exactly(badge.text) }).first().waitFor({ state: 'visible', timeout })
    }

    // Try it: open the API client from the operation, enter the key, send, see the answer.
    const { method, path } = parseOperation(expectations.tryIt.operation)
    const tryIt = await operationSection(page, expectations.tryIt.operation, timeout)
    await tryIt.getByRole('button', { name: TEST_REQUEST }).click({ timeout })
    const client = page.getByRole('dialog')
    await client.waitFor({ state: 'visible', timeout })
    await client.getByRole('textbox', { name: 'Value', exact: true }).first().fill(expectations.tryIt.apiKey, { timeout })
    const pathPattern = new RegExp(`${escapeRegExp(path).replace(/\\\{[^}]*\\\}/g, '[^/]+')}$`)
    const answered = page.waitForResponse((r: Response) =>
      r.request().method() === method && pathPattern.test(new URL(r.url()).pathname), { timeout })
    await client.getByRole('button', { name: /^send\b/i }).visible().first().click({ timeout })
    const answer = await answered
    assert.equal(answer.request().headers()['x-api-key'], expectations.tryIt.apiKey, 'the try-it request carries the key')
    assert.equal(answer.status(), expectations.tryIt.status, 'the server answers the try-it request')
    await client.getByText(new RegExp(`\\b${expectations.tryIt.status}\\b`)).first().waitFor({ state: 'visible', timeout })
    await client.getByText(expectations.tryIt.text).first().waitFor({ state: 'visible', timeout })
    await shot('try-it')
    await page.keyboard.press('Escape')
    await client.waitFor({ state: 'hidden', timeout })

    // No try-it control on the switched-off operation; its neighbour keeps one, so this can fail.
    const neighbour = await operationSection(page, expectations.tryItHidden.neighbour, timeout)
    await neighbour.getByRole('button', { name: TEST_REQUEST }).waitFor({ state: 'visible', timeout })
    const hidden = await operationSection(page, expectations.tryItHidden.operation, timeout)
    await hidden.getByText(/switched off/i).first().waitFor({ state: 'visible', timeout })
    assert.equal(await hidden.getByRole('button', { name: TEST_REQUEST }).count(), 0,
      `${expectations.tryItHidden.operation} shows no "Test Request" button`)
    assert.equal(await hidden.getByRole('button', { name: /send/i }).count(), 0,
      `${expectations.tryItHidden.operation} shows no send control`)
    await shot('try-it-hidden')

    assert.deepEqual(foreignRequests, [], 'the page loads nothing from other origins')
    assert.deepEqual(cspViolations, [], 'the page runs within its Content-Security-Policy')
    assert.deepEqual(pageErrors, [], 'the page throws no uncaught errors')
  } finally {
    page.off('request', onRequest)
    page.off('console', onConsole)
    page.off('pageerror', onPageError)
  }
}
