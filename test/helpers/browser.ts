// Debian's Chromium for the browser tests, launched by playwright-core and closed within a bound.
// Launch it before building the app: after-hooks run in the order they were registered, so the
// browser (and its keep-alive connections and requests in flight) is gone before the app closes.
// A loaded CI once held a browser test's after-hooks for five minutes after its body passed.
import { existsSync } from 'node:fs'
import type { TestContext } from 'node:test'
import { chromium, type Browser } from 'playwright-core'
import { serviceGate } from './services.ts'

export const CHROMIUM = '/usr/bin/chromium'
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run']

/** Skips a browser test when Chromium is missing; under CI, fails it. */
export const chromiumGate = serviceGate(
  existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing; install it with apt-get install -y chromium`
)

/** How long a close is waited for. */
const CLOSE_MS = 5_000

/** A Chromium closed after the test, within CLOSE_MS. */
export async function launchChromium (t: TestContext): Promise<Browser> {
  chromiumGate.check()
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 })
  t.after(() => closeBounded(browser))
  return browser
}

/** Closes `browser`, waiting at most CLOSE_MS. */
export async function closeBounded (browser: Browser): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => { resolve('late') }, CLOSE_MS) })
  const closed = browser.close().then(() => 'closed' as const, () => 'closed' as const)
  const outcome = await Promise.race([closed, late])
  clearTimeout(timer)
  // Past the bound the process is left to --test-force-exit: a test never waits on it longer.
  if (outcome === 'late') process.emitWarning('Chromium did not close within 5 s; left to the process exit')
}
