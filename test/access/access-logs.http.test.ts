// What the access hook logs about bans (src/http/access.ts): the request that starts a ban logs
// a warning with the subject and the ban's end; when the ban's record in the database fails, an
// error with the subject and the failure. The production logger, writing to memory. Written
// against the survivors of `npm run mutate -- access` (docs/testing.md); the request log itself
// is logging.test.ts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { AppError } from '../../src/errors.ts'
import { createLogger } from '../../src/server.ts'
import { buildTestApp, T0 } from '../helpers/app.ts'

type Line = Record<string, unknown> & { msg?: string; level: number }

function capturedLogger () {
  const chunks: string[] = []
  const logger = createLogger(loadConfig({ LOG_LEVEL: 'info' }), { write: (chunk: string) => { chunks.push(chunk) } })
  return { logger, lines: (): Line[] => chunks.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line) }
}

for (const recorded of [true, false]) {
  test(`the request that starts a ban logs a warning with the subject and the end${recorded ? '' : '; a failed record logs an error with the failure'}`, async (t) => {
    const log = capturedLogger()
    const { call, makeKey, stores } = await buildTestApp(t, { deps: { logger: log.logger } })
    const { id, key } = await makeKey('customer', 'enterprise', { perMinute: 1, perDay: 100 })
    if (!recorded) stores.keys.recordBan = async () => { throw new AppError('service_unavailable', 'the database is unavailable') }
    const codes: number[] = []
    // The 23rd is refused by the ban in force, which it did not start: no second warning.
    for (let i = 0; i < 23; i++) codes.push((await call({ method: 'GET', url: '/v1/pets', key })).statusCode)
    assert.deepEqual(codes, [200, ...Array(22).fill(429)])
    const warnings = log.lines().filter((l) => l.msg === 'ban started')
    assert.deepEqual(
      warnings.map((l) => [l.level, l.subject, l.until]),
      [[40, `key:${id}`, new Date(T0 + 15 * 60_000).toISOString()]]
    )
    const errors = log.lines().filter((l) => l.msg === 'ban in force but not recorded in the database: retried later')
    if (recorded) {
      assert.deepEqual(errors, [])
    } else {
      assert.deepEqual(
        errors.map((l) => [l.level, l.subject, (l.err as { message?: string } | undefined)?.message]),
        [[50, `key:${id}`, 'the database is unavailable']]
      )
    }
  })
}

test('a request outside /v1, which the hook does not charge, logs no error', async (t) => {
  const log = capturedLogger()
  const { app } = await buildTestApp(t, { deps: { logger: log.logger } })
  assert.equal((await app.inject({ method: 'GET', url: '/openapi.json' })).statusCode, 200)
  assert.equal((await app.inject({ method: 'GET', url: '/no/such/page' })).statusCode, 404)
  assert.deepEqual(log.lines().filter((l) => l.level >= 50), [])
})
