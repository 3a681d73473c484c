// The logs: JSON lines with the request id, the key's id (never the key) once a request is
// authenticated, the cause of a 500 (which the response hides), and bans.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/server.ts'
import { buildTestApp } from '../helpers/app.ts'

type Line = Record<string, unknown> & { msg?: string; reqId?: string; keyId?: number; level: number }

/** The production logger (same options and redaction), writing to memory. */
function capturedLogger () {
  const chunks: string[] = []
  const logger = createLogger(loadConfig({ LOG_LEVEL: 'info' }), { write: (chunk: string) => { chunks.push(chunk) } })
  return {
    logger,
    text: () => chunks.join(''),
    lines: (): Line[] => chunks.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line)
  }
}

test('each request writes one JSON line, "request completed", with the request id, the key id, the status and the time, and never the key', async (t) => {
  const log = capturedLogger()
  const { call, makeKey, keys } = await buildTestApp(t, { deps: { logger: log.logger } })
  const viaHeader = await makeKey('customer')
  const viaBearer = await makeKey('staff')
  const unknownKey = 'psk_' + 'x'.repeat(43)

  const a = await call({ method: 'GET', url: '/v1/pets', key: viaHeader.key })
  const b = await call({ method: 'GET', url: '/v1/categories', key: null, headers: { authorization: `Bearer ${viaBearer.key}` } })
  const c = await call({ method: 'DELETE', url: '/v1/categories/1', key: viaHeader.key }) // 403: the role is wrong
  const d = await call({ method: 'GET', url: '/v1/pets', key: unknownKey })
  assert.deepEqual([a.statusCode, b.statusCode, c.statusCode, d.statusCode], [200, 200, 403, 401])

  const lines = log.lines()
  const of = (res: typeof a) => lines.filter((l) => l.reqId === res.headers['request-id'])
  const expected = [
    [a, viaHeader.id, 'GET', '/v1/pets', 200],
    [b, viaBearer.id, 'GET', '/v1/categories', 200],
    [c, viaHeader.id, 'DELETE', '/v1/categories/1', 403],
    [d, undefined, 'GET', '/v1/pets', 401]
  ] as const
  for (const [res, keyId, method, url, statusCode] of expected) {
    const mine = of(res)
    assert.equal(mine.length, 1, JSON.stringify(mine))
    const line = mine[0]!
    assert.equal(typeof line.responseTime, 'number')
    const { level, time, pid, hostname, responseTime: _t, code: _c, reason: _r, ...rest } = line
    assert.equal(level, 30)
    assert.equal(typeof time, 'number')
    assert.equal(typeof pid, 'number')
    assert.equal(typeof hostname, 'string')
    assert.deepEqual(rest, {
      reqId: res.headers['request-id'],
      ...(keyId !== undefined && { keyId }),
      method,
      url,
      statusCode,
      msg: 'request completed'
    })
  }
  // An error's code and message are on its line.
  assert.equal(of(c)[0]!.code, 'forbidden')
  assert.match(String(of(c)[0]!.reason), /needs the staff role/)
  assert.equal(of(d)[0]!.code, 'unauthenticated')

  const text = log.text()
  for (const key of [...Object.values(keys), viaHeader.key, viaBearer.key, unknownKey]) assert.ok(!text.includes(key), 'a key reached the log')
  assert.doesNotMatch(text, /psk_[A-Za-z0-9]/)
})

test('a key pasted into the URL is redacted from the log line', async (t) => {
  const log = capturedLogger()
  const { call, keys } = await buildTestApp(t, { deps: { logger: log.logger } })
  const res = await call({ method: 'GET', url: `/v1/pets?api_key=${keys.customer}&limit=2`, key: keys.customer })
  assert.equal(res.statusCode, 400)
  const line = log.lines().find((l) => l.reqId === res.headers['request-id'])
  assert.equal(line?.url, '/v1/pets?api_key=[redacted]&limit=2')
  assert.ok(!log.text().includes(keys.customer))
})

test('refusals (429) are logged aggregated: the first of a window in full, the rest as one count when the next window begins', async (t) => {
  const log = capturedLogger()
  const { call, makeKey, clock } = await buildTestApp(t, { deps: { logger: log.logger } })
  const { id, key } = await makeKey('customer', 'enterprise', { perMinute: 1, perDay: 1000 })

  const codes: number[] = []
  for (let i = 0; i < 15; i++) codes.push((await call({ method: 'GET', url: '/v1/pets', key })).statusCode)
  assert.deepEqual(codes, [200, ...Array(14).fill(429)])
  const completed = () => log.lines().filter((l) => l.msg === 'request completed')
  assert.deepEqual(completed().map((l) => [l.statusCode, l.keyId, l.code]), [[200, id, undefined], [429, id, 'rate_limited']])
  assert.equal(log.lines().filter((l) => l.msg === 'requests refused').length, 0, 'counted, not yet written')

  // The next window: its first refusal writes the count of the last window, then itself.
  clock.advance(61_000)
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).statusCode, 200)
  assert.equal((await call({ method: 'GET', url: '/v1/pets', key })).statusCode, 429)
  const refused = log.lines().filter((l) => l.msg === 'requests refused')
  assert.equal(refused.length, 1)
  assert.equal(refused[0]!.refused, 13)
  assert.deepEqual(refused[0]!.byCode, { rate_limited: 13 })
  assert.equal(completed().filter((l) => l.statusCode === 429).length, 2)
  assert.ok(log.lines().length <= 6, `${log.lines().length} lines for 17 requests`)
})

