// /readyz is cheap for anyone to call (issue 30 item 8): a flood of probes costs one readiness
// check (a database and a Redis round trip) a second, and a change is seen within a second.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'
import { READINESS_CACHE_MS } from '../../src/ops/health.ts'
import type { Readiness } from '../../src/shared/readiness.ts'

test('200 concurrent and sequential /readyz calls within a second make one readiness check; the next second makes one more and sees the change', { timeout: 15_000 }, async (t) => {
  // Fault caught: every call ran the check: through the shipped nginx, a public and unlimited
  // /readyz cost a PostgreSQL and a Redis round trip per call.
  let checks = 0
  let down = false
  const readiness: Readiness = {
    async check () {
      checks++
      await new Promise((resolve) => setTimeout(resolve, 20))
      return { status: 'ok', checks: { database: { status: down ? 'down' : 'ok' } } }
    }
  }
  const { app } = await buildTestApp(t, { deps: { readiness } })
  const started = performance.now()
  const first = await Promise.all(Array.from({ length: 100 }, () => app.inject({ method: 'GET', url: '/readyz' })))
  for (let i = 0; i < 100; i++) assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
  assert.ok(performance.now() - started < READINESS_CACHE_MS, 'the calls fit in one second (else the count below means nothing)')
  assert.deepEqual(new Set(first.map((r) => r.statusCode)), new Set([200]))
  assert.equal(checks, 1)

  down = true
  await new Promise((resolve) => setTimeout(resolve, READINESS_CACHE_MS))
  const after = await Promise.all(Array.from({ length: 20 }, () => app.inject({ method: 'GET', url: '/readyz' })))
  assert.deepEqual(new Set(after.map((r) => r.statusCode)), new Set([503]))
  assert.equal(checks, 2)
})

test('a failed check is not kept past its second: the next one runs', { timeout: 15_000 }, async (t) => {
  let calls = 0
  const readiness: Readiness = {
    async check () {
      calls++
      if (calls === 1) throw new Error('database unreachable')
      return { status: 'ok', checks: { database: { status: 'ok' } } }
    }
  }
  const { app } = await buildTestApp(t, { deps: { readiness } })
  assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 503)
  await new Promise((resolve) => setTimeout(resolve, READINESS_CACHE_MS))
  assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
})
