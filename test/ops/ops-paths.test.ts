// The operator paths spelled with a trailing slash (issue 35, loose end 1): the router matches
// none of them, so the answer is 404 not_found, never a 405 that refuses GET while its Allow
// header offers GET.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

test('GET /metrics/, /healthz/ and /readyz/ answer 404 not_found without an Allow header; the paths themselves still answer 200', async (t) => {
  // Catches: the 405 handler matching a declared path with an optional trailing slash.
  const { app } = await buildTestApp(t)
  for (const path of ['/metrics', '/healthz', '/readyz']) {
    assert.equal((await app.inject({ method: 'GET', url: path })).statusCode, 200, path)
    const res = await app.inject({ method: 'GET', url: `${path}/` })
    const body = res.json() as { code: string; message: string; status: number }
    assert.deepEqual(
      { status: res.statusCode, code: body.code, bodyStatus: body.status, allow: res.headers.allow },
      { status: 404, code: 'not_found', bodyStatus: 404, allow: undefined },
      `${path}/`
    )
    assert.equal(body.message, `no operation at GET ${path}/; see /openapi.json`)
  }
})

test('POST /metrics still answers 405 method_not_allowed with the Allow header of the path', async (t) => {
  // Catches: a fix that made every 405 a 404.
  const { app } = await buildTestApp(t)
  const res = await app.inject({ method: 'POST', url: '/metrics' })
  assert.equal(res.statusCode, 405)
  assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS')
  assert.equal((res.json() as { message: string }).message, 'POST is not allowed on /metrics; allowed: GET, HEAD, OPTIONS')
})
