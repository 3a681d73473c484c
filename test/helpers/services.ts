// The local services the tests and the benchmark lean on (PostgreSQL, Redis, a program such as
// Chromium or wrk), and the one rule for when one is missing:
//
//   a test that needs a service is SKIPPED, with the reason, when the service does not answer,
//   except under CI (the CI variable set, and not "", "0" or "false"), where it FAILS with that
//   reason: CI must never go green by skipping.
//
// The probes live in scripts/services.ts, shared with bench/ (which never imports from test/);
// they are re-exported here. The rule reads CI only when the caller does not pass it.
import type { TestContext } from 'node:test'

export { deleteRedisKeys, postgresUnavailableReason, redisUnavailableReason, safeUrl, withPostgres } from '../../scripts/services.ts'

// ---------------------------------------------------------------------------------------------
// The rule

/** True under CI: the variable set to anything but "", "0" or "false". */
export function underCi (ci: string | undefined): boolean {
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false'
}

/**
 * What a test or suite that needs a service declares. `skip` goes into the test's (or describe's)
 * options; `check()` is the body's first line: under CI, with the service missing, it throws the
 * reason, so the test fails instead of being skipped.
 */
export interface ServiceGate {
  skip: string | false
  check (): void
}

export function serviceGate (reason: string | null, ci: string | undefined = process.env.CI): ServiceGate {
  if (reason === null) return { skip: false, check () {} }
  if (!underCi(ci)) return { skip: reason, check () {} }
  return { skip: false, check () { throw ciFailure(reason) } }
}

/**
 * The same rule inside a running test: true when the service answers; otherwise skips the test
 * and returns false (the caller returns at once) or, under CI, throws the reason.
 */
export function requireService (
  t: TestContext,
  reason: string | null,
  ci: string | undefined = process.env.CI
): boolean {
  if (reason === null) return true
  if (!underCi(ci)) {
    t.skip(reason)
    return false
  }
  throw ciFailure(reason)
}

/**
 * For a helper that must return a value: after requireService skipped the test, throw this to end
 * its body. node:test still reports the test as skipped (and the run passes).
 */
export function skippedTestEnd (what: string): Error {
  const error = new Error(`${what}: skipped, the service does not answer`)
  error.stack = error.message
  return error
}

function ciFailure (reason: string): Error {
  const error = new Error(`CI is set, so a missing service fails the test: ${reason}`)
  // The reason is the whole story; a stack into this helper would only hide it.
  error.stack = error.message
  return error
}
