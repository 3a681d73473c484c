// One temporary directory per test, removed when the test ends (the one mkdtemp + rm of the tests).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'

/** A fresh directory under the system's temporary directory, removed after the test. */
export function tempDir (t: Pick<TestContext, 'after'>, prefix = 'petstore-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * A fresh directory under the system's temporary directory that outlives the test: what a person
 * opens afterwards (the browser tests' screenshots).
 */
export function keptDir (prefix = 'petstore-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}
