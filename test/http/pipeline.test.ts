// The one pipeline step (src/http/pipeline.ts): every route runs the one request step and the one
// response step and no other hook of the pipeline's, reads run no preHandler and no preParsing,
// and only the routes that write run the audit log's actor. A hook added beside the step (a
// second request path), a read paying for the actor, or a guard left as a hook of its own fails.
// Each route's plan is kept on the config object Fastify makes per route, which Fastify does not
// promise: the last tests fail, naming it, when that object changes, and show that the fallback
// (a map by method and url) answers the same.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { buildTestApp } from '../helpers/app.ts'
import { routeAnswers } from '../helpers/route-answers.ts'
import { forcePlanFallback, planFallback } from '../../src/http/pipeline.ts'
import { routeContextOf } from '../../src/routing/route-config.ts'

interface RouteHooks { route: string; hooks: Map<string, string[]> }

/** Fastify's route tree with hooks (printRoutes), read back as each route's hooks by kind. */
function routesWithHooks (tree: string): RouteHooks[] {
  const routes: RouteHooks[] = []
  const path: string[] = []
  for (const line of tree.split('\n')) {
    const hook = /• \((\w+)\) (\[.*\])$/.exec(line)
    if (hook !== null) {
      routes.at(-1)!.hooks.set(hook[1]!, JSON.parse(hook[2]!) as string[])
      continue
    }
    const route = /^([│ ]*)(?:[├└]── )?(\S*) \(([A-Z, ]+)\)$/.exec(line)
    if (route === null) continue
    const depth = Math.floor(route[1]!.length / 4)
    path.length = depth
    path[depth] = route[2]!
    routes.push({ route: `${route[3]} ${path.join('')}`, hooks: new Map() })
  }
  return routes
}

test('every route runs the one request step and the one response step; only writes run the actor, no read a preHandler or a preParsing hook', async (t) => {
  const { app } = await buildTestApp(t)
  const routes = routesWithHooks(app.printRoutes({ includeHooks: true, commonPrefix: false }))
  assert.ok(routes.length >= 60, `the routes were read (${routes.length})`)
  for (const { route, hooks } of routes) {
    const reads = /^(GET|HEAD|OPTIONS)(, (GET|HEAD|OPTIONS))*\s/.test(route)
    // The console and the portal add a hook of their own (their CSP) for their pages.
    const ownOnRequest = /^[A-Z, ]+ \/(console|portal)/.test(route) ? 1 : 0
    const onRequest = hooks.get('onRequest') ?? []
    assert.equal(onRequest[0], 'requestStep()', `${route}: the request step is its first onRequest hook`)
    assert.equal(onRequest.length, 1 + ownOnRequest, `${route}: onRequest hooks ${JSON.stringify(onRequest)}`)
    assert.deepEqual(hooks.get('onResponse'), ['responseStep()'], `${route}: onResponse hooks`)
    assert.equal(hooks.get('preParsing'), undefined, `${route}: no preParsing hook (the body guard is in the step)`)
    if (reads) assert.equal(hooks.get('preHandler'), undefined, `${route}: a read runs no preHandler`)
    else assert.deepEqual(hooks.get('preHandler'), ['actorStep()'], `${route}: a write runs the actor, once`)
  }
})

/** The failure message: the internal, the file that relies on it, and what to do. */
function planAlarm (version: string, what: string): string {
  return `Fastify ${version}: ${what}. src/http/pipeline.ts keeps each route's plan under a key of its own on `
    + 'the config object Fastify makes per route (PLAN), relying on one object per route, the same on every '
    + 'request and open to a new key. Make planShapeProblem see this, so that the fallback (a map by method '
    + 'and url: right, slower) is in use, and re-measure (docs/performance-history.md); or find the new object.'
}

test('Fastify makes one config object per route, the same on each of its requests and open to our key: the plan\'s home', async () => {
  const app = Fastify()
  const KEY = Symbol('test.plan')
  const seen: Array<{ config: Record<symbol, unknown>; kept: unknown; open: boolean }> = []
  app.addHook('onRequest', async (request) => {
    const config = routeContextOf(request).config as Record<symbol, unknown>
    seen.push({ config, kept: config[KEY], open: Object.isExtensible(config) })
    config[KEY] ??= request.url
  })
  app.get('/a', { config: { role: 'staff' } }, async () => ({}))
  app.get('/b', async () => ({}))
  for (const url of ['/a', '/b', '/a', '/b', '/nowhere', '/elsewhere']) await app.inject({ method: 'GET', url })
  await app.close()
  const fail = (what: string): string => planAlarm(app.version, what)
  const [a, b, aAgain, bAgain, missed, missedAgain] = seen.map((s) => s.config)
  // assert.ok on identities: a failed equal keeps both objects, and the reporter would print them whole.
  assert.ok(seen.every((s) => s.open), fail('a route\'s config object takes no new key'))
  assert.ok(a === aAgain && b === bAgain && missed === missedAgain, fail('a route\'s config object is new per request'))
  assert.ok(a !== b && a !== missed && b !== missed, fail('two routes share one config object'))
  const kept = [seen[2]?.kept, seen[3]?.kept, seen[5]?.kept]
  assert.deepEqual(kept, ['/a', '/b', '/nowhere'], fail('a key set on a route\'s config is gone at its next request'))
})

test('the real app keeps its plans on the routes\' config objects: no fallback after its requests', async (t) => {
  t.after(() => { forcePlanFallback(false) })
  forcePlanFallback(false)
  const { app, call } = await buildTestApp(t)
  assert.equal((await call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
  const reason = String(planFallback())
  assert.equal(planFallback(), null, planAlarm(app.version, `the app's first request chose the fallback: ${reason}`))
})

test('on the fallback (plans in a map by method and url) every answer is the same: status, headers, body', async (t) => {
  t.after(() => { forcePlanFallback(false) })
  forcePlanFallback(true)
  const fallback = await routeAnswers(t)
  assert.equal(planFallback(), 'forced by a test')
  forcePlanFallback(false)
  const fast = await routeAnswers(t)
  assert.equal(planFallback(), null)
  assert.deepEqual(fallback, fast)
})
