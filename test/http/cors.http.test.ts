// CORS as the product answers it (http/cors.ts): the exact CORS headers and status of simple
// requests, preflights, refusals and /metrics, with any origin allowed and with a list. The
// expected values are what @fastify/cors answered before http/cors.ts replaced it.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

const CORS = ['vary', 'access-control-allow-origin', 'access-control-expose-headers', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-max-age', 'content-length']

async function matrix (t: TestContext, env: Record<string, string>): Promise<Record<string, unknown>> {
  const { call } = await buildTestApp(t, { env })
  const cases: Record<string, Parameters<typeof call>[0]> = {
    'GET no origin': { method: 'GET', url: '/v1/pets' },
    'GET allowed origin': { method: 'GET', url: '/v1/pets', headers: { origin: 'https://a.example' } },
    'GET other origin': { method: 'GET', url: '/v1/pets', headers: { origin: 'https://evil.example' } },
    'GET 404': { method: 'GET', url: '/v1/pets/99', headers: { origin: 'https://a.example' } },
    'GET 401': { method: 'GET', url: '/v1/pets', key: null, headers: { origin: 'https://a.example' } },
    'HEAD pet list': { method: 'HEAD', url: '/v1/pets', headers: { origin: 'https://a.example' } },
    'preflight allowed': { method: 'OPTIONS', url: '/v1/pets', key: null, headers: { origin: 'https://a.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key' } },
    'preflight other origin': { method: 'OPTIONS', url: '/v1/pets?x=1', key: null, headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' } },
    'OPTIONS bare': { method: 'OPTIONS', url: '/v1/orders', key: null },
    'GET /metrics': { method: 'GET', url: '/metrics', key: null, headers: { origin: 'https://a.example' } },
    'OPTIONS /metrics': { method: 'OPTIONS', url: '/metrics?x', key: null, headers: { origin: 'https://a.example', 'access-control-request-method': 'GET' } },
    'GET /healthz': { method: 'GET', url: '/healthz', key: null, headers: { origin: 'https://b.example' } }
  }
  const out: Record<string, unknown> = {}
  for (const [name, request] of Object.entries(cases)) {
    const res = await call(request)
    const headers: Record<string, unknown> = { status: res.statusCode }
    for (const h of CORS) {
      if (res.headers[h] !== undefined && (h !== 'content-length' || res.statusCode === 204)) headers[h] = res.headers[h]
    }
    out[name] = headers
  }
  return out
}

const EXPOSED = 'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, Retry-After, Request-Id, ETag, Location, Link, Deprecation, Sunset, Warning, Allow'
const PREFLIGHT = { 'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE', 'access-control-allow-headers': 'X-API-Key, Authorization, Content-Type, If-Match, Idempotency-Key, Request-Id', 'access-control-max-age': '600', 'content-length': '0' }

test('CORS with any origin: every answer to a request with an Origin outside /metrics allows *, a request without Origin gets only Vary, preflights are answered 204; a refusal of the access step carries none, /metrics only Vary', async (t) => {
  const any = { vary: 'Origin', 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSED }
  assert.deepEqual(await matrix(t, {}), {
    'GET no origin': { status: 200, vary: 'Origin' },
    'GET allowed origin': { status: 200, ...any },
    'GET other origin': { status: 200, ...any },
    'GET 404': { status: 404, ...any },
    'GET 401': { status: 401 },
    'HEAD pet list': { status: 200, ...any },
    'preflight allowed': { status: 204, ...any, ...PREFLIGHT },
    'preflight other origin': { status: 204, ...any, ...PREFLIGHT },
    'OPTIONS bare': { status: 204, ...any, ...PREFLIGHT },
    'GET /metrics': { status: 200, vary: 'Origin' },
    'OPTIONS /metrics': { status: 405, vary: 'Origin' },
    'GET /healthz': { status: 200, ...any }
  })
})

test('CORS with a list of origins: an origin of the list is echoed, any other gets no Allow-Origin (preflights still answered)', async (t) => {
  const exposed = { vary: 'Origin', 'access-control-expose-headers': EXPOSED }
  const a = { ...exposed, 'access-control-allow-origin': 'https://a.example' }
  assert.deepEqual(await matrix(t, { CORS_ORIGINS: 'https://a.example, https://b.example' }), {
    'GET no origin': { status: 200, vary: 'Origin' },
    'GET allowed origin': { status: 200, ...a },
    'GET other origin': { status: 200, ...exposed },
    'GET 404': { status: 404, ...a },
    'GET 401': { status: 401 },
    'HEAD pet list': { status: 200, ...a },
    'preflight allowed': { status: 204, ...a, ...PREFLIGHT },
    'preflight other origin': { status: 204, ...exposed, ...PREFLIGHT },
    'OPTIONS bare': { status: 204, ...exposed, ...PREFLIGHT },
    'GET /metrics': { status: 200, vary: 'Origin' },
    'OPTIONS /metrics': { status: 405, vary: 'Origin' },
    'GET /healthz': { status: 200, ...exposed, 'access-control-allow-origin': 'https://b.example' }
  })
})
