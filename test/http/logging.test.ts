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

test('request logs are JSON with the request id and the key id on every line once authenticated, and never the key', async (t) => {
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
  for (const [res, keyId] of [[a, viaHeader.id], [b, viaBearer.id], [c, viaHeader.id]] as const) {
    const mine = of(res)
    assert.ok(mine.length >= 2, 'incoming request and request completed, at least')
    const completed = mine.find((l) => l.msg === 'request completed')
    assert.equal(completed?.keyId, keyId, 'the request completed line names the key id')
    // The "incoming request" line is written before the key is read; every line after it names the key.
    for (const line of mine.filter((l) => l.msg !== 'incoming request')) assert.equal(line.keyId, keyId, JSON.stringify(line))
  }
  assert.ok(of(c).some((l) => l.msg?.includes('needs the staff role') === true && l.keyId === viaHeader.id))
  assert.ok(of(d).length >= 2)
  assert.ok(of(d).every((l) => l.keyId === undefined), 'an unknown key has no id')

  const text = log.text()
  for (const key of [...Object.values(keys), viaHeader.key, viaBearer.key, unknownKey]) assert.ok(!text.includes(key), 'a key reached the log')
  assert.doesNotMatch(text, /psk_/)
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
    const res = await call(i % 2 === 0 ? { method: 'GET', url: '/v1/pets', key } : { method: 'GET', url: '/v1/pets', key: null, headers: { authorization: `Bearer ${key}` } })
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