test('a 500 logs its cause with the request id and key id while the response hides it', async (t) => {
  const log = capturedLogger()
  const { call, makeKey, stores } = await buildTestApp(t, { deps: { logger: log.logger } })
  const { id, key } = await makeKey('customer')
  stores.categories.getCategory = async () => {
    throw Object.assign(new Error('terminating connection due to administrator command: SELECT secret_column FROM categories WHERE id = $1'), { code: '57P01' })
  }

  const res = await call({ method: 'GET', url: '/v1/categories/1', key })
  assert.equal(res.statusCode, 500)
  assert.equal(res.json().code, 'internal_error')
  assert.doesNotMatch(res.body, /terminating|secret_column|SELECT|57P01/)

  const failed = log.lines().find((l) => l.msg === 'request failed')
  assert.ok(failed !== undefined, 'the failure is logged')
  assert.equal(failed.reqId, res.headers['request-id'])
  assert.equal(failed.reqId, res.json().requestId, 'the id a client quotes finds the line')
  assert.equal(failed.keyId, id)
  assert.equal(failed.level, 50, 'error')
  const err = failed.err as { message: string; stack: string; code: string }
  assert.match(err.message, /terminating connection.*secret_column/)
  assert.equal(err.code, '57P01')
  assert.match(err.stack, /Error: terminating connection/)
  assert.ok(!log.text().includes(key))
})

test('a ban is logged as a warning with the key id and its end, and the key never appears', async (t) => {
  const log = capturedLogger()
  const { call, makeKey } = await buildTestApp(t, { deps: { logger: log.logger } })
  const { id, key } = await makeKey('customer', 'enterprise', { perMinute: 1, perDay: 100 })

  // One allowed, then 20 refusals and the 21st, which starts the ban; send half as Bearer.
  const codes: number[] = []
  for (let i = 0; i < 22; i++) {
    const res = await call(i % 2 === 0
      ? { method: 'GET', url: '/v1/pets', key }
      : { method: 'GET', url: '/v1/pets', key: null, headers: { authorization: `Bearer ${key}` } })
    codes.push(res.statusCode)
  }
  assert.deepEqual(codes, [200, ...Array(21).fill(429)])

  const bans = log.lines().filter((l) => l.msg === 'ban started')
  assert.equal(bans.length, 1)
  const ban = bans[0]!
  assert.equal(ban.level, 40, 'warn')
  assert.equal(ban.keyId, id)
  assert.equal(ban.subject, `key:${id}`)
  assert.equal(typeof ban.reqId, 'string')
  assert.match(String(ban.until), /^\d{4}-\d\d-\d\dT/)
  assert.equal(Object.keys(ban).filter((k) => k === 'keyId').length, 1)
  assert.doesNotMatch(log.text(), new RegExp(key))
})

test('a preflight, a refusal, a served read and a sunset 410 each end once: one line each, and no "reply already sent" warning', async (t) => {
  const log = capturedLogger()
  const { app, call, clock } = await buildTestApp(t, {
    deps: { logger: log.logger },
    env: { PETSTORE_GET_PET_SUNSET: '2026-12-01T00:00:00Z' }
  })
  const preflight = await app.inject({ method: 'OPTIONS', url: '/v1/pets', headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET' } })
  const refused = await call({ method: 'GET', url: '/v1/pets', key: null })
  const served = await call({ method: 'GET', url: '/v1/pets' })
  clock.set(Date.parse('2026-12-02T00:00:00Z'))
  const retired = await call({ method: 'GET', url: '/v1/pets/1' })
  assert.deepEqual(
    [preflight.statusCode, refused.statusCode, served.statusCode, retired.statusCode],
    [204, 401, 200, 410]
  )
  const lines = log.lines()
  for (const res of [preflight, refused, served, retired]) {
    const mine = lines.filter((l) => l.reqId === res.headers['request-id'])
    assert.equal(mine.length, 1, `${res.statusCode}: one line, not ${JSON.stringify(mine)}`)
    assert.equal(mine[0]!.statusCode, res.statusCode)
  }
  assert.deepEqual(lines.filter((l) => l.level >= 40), [], 'no warning or error')
})
