// src/routing/route-config.ts reads the matched route through Fastify's private `fastify.context`
// symbol rather than the public `request.routeOptions` (a new object on every read). Fastify does
// not promise that symbol: these tests fail, naming it, when a release renames it or holds
// something else under it, and show that the fallback to `request.routeOptions` answers the same.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify, { type FastifyRequest } from 'fastify'
import { buildTestApp } from '../helpers/app.ts'
import { routeAnswers } from '../helpers/route-answers.ts'
import {
  forceRouteContextFallback, routeContextFallback, routeContextOf, type RouteContext
} from '../../src/routing/route-config.ts'

/** The failure message: the internal, the file that relies on it, and what to do. */
function alarm (version: string, what: string): string {
  return `Fastify ${version}: ${what}. src/routing/route-config.ts (routeContextOf) reads the matched route `
    + 'through this private symbol; its fallback, request.routeOptions, is in use: answers stay right, but '
    + 'every hook pays the getter (docs/performance-history.md, "request.routeOptions"). Find the new key '
    + 'and re-measure, or keep the fallback.'
}

const contextSymbol = (request: FastifyRequest): symbol | undefined =>
  Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context')

/** What each request of a bare Fastify app shows of its context, read by `inspect` in an onRequest hook. */
async function inspectRequests<T> (inspect: (request: FastifyRequest) => T): Promise<{ version: string; seen: T[] }> {
  const app = Fastify()
  const seen: T[] = []
  app.addHook('onRequest', async (request) => { seen.push(inspect(request)) })
  app.get('/a', { config: { role: 'staff' }, schema: { summary: 'a' } }, async () => ({}))
  await app.inject({ method: 'GET', url: '/a' })
  await app.inject({ method: 'GET', url: '/nowhere' })
  await app.close()
  return { version: app.version, seen }
}

test('Fastify\'s private fastify.context is on every request, with the route\'s config and schema: routeContextOf reads it', async (t) => {
  t.after(() => { forceRouteContextFallback(false) })
  forceRouteContextFallback(false)
  const { version, seen } = await inspectRequests((request) => {
    const symbol = contextSymbol(request)
    const context = symbol === undefined ? undefined : (request as unknown as Record<symbol, RouteContext>)[symbol]
    return { request, symbol, context, read: routeContextOf(request), options: request.routeOptions }
  })
  // assert.ok on identities: a failed equal keeps both objects, and the reporter would print Fastify's whole server.
  const fail = (what: string): string => alarm(version, what)
  for (const { request, symbol, context, read, options } of seen) {
    assert.notEqual(symbol, undefined, fail(`a request (${request.url}) has no own symbol described fastify.context`))
    assert.ok(context?.config === options.config, fail('fastify.context holds not the config of request.routeOptions'))
    assert.ok(context?.schema === options.schema, fail('fastify.context holds not the schema of request.routeOptions'))
    assert.ok(read === context, fail(`routeContextOf did not read fastify.context (${String(routeContextFallback())})`))
  }
  const route = seen[0]!.context?.config as Record<string, unknown>
  const declared = { role: route.role, url: route.url, method: route.method }
  assert.deepEqual(declared, { role: 'staff', url: '/a', method: 'GET' }, fail('a route\'s config lacks its own, url or method'))
  const reason = String(routeContextFallback())
  assert.equal(routeContextFallback(), null, fail(`the first request chose the fallback: ${reason}`))
})

test('the real app reads the route through fastify.context: no fallback after its requests', async (t) => {
  t.after(() => { forceRouteContextFallback(false) })
  forceRouteContextFallback(false)
  const { call, app } = await buildTestApp(t)
  assert.equal((await call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
  const reason = String(routeContextFallback())
  assert.equal(routeContextFallback(), null, alarm(app.version, `the app's first request chose the fallback: ${reason}`))
})

test('with fastify.context missing from a request, routeContextOf reads request.routeOptions from then on', async (t) => {
  t.after(() => { forceRouteContextFallback(false) })
  forceRouteContextFallback(false)
  // The first request routeContextOf sees settles the symbol: here, one with no symbol at all.
  const config = { url: '/x', method: 'GET' }
  const schema = { summary: 'x' }
  const bare = { routeOptions: { config, schema } } as unknown as FastifyRequest
  assert.deepEqual(routeContextOf(bare), { config, schema })
  assert.match(String(routeContextFallback()), /no own symbol described fastify\.context/)
  // A real request is then read through the public getter: the same config, not the symbol's context.
  const { seen } = await inspectRequests((request) => {
    const symbol = contextSymbol(request)
    const context = symbol === undefined ? undefined : (request as unknown as Record<symbol, unknown>)[symbol]
    return { read: routeContextOf(request), options: request.routeOptions, context }
  })
  for (const { read, options, context } of seen) {
    assert.ok(read.config === options.config, 'the config of request.routeOptions')
    assert.ok(read.schema === options.schema, 'the schema of request.routeOptions')
    assert.ok(read !== context, 'not the value under fastify.context')
  }
})

test('on the fallback (request.routeOptions) every answer is the same: status, headers, body, metrics', async (t) => {
  t.after(() => { forceRouteContextFallback(false) })
  forceRouteContextFallback(true)
  const fallback = await routeAnswers(t)
  forceRouteContextFallback(false)
  const fast = await routeAnswers(t)
  assert.equal(routeContextFallback(), null)
  assert.deepEqual(fallback, fast)
})
