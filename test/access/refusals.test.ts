// The access service's refusals word for word (src/access/refusals.ts): the 429s from a real
// limiter's decisions, the 400 for a key in the URL, the 401s, the 403, and a failure to read a
// key that is not an Error. Written against the survivors of `npm run mutate -- access`
// (docs/testing.md).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Principal } from '../../src/access/principal.ts'
import { limited, refusalOf, toRefusal, type RefusalFacts } from '../../src/access/refusals.ts'
import { AppError } from '../../src/errors.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { manualClock } from '../../src/shared/clock.ts'

const T = Date.UTC(2026, 10, 21, 12, 0, 30)

const facts = (more: Partial<RefusalFacts> = {}): RefusalFacts => ({
  key: 'psk_x',
  role: 'customer',
  preflight: false,
  keyInQuery: null,
  ...more
})
const staff: Principal = {
  keyId: 2,
  role: 'staff',
  plan: 'pro',
  quota: { perMinute: 300, perDay: 10_000 },
  caller: { keyId: 1, role: 'staff', plan: 'pro', subject: 'key:1' },
  scopes: null
}

function fields (error: Error | null) {
  assert.ok(error === null || error instanceof AppError)
  return error === null ? null : { code: error.code, message: error.message, details: error.details }
}

test('429 rate_limited says when to retry; 429 api_key_banned names the end of the ban, not the time of the request; an address is named, never a key', () => {
  const clock = manualClock(T)
  const limiter = createMemoryRateLimiter({ now: clock.now })
  const quota = { perMinute: 1, perDay: 100 }
  limiter.consume('key:1', quota)
  const refused = limiter.consume('key:1', quota)
  assert.ok(!(refused instanceof Promise))
  assert.deepEqual(fields(limited(refused, clock.now())), { code: 'rate_limited', message: 'rate limit exceeded; retry in 30 s', details: undefined })
  let banned = refused
  for (let i = 0; i < 20; i++) banned = limiter.consume('key:1', quota) as typeof refused
  assert.equal(banned.code, 'api_key_banned')
  assert.deepEqual(fields(limited(banned, clock.now())), {
    code: 'api_key_banned',
    message: 'this key is banned until 2026-11-21T12:15:30.000Z for calling while told to wait; back off exponentially after a 429',
    details: undefined
  })
  // The same decisions charged to a client address (no valid key): the refusal names the address.
  assert.deepEqual(fields(limited(refused, clock.now(), 'ip:192.0.2.7')), { code: 'rate_limited', message: 'too many requests without a valid API key from 192.0.2.7; retry in 30 s', details: undefined })
  assert.deepEqual(fields(limited(banned, clock.now(), 'ip6:2001:db8:0:0::/64')), {
    code: 'address_banned',
    message: 'requests without a valid API key from 2001:db8:0:0::/64 are banned until 2026-11-21T12:15:30.000Z: they kept calling while told to wait; a valid key is still served',
    details: undefined
  })
})

test('a key in the URL is refused first, naming the parameter, whatever else holds', () => {
  const expected = {
    code: 'validation_failed',
    message: 'API keys are never accepted in the URL (query parameter "api_key"): send the key in the X-API-Key header (or Authorization: Bearer), and treat this key as exposed',
    details: [{ path: '/query/api_key', message: 'send the key in the X-API-Key header' }]
  }
  assert.deepEqual(fields(refusalOf(facts({ keyInQuery: 'api_key' }), staff, null)), expected)
  assert.deepEqual(fields(refusalOf(facts({ keyInQuery: 'api_key', role: undefined }), null, null)), expected, 'even on a path without a role')
  assert.deepEqual(fields(refusalOf(facts({ keyInQuery: 'api_key', preflight: true }), null, null)), expected)
})

test('no refusal for a path without a role or a preflight, whatever the key', () => {
  assert.equal(refusalOf(facts({ role: undefined }), null, null), null)
  assert.equal(refusalOf(facts({ role: undefined }), null, T), null)
  assert.equal(refusalOf(facts({ preflight: true, role: 'admin' }), null, null), null)
  assert.equal(refusalOf(facts({ preflight: true, role: 'admin' }), staff, null), null)
})

test('401: api_key_expired names the instant; unauthenticated tells a missing key from an invalid one', () => {
  assert.deepEqual(fields(refusalOf(facts(), null, T)), {
    code: 'api_key_expired',
    message: 'the API key expired at 2026-11-21T12:00:30.000Z; use the key that replaced it, or ask an admin for a new one',
    details: undefined
  })
  assert.deepEqual(fields(refusalOf(facts({ key: null }), null, null)), { code: 'unauthenticated', message: 'an API key is required: send it as X-API-Key or Authorization: Bearer', details: undefined })
  assert.deepEqual(fields(refusalOf(facts(), null, null)), { code: 'unauthenticated', message: 'the API key is not valid (unknown or revoked)', details: undefined })
  assert.equal(refusalOf(facts({ role: 'customer' }), staff, T), null, 'an expiry with a principal is no refusal')
})

test('403 below the operation\'s role, naming both roles; at or above it, none', () => {
  assert.deepEqual(fields(refusalOf(facts({ role: 'admin' }), staff, null)), { code: 'forbidden', message: 'this operation needs the admin role; the key has staff', details: undefined })
  assert.equal(refusalOf(facts({ role: 'staff' }), staff, null), null)
  assert.equal(refusalOf(facts({ role: 'customer' }), staff, null), null)
})

test('a failure to read a key is answered as itself when an Error, else as an Error with its text', () => {
  const error = new AppError('service_unavailable', 'the database is unavailable')
  assert.equal(toRefusal(error), error)
  const wrapped = toRefusal('connection reset')
  assert.ok(wrapped instanceof Error)
  assert.equal(wrapped.message, 'connection reset')
  assert.equal(toRefusal(undefined).message, 'undefined')
})
