// The answers of one fixed sequence of requests that together read every part of a route's
// declaration the pipeline uses: role (401, 403), scope, the write's actor, the lifecycle headers
// of a deprecated operation, no-store under /v1/admin, a free operation, CORS and the paths it
// leaves out, a body sent to an operation that takes none, no route (404) and another method
// (405), and the metrics series of each. The tests of the private framework internals run it on
// the fast path and on the fallback and compare: the fallback must answer the same.
import type { TestContext } from 'node:test'
import type { InjectOptions } from 'fastify'
import { buildTestApp } from './app.ts'

export interface RouteAnswer {
  request: string
  status: number
  headers: Record<string, unknown>
  body: string
}

const ORIGIN = { origin: 'https://shop.example' }

const SEQUENCE: Array<InjectOptions & { key?: null; role?: 'customer' | 'staff' | 'admin' }> = [
  { method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' }, role: 'staff' },
  { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 }, role: 'staff' },
  { method: 'GET', url: '/v1/pets/1', headers: ORIGIN },
  { method: 'GET', url: '/v1/pets/1', key: null },
  { method: 'GET', url: '/v1/pets?limit=5', role: 'customer' },
  { method: 'HEAD', url: '/v1/pets', role: 'customer' },
  { method: 'POST', url: '/v1/categories', payload: { name: 'Cats' }, role: 'customer' },
  { method: 'GET', url: '/v1/admin/keys', role: 'customer' },
  { method: 'GET', url: '/v1/rate_limit', role: 'customer' },
  { method: 'GET', url: '/v1/pets', payload: 'x', headers: { 'content-type': 'text/plain' } },
  { method: 'OPTIONS', url: '/v1/pets', key: null, headers: { ...ORIGIN, 'access-control-request-method': 'POST' } },
  { method: 'GET', url: '/v1/nowhere', headers: ORIGIN },
  { method: 'DELETE', url: '/v1/rate_limit' },
  { method: 'GET', url: '/metrics', key: null, headers: ORIGIN }
]

/**
 * The answers of SEQUENCE on a new test app: status, headers and body, less what differs by
 * design (the request id, the Date, the process metrics of /metrics); last, the app's request
 * counts and duration counts, one sample per series.
 */
export async function routeAnswers (t: TestContext): Promise<RouteAnswer[]> {
  const { call } = await buildTestApp(t)
  const answers: RouteAnswer[] = []
  for (const request of SEQUENCE) {
    const response = await call(request)
    const { 'request-id': _id, date: _date, ...headers } = response.headers
    const scrape = request.url === '/metrics'
    if (scrape) delete headers['content-length']
    answers.push({
      request: `${String(request.method)} ${String(request.url)} ${request.role ?? ''}`,
      status: response.statusCode,
      headers,
      body: scrape ? '' : response.body.replace(/"requestId":"[^"]*"/, '"requestId":"-"')
    })
  }
  const metrics = await call({ method: 'GET', url: '/metrics', key: null })
  // A plan made again per request would make a series per request: the duration's counts repeat.
  const samples = metrics.body.split('\n')
    .filter((line) => line.startsWith('http_requests_total{') || line.startsWith('http_request_duration_seconds_count{'))
  answers.push({ request: '/metrics', status: metrics.statusCode, headers: {}, body: samples.sort().join('\n') })
  return answers
}
